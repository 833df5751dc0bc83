// pthread_cond_clockwait (glibc 2.30 and later) for the adapters built to run
// on glibc 2.28 (build.rs, NIXL_ADAPTERS_GLIBC_2_28_LINKER). libstdc++'s
// std::condition_variable::wait_for calls it with CLOCK_MONOTONIC; here the
// deadline is carried over to CLOCK_REALTIME and waited for with
// pthread_cond_timedwait, which glibc 2.28 has. A wall-clock step during one
// wait lengthens or shortens that wait alone. The adapters' version script keeps
// this definition inside the library: NIXL and the rest of the process never
// see it.

#include <pthread.h>
#include <time.h>

#include <cerrno>

extern "C" int pthread_cond_clockwait(pthread_cond_t *cond, pthread_mutex_t *mutex, clockid_t clock,
                                      const struct timespec *deadline) {
    if (clock == CLOCK_REALTIME) {
        return pthread_cond_timedwait(cond, mutex, deadline);
    }
    if (clock != CLOCK_MONOTONIC) {
        return EINVAL;
    }
    struct timespec now_monotonic;
    struct timespec now_realtime;
    clock_gettime(CLOCK_MONOTONIC, &now_monotonic);
    clock_gettime(CLOCK_REALTIME, &now_realtime);
    long long left_ns = (static_cast<long long>(deadline->tv_sec) - now_monotonic.tv_sec) * 1000000000LL +
                        (deadline->tv_nsec - now_monotonic.tv_nsec);
    if (left_ns < 0) {
        left_ns = 0;
    }
    long long until_ns = static_cast<long long>(now_realtime.tv_nsec) + left_ns % 1000000000LL;
    struct timespec until;
    until.tv_sec = now_realtime.tv_sec + static_cast<time_t>(left_ns / 1000000000LL + until_ns / 1000000000LL);
    until.tv_nsec = static_cast<long>(until_ns % 1000000000LL);
    return pthread_cond_timedwait(cond, mutex, &until);
}
