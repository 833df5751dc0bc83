/*
 * nixl_telemetry.h - the C API of NIXL telemetry (version 1).
 *
 * Record transfer-engine events from C or C++ into the same collector the
 * Rust API uses: per-thread staging, a flush thread, one exporter (the
 * shared-memory ring `buffer`, `nop`, or a plug-in such as Prometheus or CSV).
 * Library: libnixl_telemetry.so (soname libnixl_telemetry.so.1) or
 * libnixl_telemetry.a; `pkg-config --cflags --libs nixl-telemetry`, or CMake
 * `find_package(NixlTelemetry)` and the target `NixlTelemetry::nixl_telemetry`.
 * C++: include nixl_telemetry.hpp for an RAII wrapper. Guide: docs/c-api.md.
 *
 * Rules every function follows:
 *
 *  1. Status. Every function except nixl_telemetry_now_us,
 *     nixl_telemetry_status_string and nixl_telemetry_api_version returns an
 *     int32_t status: NIXL_TELEMETRY_OK (0) or a negative
 *     NIXL_TELEMETRY_ERR_* code; nixl_telemetry_status_string() describes it.
 *     A failed call did nothing: it recorded nothing and created nothing.
 *  2. NULL. A NULL telemetry or handle records nothing and returns
 *     NIXL_TELEMETRY_ERR_NULL; destroying NULL is a no-op returning OK (as
 *     free(NULL)). Any other pointer must be NULL or valid: a telemetry or
 *     handle that this library created and that was not destroyed; a string
 *     that is NUL-terminated; an output pointer that is writable. Passing a
 *     destroyed object (destroying twice, say) is undefined, as with free().
 *  3. Threads. Every function may be called from any thread at any time,
 *     concurrently with any other, except that destroying an object races
 *     with every other use of that same object: join the threads that use a
 *     telemetry or handle before destroying it.
 *  4. No crash. No function aborts, exits or lets an exception or a panic
 *     escape into the caller for any input; a failure inside the library is
 *     caught and returned as NIXL_TELEMETRY_ERR_INTERNAL. Telemetry never
 *     blocks a recording thread: when staging is full, events are dropped and
 *     counted (see nixl_telemetry_stats_t).
 *  5. Names. Event names, status strings and agent names must be non-empty
 *     UTF-8 (else NIXL_TELEMETRY_ERR_INVALID_NAME). Event names longer than
 *     31 bytes are accepted and cut to 31 bytes at a character boundary.
 *     Agent names name the ring file: at most 255 bytes, no '/', not "." or
 *     "..". Categories must be one of the eight NIXL_TELEMETRY_CATEGORY_*
 *     (else NIXL_TELEMETRY_ERR_INVALID_CATEGORY).
 *  6. Creation errors. The creating functions take `err`, a caller buffer of
 *     `err_len` bytes: on failure it receives a NUL-terminated message naming
 *     what was wrong and what is accepted, cut at a UTF-8 character boundary
 *     to fit (err_len 0 or err NULL: no message). On success it receives "".
 *     `*out` receives the new object, or NULL on failure.
 *  7. Growth. Structs start with `struct_size`: set it to sizeof the struct
 *     as this header declares it. Later versions only append fields. The
 *     library accepts a larger settings struct whose bytes past the fields it
 *     knows are zero, and a smaller one (an older header's) whose missing
 *     fields then take their defaults; it fills the stats fields both sides
 *     know and zeroes the rest. A struct_size that is no version's sizeof -
 *     smaller than version 1, over 4096 bytes, or not a multiple of 8 (it
 *     would end inside a field) - is NIXL_TELEMETRY_ERR_INVALID_ARGUMENT, and
 *     nothing past struct_size bytes is ever read or written.
 *  8. Fork. In a child made by fork() without exec, every telemetry and
 *     handle inherited from the parent acts as disabled telemetry: each call
 *     returns at once and does nothing (records return NIXL_TELEMETRY_OK,
 *     nixl_telemetry_is_enabled 0, nixl_telemetry_stats all zeros, a new
 *     handle records nothing), and destroying it returns NIXL_TELEMETRY_OK
 *     without flushing, stopping or closing anything (the parent's flush
 *     thread does not exist in the child and its ring or plug-in is the
 *     parent's; the object's memory stays until the child exits). Telemetry
 *     the child creates with the buffer or nop exporter works as usual (give
 *     it an agent name of its own); plug-in exporters keep per-process state
 *     of their own and are not fork-aware yet (see docs/c-api.md).
 */
#ifndef NIXL_TELEMETRY_H
#define NIXL_TELEMETRY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The C API version this header describes (the soname's major number). */
#define NIXL_TELEMETRY_C_API_VERSION 1

/* Status codes. */
#define NIXL_TELEMETRY_OK 0
/* A required pointer (telemetry, handle, output) was NULL; nothing was done. */
#define NIXL_TELEMETRY_ERR_NULL (-1)
/* An agent, event or status name was empty or not UTF-8, or an agent name
 * cannot name a ring file. */
#define NIXL_TELEMETRY_ERR_INVALID_NAME (-2)
/* A category number outside 0-7. */
#define NIXL_TELEMETRY_ERR_INVALID_CATEGORY (-3)
/* Another argument out of range: a direction, a struct_size, a setting. */
#define NIXL_TELEMETRY_ERR_INVALID_ARGUMENT (-4)
/* A NIXL_TELEMETRY_* variable or a setting holds a value that is not accepted. */
#define NIXL_TELEMETRY_ERR_CONFIG (-5)
/* The exporter could not be created: ring directory or file, plug-in. */
#define NIXL_TELEMETRY_ERR_EXPORTER (-6)
/* The system refused a resource (the flush thread could not start). */
#define NIXL_TELEMETRY_ERR_SYSTEM (-7)
/* The library failed inside; the failure was caught. */
#define NIXL_TELEMETRY_ERR_INTERNAL (-8)

/* Event categories (the ring's numbers; readers print the names). */
#define NIXL_TELEMETRY_CATEGORY_MEMORY 0
#define NIXL_TELEMETRY_CATEGORY_TRANSFER 1
#define NIXL_TELEMETRY_CATEGORY_CONNECTION 2
#define NIXL_TELEMETRY_CATEGORY_BACKEND 3
#define NIXL_TELEMETRY_CATEGORY_ERROR 4
#define NIXL_TELEMETRY_CATEGORY_PERFORMANCE 5
#define NIXL_TELEMETRY_CATEGORY_SYSTEM 6
#define NIXL_TELEMETRY_CATEGORY_CUSTOM 7

/* Transfer directions, in the order of NIXL's nixl_xfer_op_t. */
#define NIXL_TELEMETRY_DIRECTION_READ 0  /* data came in:  agent_rx_* */
#define NIXL_TELEMETRY_DIRECTION_WRITE 1 /* data went out: agent_tx_* */

/* Bytes of an event name, NUL included: names keep at most 31 bytes. */
#define NIXL_TELEMETRY_EVENT_NAME_LEN 32

/* Sizes of the versions of the structs below (64-bit targets). A caller's
 * struct_size of version 1 is still accepted: fields past it keep their default. */
#define NIXL_TELEMETRY_SETTINGS_V1_SIZE 64
#define NIXL_TELEMETRY_SETTINGS_V2_SIZE 72
#define NIXL_TELEMETRY_STATS_V1_SIZE 80
#define NIXL_TELEMETRY_STATS_V2_SIZE 88

/* One agent's telemetry. Opaque; create, use from any thread, destroy once. */
typedef struct nixl_telemetry_s nixl_telemetry_t;

/* A pre-resolved (category, name) pair: the fast path. Opaque. A handle may
 * outlive its telemetry: its records are then dropped and counted as late. */
typedef struct nixl_telemetry_handle_s nixl_telemetry_handle_t;

/* Settings for nixl_telemetry_create. Zero a struct, set struct_size and what
 * you need: 0 in a number and NULL or "" in a string mean the default. The
 * strings are read during the call only. */
typedef struct {
    uint32_t struct_size;       /* sizeof(nixl_telemetry_settings_t) */
    uint32_t enabled;           /* 0: records nothing (each call is a no-op); else on */
    uint64_t buffer_size;       /* events per ring and per staging queue: a power
                                   of two from 2 to 2^26; 0 = 4096 */
    uint64_t run_interval_ms;   /* flush interval, ms; 0 = 100 */
    const char *exporter;       /* "buffer" ("BUFFER"), "nop" ("NOP"), or a plug-in name
                                   (libtelemetry_exporter_<name>.so); NULL = "buffer"
                                   when ring_directory is set, else collect only */
    const char *ring_directory; /* the buffer exporter's directory (created if missing) */
    const char *output_path;    /* handed to a plug-in: "ip:port", a file... */
    const char *plugin_dirs;    /* ':'-separated directories searched first for
                                   plug-ins, before the installed directory */
    const char *enabled_metrics; /* comma-separated globs (*, ?) of event names to
                                    record; NULL = all */
    /* Since version 2 (NIXL_TELEMETRY_SETTINGS_V2_SIZE): */
    const char *ring_version;   /* ring layout the buffer exporter writes: "1",
                                   "2" (or "2-named"), "2-typed", "3", "4", as
                                   NIXL_TELEMETRY_RING_VERSION; NULL or "" = "1" */
} nixl_telemetry_settings_t;

/* The accounting of one telemetry, running totals since its creation. After a
 * flush with no concurrent recording,
 * recorded + generated == delivered + dropped_total + pending. */
typedef struct {
    uint32_t struct_size;   /* in: sizeof(nixl_telemetry_stats_t); left unchanged */
    uint32_t reserved;      /* 0 */
    uint64_t recorded;      /* events that passed the enable switch and the allowlist */
    uint64_t generated;     /* events telemetry produced (agent_telemetry_events_dropped) */
    uint64_t delivered;     /* events the exporter accepted */
    uint64_t pending;       /* staged, not yet flushed */
    uint64_t dropped_total; /* lost, every cause together */
    uint64_t dropped_staging_full;    /* a recording thread's staging queue was full */
    uint64_t dropped_exporter_full;   /* the exporter had no room (ring full) */
    uint64_t dropped_exporter_failed; /* the exporter (a plug-in) failed */
    uint64_t dropped_late;  /* recorded while a thread exited, or through a handle
                               whose telemetry was destroyed */
    /* Since version 2 (NIXL_TELEMETRY_STATS_V2_SIZE): */
    uint64_t dropped_format; /* the chosen ring version has no type for the event */
} nixl_telemetry_stats_t;

/* ---- creation and destruction ------------------------------------------ */

/* Telemetry for agent_name configured from the NIXL_TELEMETRY_* environment
 * variables, as NIXL does (NIXL_TELEMETRY_ENABLE off or unset: a valid
 * telemetry that records nothing). Errors name the variable, its value and
 * what is accepted. */
int32_t nixl_telemetry_create_from_env(const char *agent_name, nixl_telemetry_t **out,
                                       char *err, size_t err_len);

/* Telemetry for agent_name configured by settings (the environment is not
 * read). Errors name the settings field, its value and what is accepted. */
int32_t nixl_telemetry_create(const char *agent_name, const nixl_telemetry_settings_t *settings,
                              nixl_telemetry_t **out, char *err, size_t err_len);

/* Flushes everything staged, stops the flush thread, closes the exporter (a
 * ring file is marked closed) and frees telemetry. NULL: no-op. */
int32_t nixl_telemetry_destroy(nixl_telemetry_t *telemetry);

/* A handle for (category, name); the allowlist is applied once, here. A
 * handle of disabled telemetry, or of a name the allowlist excludes, records
 * nothing at the cost of one branch. Free it with nixl_telemetry_handle_destroy. */
int32_t nixl_telemetry_handle_create(const nixl_telemetry_t *telemetry, int32_t category,
                                     const char *name, nixl_telemetry_handle_t **out,
                                     char *err, size_t err_len);

/* Frees a handle. NULL: no-op. */
int32_t nixl_telemetry_handle_destroy(nixl_telemetry_handle_t *handle);

/* ---- recording (none of these blocks, allocates after a thread's first
 *      record, or takes a lock) ---------------------------------------- */

/* The fast path: records value now (the timestamp is taken here). */
int32_t nixl_telemetry_handle_record(const nixl_telemetry_handle_t *handle, uint64_t value);

/* Records value with the caller's timestamp (us since the Unix epoch, e.g.
 * from nixl_telemetry_now_us()): no clock is read. */
int32_t nixl_telemetry_handle_record_at(const nixl_telemetry_handle_t *handle,
                                        uint64_t timestamp_us, uint64_t value);

/* Records one event; name is matched against the allowlist on each call. */
int32_t nixl_telemetry_record(const nixl_telemetry_t *telemetry, int32_t category,
                              const char *name, uint64_t value);

/* One completed transfer: agent_xfer_time (us), agent_{tx|rx}_bytes and
 * agent_{tx|rx}_requests_num (= 1), with one timestamp. direction is
 * NIXL_TELEMETRY_DIRECTION_READ (rx) or NIXL_TELEMETRY_DIRECTION_WRITE (tx). */
int32_t nixl_telemetry_transfer_completed(const nixl_telemetry_t *telemetry,
                                          uint64_t duration_us, int32_t direction,
                                          uint64_t bytes);

/* The same with the caller's completion timestamp (us since the epoch). */
int32_t nixl_telemetry_transfer_completed_at(const nixl_telemetry_t *telemetry,
                                             uint64_t timestamp_us, uint64_t duration_us,
                                             int32_t direction, uint64_t bytes);

/* agent_xfer_post_time: posting a transfer took us microseconds. */
int32_t nixl_telemetry_post_time(const nixl_telemetry_t *telemetry, uint64_t us);

/* The same with the caller's timestamp. */
int32_t nixl_telemetry_post_time_at(const nixl_telemetry_t *telemetry, uint64_t timestamp_us,
                                    uint64_t us);

/* agent_memory_registered / agent_memory_deregistered (MEMORY, bytes). */
int32_t nixl_telemetry_memory_registered(const nixl_telemetry_t *telemetry, uint64_t bytes);
int32_t nixl_telemetry_memory_deregistered(const nixl_telemetry_t *telemetry, uint64_t bytes);

/* An error: an ERROR event named by the status string (e.g. "NIXL_ERR_BACKEND"), value 1. */
int32_t nixl_telemetry_error(const nixl_telemetry_t *telemetry, const char *status);

/* A BACKEND / CONNECTION event named by the caller. */
int32_t nixl_telemetry_backend_event(const nixl_telemetry_t *telemetry, const char *name,
                                     uint64_t value);
int32_t nixl_telemetry_connection_event(const nixl_telemetry_t *telemetry, const char *name,
                                        uint64_t value);

/* ---- flush, stats, queries ----------------------------------------------- */

/* Flushes everything staged so far to the exporter, now, on this thread. */
int32_t nixl_telemetry_flush(const nixl_telemetry_t *telemetry);

/* Copies the accounting into *out; set out->struct_size first. */
int32_t nixl_telemetry_stats(const nixl_telemetry_t *telemetry, nixl_telemetry_stats_t *out);

/* 1 if telemetry records, 0 if it was created disabled, NIXL_TELEMETRY_ERR_NULL for NULL. */
int32_t nixl_telemetry_is_enabled(const nixl_telemetry_t *telemetry);

/* The clock events are stamped with: wall-clock microseconds since the Unix
 * epoch, cheap (a time-stamp-counter read where the CPU has an invariant one). */
uint64_t nixl_telemetry_now_us(void);

/* A static, NUL-terminated description of a status code; never NULL. */
const char *nixl_telemetry_status_string(int32_t status);

/* NIXL_TELEMETRY_C_API_VERSION of the library loaded at run time. */
uint32_t nixl_telemetry_api_version(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NIXL_TELEMETRY_H */
