/* Several threads record through one shared handle, the generic call and
 * transfer_completed while another thread flushes and reads the stats; the
 * main thread destroys nothing until every recorder is joined. The books
 * must balance exactly and the ring (checked by the Rust test) must hold
 * every event, each thread's in order.
 *
 * Usage: threads <ring directory>. Exit 0 when every check passed. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nixl_telemetry.h"
#include "check.h"

#define THREADS 4
#define ITERATIONS 2000
#define EVENTS_PER_ITERATION 5 /* handle, generic, and a transfer's three */

static nixl_telemetry_t *telemetry;
static nixl_telemetry_handle_t *shared_handle;
static volatile int recorders_done = 0;
static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static int failures_in_threads = 0;

static void *recorder(void *arg) {
    uint64_t id = (uint64_t)(uintptr_t)arg;
    int failed = 0;
    for (uint64_t i = 0; i < ITERATIONS; i++) {
        uint64_t value = (id << 32) | i;
        failed += nixl_telemetry_handle_record(shared_handle, value) != NIXL_TELEMETRY_OK;
        failed += nixl_telemetry_record(telemetry, NIXL_TELEMETRY_CATEGORY_CUSTOM, "thread_generic", value) !=
                  NIXL_TELEMETRY_OK;
        failed += nixl_telemetry_transfer_completed(telemetry, i, NIXL_TELEMETRY_DIRECTION_WRITE, value) !=
                  NIXL_TELEMETRY_OK;
    }
    pthread_mutex_lock(&done_lock);
    failures_in_threads += failed;
    recorders_done++;
    pthread_mutex_unlock(&done_lock);
    return NULL;
}

static void *observer(void *arg) {
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&done_lock);
        int done = recorders_done;
        pthread_mutex_unlock(&done_lock);
        if (done == THREADS) {
            return NULL;
        }
        nixl_telemetry_stats_t stats;
        memset(&stats, 0, sizeof stats);
        stats.struct_size = sizeof stats;
        if (nixl_telemetry_flush(telemetry) != NIXL_TELEMETRY_OK ||
            nixl_telemetry_stats(telemetry, &stats) != NIXL_TELEMETRY_OK) {
            pthread_mutex_lock(&done_lock);
            failures_in_threads++;
            pthread_mutex_unlock(&done_lock);
        }
    }
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s <ring directory>\n", argv[0]);
        return 2;
    }
    char err[512];
    nixl_telemetry_settings_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    s.enabled = 1;
    s.buffer_size = 65536; /* the ring holds all 40,000 events */
    s.run_interval_ms = 5;
    s.ring_directory = argv[1];
    if (nixl_telemetry_create("c-threads", &s, &telemetry, err, sizeof err) != NIXL_TELEMETRY_OK) {
        fprintf(stderr, "create: %s\n", err);
        return 1;
    }
    CHECK_EQ(nixl_telemetry_handle_create(telemetry, NIXL_TELEMETRY_CATEGORY_BACKEND, "thread_handle",
                                          &shared_handle, err, sizeof err),
             NIXL_TELEMETRY_OK);

    pthread_t threads[THREADS], watcher;
    CHECK_EQ(pthread_create(&watcher, NULL, observer, NULL), 0);
    for (uintptr_t t = 0; t < THREADS; t++) {
        CHECK_EQ(pthread_create(&threads[t], NULL, recorder, (void *)t), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        CHECK_EQ(pthread_join(threads[t], NULL), 0);
    }
    CHECK_EQ(pthread_join(watcher, NULL), 0);
    CHECK_EQ(failures_in_threads, 0);

    CHECK_EQ(nixl_telemetry_flush(telemetry), NIXL_TELEMETRY_OK);
    nixl_telemetry_stats_t stats;
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    CHECK_EQ(nixl_telemetry_stats(telemetry, &stats), NIXL_TELEMETRY_OK);
    const long long total = (long long)THREADS * ITERATIONS * EVENTS_PER_ITERATION;
    CHECK_EQ(stats.recorded, total);
    CHECK_EQ(stats.delivered, total);
    CHECK_EQ(stats.dropped_total, 0);
    CHECK_EQ(stats.pending, 0);
    CHECK_EQ(nixl_telemetry_handle_destroy(shared_handle), NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_destroy(telemetry), NIXL_TELEMETRY_OK);
    if (check_failures != 0) {
        fprintf(stderr, "%d check(s) failed\n", check_failures);
        return 1;
    }
    printf("threads: %lld events from %d threads\n", total, THREADS);
    return 0;
}
