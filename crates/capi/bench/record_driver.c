/* The C side of benches/c_record.rs: times the C API's handle record and the
 * reference design in C (a pthread_mutex-protected staging vector), one
 * repeat per command, so the Rust bench can interleave them with the Rust
 * fast path in one run.
 *
 * Commands on stdin, one per line; each answers one line on stdout:
 *   c1 <ops>      the C handle record on 1 thread          -> "<ns per op>"
 *   c2 <ops>      the C handle record on 2 threads at once -> "<ns per op of the slower thread> <overlap>"
 *   mutex2 <ops>  the mutex-protected vector, 2 threads    -> same
 * (overlap: the time both loops ran at once over the longer loop; the
 * machine may not run the two threads at the same time)
 *   stats         -> "<recorded> <delivered> <dropped>" of the telemetry
 *   quit
 * Between repeats (outside the timing) the telemetry is flushed and the
 * vector drained, so no repeat ever takes a drop path.
 *
 * Build: cc -O2 -pthread record_driver.c -lnixl_telemetry */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nixl_telemetry.h"

/* Events each staging queue and the vector hold; a repeat records at most half. */
#define STAGING_EVENTS 16384
#define MAX_OPS (STAGING_EVENTS / 2)

/* The 56-byte event of the ring and the staging queues. */
typedef struct {
    uint64_t timestamp_us;
    int32_t category;
    char name[32];
    uint32_t reserved;
    uint64_t value;
} event_t;

/* The reference design: one vector of events behind one mutex, bounded. The
 * clock is telemetry's cheap clock, read outside the lock, so the comparison
 * isolates the staging structure. */
typedef struct {
    pthread_mutex_t lock;
    event_t *events;
    size_t len, capacity;
    uint64_t dropped;
} mutex_staging_t;

static nixl_telemetry_t *telemetry;
static nixl_telemetry_handle_t *handle;
static mutex_staging_t staging;
static const char NAME[32] = "agent_xfer_time";

static inline void mutex_record(mutex_staging_t *s, int32_t category, const char *name, uint64_t value) {
    event_t e;
    e.timestamp_us = nixl_telemetry_now_us();
    e.category = category;
    memcpy(e.name, name, sizeof e.name);
    e.reserved = 0;
    e.value = value;
    pthread_mutex_lock(&s->lock);
    if (s->len < s->capacity) {
        s->events[s->len++] = e;
    } else {
        s->dropped++;
    }
    pthread_mutex_unlock(&s->lock);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

enum body { BODY_HANDLE, BODY_MUTEX };

static uint64_t run_body(enum body body, uint64_t ops) {
    uint64_t start = now_ns();
    if (body == BODY_HANDLE) {
        for (uint64_t i = 0; i < ops; i++) {
            nixl_telemetry_handle_record(handle, i);
        }
    } else {
        for (uint64_t i = 0; i < ops; i++) {
            mutex_record(&staging, NIXL_TELEMETRY_CATEGORY_PERFORMANCE, NAME, i);
        }
    }
    return now_ns() - start;
}

/* Two persistent workers (each keeps its staging queue across repeats): they
 * wait at `start`, spin until both are there, run the body, record when they
 * ran and wait at `done`. */
static pthread_barrier_t start, done;
static atomic_int arrived;
static enum body worker_body;
static uint64_t worker_ops, worker_begin[2], worker_end[2];
static int stopping;

static void *worker(void *arg) {
    int id = (int)(intptr_t)arg;
    for (;;) {
        pthread_barrier_wait(&start);
        if (stopping) {
            return NULL;
        }
        atomic_fetch_add(&arrived, 1);
        while (atomic_load(&arrived) < 2) {
        }
        worker_begin[id] = now_ns();
        run_body(worker_body, worker_ops);
        worker_end[id] = now_ns();
        pthread_barrier_wait(&done);
    }
}

static double two_threads(enum body body, uint64_t ops, double *overlap) {
    worker_body = body;
    worker_ops = ops;
    atomic_store(&arrived, 0);
    pthread_barrier_wait(&start);
    pthread_barrier_wait(&done);
    uint64_t d0 = worker_end[0] - worker_begin[0], d1 = worker_end[1] - worker_begin[1];
    uint64_t slower = d0 > d1 ? d0 : d1;
    uint64_t first_end = worker_end[0] < worker_end[1] ? worker_end[0] : worker_end[1];
    uint64_t last_begin = worker_begin[0] > worker_begin[1] ? worker_begin[0] : worker_begin[1];
    *overlap = first_end > last_begin ? (double)(first_end - last_begin) / (double)slower : 0.0;
    return (double)slower / (double)ops;
}

static void between_repeats(void) {
    nixl_telemetry_flush(telemetry);
    pthread_mutex_lock(&staging.lock);
    staging.len = 0;
    pthread_mutex_unlock(&staging.lock);
}

int main(void) {
    char err[1024];
    nixl_telemetry_settings_t settings;
    memset(&settings, 0, sizeof settings);
    settings.struct_size = sizeof settings;
    settings.enabled = 1;
    settings.buffer_size = STAGING_EVENTS;
    settings.run_interval_ms = 1000; /* no flush thread inside a timed loop */
    settings.exporter = "nop";
    if (nixl_telemetry_create("bench-c", &settings, &telemetry, err, sizeof err) != NIXL_TELEMETRY_OK ||
        nixl_telemetry_handle_create(telemetry, NIXL_TELEMETRY_CATEGORY_PERFORMANCE, NAME, &handle, err,
                                     sizeof err) != NIXL_TELEMETRY_OK) {
        fprintf(stderr, "record_driver: %s\n", err);
        return 1;
    }
    pthread_mutex_init(&staging.lock, NULL);
    staging.capacity = STAGING_EVENTS;
    staging.events = calloc(STAGING_EVENTS, sizeof(event_t));
    if (staging.events == NULL) {
        fprintf(stderr, "record_driver: out of memory\n");
        return 1;
    }
    pthread_barrier_init(&start, NULL, 3);
    pthread_barrier_init(&done, NULL, 3);
    pthread_t workers[2];
    for (intptr_t i = 0; i < 2; i++) {
        pthread_create(&workers[i], NULL, worker, (void *)i);
    }

    char line[128], command[32];
    unsigned long long ops;
    setvbuf(stdout, NULL, _IOLBF, 0);
    while (fgets(line, sizeof line, stdin) != NULL) {
        int fields = sscanf(line, "%31s %llu", command, &ops);
        if (fields >= 1 && strcmp(command, "quit") == 0) {
            break;
        }
        if (fields >= 1 && strcmp(command, "stats") == 0) {
            nixl_telemetry_stats_t stats;
            memset(&stats, 0, sizeof stats);
            stats.struct_size = sizeof stats;
            nixl_telemetry_flush(telemetry);
            nixl_telemetry_stats(telemetry, &stats);
            printf("%llu %llu %llu\n", (unsigned long long)stats.recorded, (unsigned long long)stats.delivered,
                   (unsigned long long)(stats.dropped_total + staging.dropped));
            continue;
        }
        if (fields != 2 || ops == 0 || ops > MAX_OPS) {
            printf("error: expected 'c1|c2|mutex2 <ops 1..%d>', 'stats' or 'quit', got %s", MAX_OPS, line);
            continue;
        }
        double ns, overlap = 1.0;
        if (strcmp(command, "c1") == 0) {
            ns = (double)run_body(BODY_HANDLE, ops) / (double)ops;
        } else if (strcmp(command, "c2") == 0) {
            ns = two_threads(BODY_HANDLE, ops, &overlap);
        } else if (strcmp(command, "mutex2") == 0) {
            ns = two_threads(BODY_MUTEX, ops, &overlap);
        } else {
            printf("error: unknown command %s\n", command);
            continue;
        }
        between_repeats();
        printf("%.3f %.3f\n", ns, overlap);
    }

    stopping = 1;
    pthread_barrier_wait(&start);
    for (int i = 0; i < 2; i++) {
        pthread_join(workers[i], NULL);
    }
    nixl_telemetry_handle_destroy(handle);
    nixl_telemetry_destroy(telemetry);
    free(staging.events);
    return 0;
}
