/*
 * NIXL telemetry exporter plug-in C ABI, version 1.
 *
 * A plug-in is a shared library named libtelemetry_exporter_<name>.so that
 * exports nixl_telemetry_exporter_plugin_init and
 * nixl_telemetry_exporter_plugin_fini. The host (the nixl-telemetry collector)
 * loads it when NIXL_TELEMETRY_EXPORTER=<name>.
 *
 * Do not export nixl_telemetry_plugin_init: NIXL's own loader calls that name
 * in every libtelemetry_exporter_*.so of its plug-in directory and expects a
 * C++ object there. Plug-ins built against earlier versions of this header
 * exported nixl_telemetry_plugin_init/_fini; hosts still load them, with a
 * deprecation warning. NIXL loads our plug-ins through the adapters of
 * crates/nixl_adapters (docs/nixl-adapters.md).
 *
 * Rules (docs/plugins.md has the full text):
 *  - The host checks api_version and struct_size before calling anything else;
 *    version 1 accepts exactly api_version == NIXL_TELEMETRY_PLUGIN_API_VERSION
 *    and struct_size == sizeof(nixl_telemetry_plugin_t).
 *  - init is called once when the library is loaded, fini once before it is
 *    unloaded (also when the host refuses the descriptor init returned);
 *    every exporter is destroyed before fini.
 *  - The functions of one exporter are called from one thread at a time (not
 *    always the same thread); different exporters may be called concurrently.
 *  - params and the strings it points to are valid only during create_exporter:
 *    copy what you keep. Events are valid only during the call.
 *  - Return NIXL_TELEMETRY_EXPORT_OK (0) on success, anything else on failure.
 *    A plug-in may also export nixl_telemetry_exporter_last_error (optional):
 *    the host then logs the reason of a failed call, each distinct reason once.
 *  - Optional too: nixl_telemetry_exporter_set_log (the host hands the plug-in
 *    its log callback; without one the plug-in writes its messages to stderr)
 *    and nixl_telemetry_exporter_delivery (what became of the events the
 *    plug-in accepted). Hosts that predate them never call them; a host loads
 *    a plug-in without them as before.
 *
 * This header is the C spelling of the Rust module nixl_telemetry_abi::c_abi
 * (nixl_telemetry_exporter_params_t is CExporterParams there, nixl_telemetry_plugin_t
 * is PluginDescriptor); a test checks that both have the same layout. Plug-ins
 * written in Rust implement nixl_telemetry_abi::rust_plugin::RustPluginExporter
 * instead of using this header.
 */
#ifndef NIXL_TELEMETRY_PLUGIN_H
#define NIXL_TELEMETRY_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NIXL_TELEMETRY_PLUGIN_API_VERSION 1

/* Return codes of export_event, export_batch and flush. */
#define NIXL_TELEMETRY_EXPORT_OK 0
/* The call failed; the events are counted as lost and the exporter stays in use. */
#define NIXL_TELEMETRY_EXPORT_FAILED (-1)
/* The exporter is broken for good (a Rust plug-in panicked): the host disables it. */
#define NIXL_TELEMETRY_EXPORT_PANICKED (-2)

/* Event categories (nixl_telemetry_event_t.category). */
#define NIXL_TELEMETRY_MEMORY 0
#define NIXL_TELEMETRY_TRANSFER 1
#define NIXL_TELEMETRY_CONNECTION 2
#define NIXL_TELEMETRY_BACKEND 3
#define NIXL_TELEMETRY_ERROR 4
#define NIXL_TELEMETRY_PERFORMANCE 5
#define NIXL_TELEMETRY_SYSTEM 6
#define NIXL_TELEMETRY_CUSTOM 7

/* Bytes of event_name, NUL terminator included. */
#define NIXL_TELEMETRY_EVENT_NAME_LEN 32

/* Marks the two entry points for export from the shared library. */
#if defined(__GNUC__) || defined(__clang__)
#define NIXL_TELEMETRY_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define NIXL_TELEMETRY_PLUGIN_EXPORT
#endif

typedef struct {              /* 56 bytes: the ring's event slot */
    uint64_t timestamp_us;    /* microseconds since the Unix epoch */
    int32_t  category;        /* NIXL_TELEMETRY_MEMORY ... NIXL_TELEMETRY_CUSTOM */
    char     event_name[32];  /* NUL-terminated */
    uint32_t reserved;        /* 0 */
    uint64_t value;
} nixl_telemetry_event_t;

typedef struct {
    const char *agent_name;           /* never NULL */
    size_t      max_events_buffered;  /* NIXL_TELEMETRY_BUFFER_SIZE */
    const char *output_path;          /* NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH, or NULL */
} nixl_telemetry_exporter_params_t;

typedef struct {
    uint32_t    api_version;          /* NIXL_TELEMETRY_PLUGIN_API_VERSION */
    uint32_t    struct_size;          /* sizeof(nixl_telemetry_plugin_t) */
    const char *name;
    const char *version;
    /* NULL on failure, with a NUL-terminated reason written into err (at most err_len bytes) */
    void       *(*create_exporter)(const nixl_telemetry_exporter_params_t *params,
                                   char *err, size_t err_len);
    int32_t     (*export_event)(void *exporter, const nixl_telemetry_event_t *event); /* 0 = ok */
    int32_t     (*export_batch)(void *exporter, const nixl_telemetry_event_t *events,
                                size_t count);  /* may be NULL: the host loops export_event */
    int32_t     (*flush)(void *exporter);       /* may be NULL; called after each flush batch */
    void        (*destroy_exporter)(void *exporter);
} nixl_telemetry_plugin_t;

/* Levels of the messages a plug-in sends to the host's log. */
#define NIXL_TELEMETRY_LOG_ERROR 1
#define NIXL_TELEMETRY_LOG_WARN 2
#define NIXL_TELEMETRY_LOG_INFO 3
#define NIXL_TELEMETRY_LOG_DEBUG 4
#define NIXL_TELEMETRY_LOG_TRACE 5

/* The host's log callback: level is NIXL_TELEMETRY_LOG_* (a host treats other
 * numbers as WARN), message one NUL-terminated line of UTF-8, valid during the
 * call. The plug-in may call it from any of its threads, also concurrently. */
typedef void (*nixl_telemetry_log_fn)(void *context, int32_t level, const char *message);

typedef struct {              /* 32 bytes; fields are only ever appended */
    uint32_t struct_size;     /* set by the host: sizeof(nixl_telemetry_delivery_t) as it knows it */
    uint32_t reserved;        /* 0 */
    uint64_t events_accepted;    /* events of export calls that returned 0, since the load */
    uint64_t events_delivered;   /* of those, known to have reached their destination */
    uint64_t events_undelivered; /* of those, known never to reach it; the rest are on their way */
} nixl_telemetry_delivery_t;

/* Called once after the library is loaded; returns a descriptor that stays
 * valid until fini. NULL means the plug-in cannot be used (fini is still
 * called before the library is unloaded). */
NIXL_TELEMETRY_PLUGIN_EXPORT const nixl_telemetry_plugin_t *nixl_telemetry_exporter_plugin_init(void);

/* Called once before the library is unloaded, after every exporter is destroyed. */
NIXL_TELEMETRY_PLUGIN_EXPORT void nixl_telemetry_exporter_plugin_fini(void);

/* Optional (a plug-in need not define it; the host looks it up when loading).
 * Writes the reason of exporter's most recent failed call into err, NUL-terminated
 * and cut to err_len bytes, and returns the reason's full length in bytes, or 0
 * when there is none. The host calls it right after export_event, export_batch or
 * flush returned non-zero, from the thread that made that call, and logs each
 * distinct reason once. */
NIXL_TELEMETRY_PLUGIN_EXPORT size_t nixl_telemetry_exporter_last_error(void *exporter, char *err,
                                                                        size_t err_len);

/* Optional. The host gives its log callback (context is passed back on every
 * call) after init and before any create_exporter, and takes it back (log
 * NULL) before fini; once the call with NULL returns, the plug-in is inside no
 * call of the old callback and starts none. Without a callback (an older host)
 * the plug-in writes its messages to stderr. A plug-in bounds the rate of its
 * messages. The callback must not call set_log. */
NIXL_TELEMETRY_PLUGIN_EXPORT void nixl_telemetry_exporter_set_log(nixl_telemetry_log_fn log,
                                                                   void *context);

/* Optional. Fills the fields of out that fit in out->struct_size (set by the
 * host) and returns 0, or returns non-zero when the plug-in does not track
 * delivery. Counts all exporters since the load. The host calls it after the
 * last exporter is destroyed, before fini. */
NIXL_TELEMETRY_PLUGIN_EXPORT int32_t nixl_telemetry_exporter_delivery(nixl_telemetry_delivery_t *out);

#ifdef __cplusplus
}
#endif

#endif /* NIXL_TELEMETRY_PLUGIN_H */
