/* fork() without exec while two threads record into telemetry flushed every
 * millisecond: each of 30 children calls one function of the C API under
 * alarm(5). On the objects inherited from the parent every call must return
 * at once and do nothing (the parent's flush thread does not exist in the
 * child and its locks may be held forever); telemetry the child creates
 * itself must work. A child that hangs is killed by SIGALRM and reported.
 *
 * Usage: fork <ring directory> [_exit]. Exit 0 when every check passed; the
 * rings of the children that created telemetry are checked by the Rust test.
 * Every third round of children leaves through exit() (running exit-time
 * destructors), the others through _exit(); with "_exit", all of them do:
 * for leak-checking runs, where a child's exit-time check would report the
 * inherited objects, which a child keeps on purpose. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nixl_telemetry.h"
#include "check.h"

#define FORKS 30
#define CHILD_EVENTS 100

static nixl_telemetry_t *telemetry;
static nixl_telemetry_handle_t *handle;
static atomic_int stop_recording;

static void *recorder(void *arg) {
    uint64_t id = (uint64_t)(uintptr_t)arg;
    for (uint64_t i = 0; !atomic_load(&stop_recording); i++) {
        nixl_telemetry_handle_record(handle, (id << 32) | i);
        nixl_telemetry_record(telemetry, NIXL_TELEMETRY_CATEGORY_CUSTOM, "fork_generic", i);
        nixl_telemetry_transfer_completed(telemetry, 1, NIXL_TELEMETRY_DIRECTION_WRITE, i);
    }
    return NULL;
}

/* What each child calls, in turn. */
enum child_call {
    CALL_STATS,
    CALL_FLUSH,
    CALL_DESTROY,
    CALL_RECORD,
    CALL_HANDLE_RECORD,
    CALL_HANDLE_DESTROY,
    CALL_HANDLE_CREATE,
    CALL_IS_ENABLED,
    CALL_DESTROY_THEN_CREATE,
    CALL_CREATE,
    CALLS
};

static const char *const call_names[CALLS] = {
    "stats",         "flush",          "destroy",         "record (every recording function)",
    "handle_record", "handle_destroy", "handle_create",   "is_enabled",
    "destroy, then create", "create",
};

static nixl_telemetry_settings_t settings_for(const char *ring_dir) {
    nixl_telemetry_settings_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    s.enabled = 1;
    s.buffer_size = 4096;
    s.run_interval_ms = 1;
    s.ring_directory = ring_dir;
    return s;
}

/* The child's own telemetry: CHILD_EVENTS events through a handle and the
 * generic call, flushed, counted, destroyed. */
static void own_telemetry(const char *ring_dir, int index) {
    char agent[64], err[256];
    snprintf(agent, sizeof agent, "c-fork-child-%d", index);
    nixl_telemetry_settings_t s = settings_for(ring_dir);
    nixl_telemetry_t *mine = NULL;
    CHECK_EQ(nixl_telemetry_create(agent, &s, &mine, err, sizeof err), NIXL_TELEMETRY_OK);
    if (mine == NULL) {
        fprintf(stderr, "child %d: create failed: %s\n", index, err);
        return;
    }
    nixl_telemetry_handle_t *h = NULL;
    CHECK_EQ(nixl_telemetry_handle_create(mine, NIXL_TELEMETRY_CATEGORY_CUSTOM, "child_handle", &h, err, sizeof err),
             NIXL_TELEMETRY_OK);
    for (uint64_t i = 0; i < CHILD_EVENTS / 2; i++) {
        CHECK_EQ(nixl_telemetry_handle_record(h, i), NIXL_TELEMETRY_OK);
        CHECK_EQ(nixl_telemetry_record(mine, NIXL_TELEMETRY_CATEGORY_CUSTOM, "child_generic", i), NIXL_TELEMETRY_OK);
    }
    CHECK_EQ(nixl_telemetry_flush(mine), NIXL_TELEMETRY_OK);
    nixl_telemetry_stats_t stats;
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    CHECK_EQ(nixl_telemetry_stats(mine, &stats), NIXL_TELEMETRY_OK);
    CHECK_EQ(stats.recorded, CHILD_EVENTS);
    CHECK_EQ(stats.delivered, CHILD_EVENTS);
    CHECK_EQ(stats.dropped_total, 0);
    CHECK_EQ(nixl_telemetry_is_enabled(mine), 1);
    CHECK_EQ(nixl_telemetry_handle_destroy(h), NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_destroy(mine), NIXL_TELEMETRY_OK);
}

static void child(enum child_call call, const char *ring_dir, int index) {
    char err[256];
    nixl_telemetry_stats_t stats;
    nixl_telemetry_handle_t *h = NULL;
    switch (call) {
    case CALL_STATS:
        memset(&stats, 0xAA, sizeof stats);
        stats.struct_size = sizeof stats;
        CHECK_EQ(nixl_telemetry_stats(telemetry, &stats), NIXL_TELEMETRY_OK);
        /* The parent's books are not the child's: all zeros. */
        CHECK_EQ(stats.struct_size, sizeof stats);
        CHECK_EQ(stats.recorded, 0);
        CHECK_EQ(stats.delivered, 0);
        CHECK_EQ(stats.pending, 0);
        CHECK_EQ(stats.dropped_format, 0);
        break;
    case CALL_FLUSH:
        CHECK_EQ(nixl_telemetry_flush(telemetry), NIXL_TELEMETRY_OK);
        break;
    case CALL_DESTROY:
        CHECK_EQ(nixl_telemetry_destroy(telemetry), NIXL_TELEMETRY_OK);
        break;
    case CALL_RECORD:
        CHECK_EQ(nixl_telemetry_record(telemetry, NIXL_TELEMETRY_CATEGORY_CUSTOM, "in_child", 1), NIXL_TELEMETRY_OK);
        CHECK_EQ(nixl_telemetry_transfer_completed(telemetry, 1, NIXL_TELEMETRY_DIRECTION_READ, 2), NIXL_TELEMETRY_OK);
        CHECK_EQ(nixl_telemetry_transfer_completed_at(telemetry, 1, 1, NIXL_TELEMETRY_DIRECTION_READ, 2),
                 NIXL_TELEMETRY_OK);
        CHECK_EQ(nixl_telemetry_post_time(telemetry, 3), NIXL_TELEMETRY_OK);
        CHECK_EQ(nixl_telemetry_post_time_at(telemetry, 1, 3), NIXL_TELEMETRY_OK);
        CHECK_EQ(nixl_telemetry_memory_registered(telemetry, 4), NIXL_TELEMETRY_OK);
        CHECK_EQ(nixl_telemetry_memory_deregistered(telemetry, 4), NIXL_TELEMETRY_OK);
        CHECK_EQ(nixl_telemetry_error(telemetry, "NIXL_ERR_BACKEND"), NIXL_TELEMETRY_OK);
        CHECK_EQ(nixl_telemetry_backend_event(telemetry, "in_child", 5), NIXL_TELEMETRY_OK);
        CHECK_EQ(nixl_telemetry_connection_event(telemetry, "in_child", 6), NIXL_TELEMETRY_OK);
        /* Bad input is still refused as in the parent. */
        CHECK_EQ(nixl_telemetry_record(telemetry, 99, "in_child", 1), NIXL_TELEMETRY_ERR_INVALID_CATEGORY);
        break;
    case CALL_HANDLE_RECORD:
        CHECK_EQ(nixl_telemetry_handle_record(handle, 1), NIXL_TELEMETRY_OK);
        CHECK_EQ(nixl_telemetry_handle_record_at(handle, 1, 2), NIXL_TELEMETRY_OK);
        break;
    case CALL_HANDLE_DESTROY:
        CHECK_EQ(nixl_telemetry_handle_destroy(handle), NIXL_TELEMETRY_OK);
        break;
    case CALL_HANDLE_CREATE:
        CHECK_EQ(nixl_telemetry_handle_create(telemetry, NIXL_TELEMETRY_CATEGORY_CUSTOM, "from_child", &h, err,
                                              sizeof err),
                 NIXL_TELEMETRY_OK);
        CHECK_TRUE(h != NULL);
        CHECK_EQ(nixl_telemetry_handle_record(h, 1), NIXL_TELEMETRY_OK);
        CHECK_EQ(nixl_telemetry_handle_destroy(h), NIXL_TELEMETRY_OK);
        break;
    case CALL_IS_ENABLED:
        CHECK_EQ(nixl_telemetry_is_enabled(telemetry), 0);
        break;
    case CALL_DESTROY_THEN_CREATE:
        CHECK_EQ(nixl_telemetry_handle_destroy(handle), NIXL_TELEMETRY_OK);
        CHECK_EQ(nixl_telemetry_destroy(telemetry), NIXL_TELEMETRY_OK);
        own_telemetry(ring_dir, index);
        break;
    case CALL_CREATE:
        own_telemetry(ring_dir, index);
        break;
    case CALLS:
        break;
    }
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "_exit") != 0)) {
        fprintf(stderr, "usage: %s <ring directory> [_exit]\n", argv[0]);
        return 2;
    }
    const char *ring_dir = argv[1];
    int always_quick_exit = argc == 3;
    char err[256];
    nixl_telemetry_settings_t s = settings_for(ring_dir);
    CHECK_EQ(nixl_telemetry_create("c-fork-parent", &s, &telemetry, err, sizeof err), NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_handle_create(telemetry, NIXL_TELEMETRY_CATEGORY_BACKEND, "fork_handle", &handle, err,
                                          sizeof err),
             NIXL_TELEMETRY_OK);
    if (telemetry == NULL || handle == NULL) {
        fprintf(stderr, "create failed: %s\n", err);
        return 1;
    }
    pthread_t threads[2];
    for (uintptr_t i = 0; i < 2; i++) {
        pthread_create(&threads[i], NULL, recorder, (void *)i);
    }
    /* Let the recorders and the flush thread get going. */
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);

    for (int i = 0; i < FORKS; i++) {
        enum child_call call = (enum child_call)(i % CALLS);
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) {
            check_failures = 0; /* the parent's count so far is not the child's */
            alarm(5);
            child(call, ring_dir, i);
            if (i / CALLS == 2 && !always_quick_exit) {
                exit(check_failures == 0 ? 0 : 1);
            }
            fflush(NULL);
            _exit(check_failures == 0 ? 0 : 1);
        }
        int status = 0;
        if (waitpid(pid, &status, 0) != pid) {
            perror("waitpid");
            return 1;
        }
        if (WIFSIGNALED(status)) {
            fprintf(stderr, "child %d (%s) was killed by signal %d%s\n", i, call_names[call], WTERMSIG(status),
                    WTERMSIG(status) == SIGALRM ? " after 5 s: it hung" : "");
            check_failures++;
        } else if (WEXITSTATUS(status) != 0) {
            fprintf(stderr, "child %d (%s) exited with %d\n", i, call_names[call], WEXITSTATUS(status));
            check_failures++;
        }
        struct timespec gap = {0, 2 * 1000 * 1000};
        nanosleep(&gap, NULL);
    }

    atomic_store(&stop_recording, 1);
    for (int i = 0; i < 2; i++) {
        pthread_join(threads[i], NULL);
    }
    /* The parent's telemetry is untouched by its children. */
    CHECK_EQ(nixl_telemetry_is_enabled(telemetry), 1);
    CHECK_EQ(nixl_telemetry_flush(telemetry), NIXL_TELEMETRY_OK);
    nixl_telemetry_stats_t stats;
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    CHECK_EQ(nixl_telemetry_stats(telemetry, &stats), NIXL_TELEMETRY_OK);
    CHECK_TRUE(stats.recorded > 0);
    CHECK_EQ(stats.pending, 0);
    CHECK_EQ(stats.recorded + stats.generated, stats.delivered + stats.dropped_total);
    CHECK_EQ(nixl_telemetry_handle_destroy(handle), NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_destroy(telemetry), NIXL_TELEMETRY_OK);
    if (check_failures == 0) {
        printf("all checks passed: %d children\n", FORKS);
    }
    return check_failures == 0 ? 0 : 1;
}
