/*
 * Test plug-ins that misbehave, one way per build (-D):
 *   NO_INIT             no nixl_telemetry_exporter_plugin_init symbol
 *   INIT_NULL           init returns NULL
 *   API_VERSION=n       the descriptor claims api_version n
 *   STRUCT_SIZE=n       the descriptor claims struct_size n
 *   NULL_CREATE         create_exporter is NULL
 *   CREATE_FAILS        create_exporter returns NULL with a reason naming the agent
 *   EXPORT_FAILS        export_event, export_batch and flush always return -1
 *   LAST_ERROR          also export nixl_telemetry_exporter_last_error, giving the
 *                       reason "hostile plug-in: the disk is on fire"
 *   FINI_LOG="path"     init and fini append a line ("init", "fini") to that file
 *   LEGACY_NAMES        export the entry points under their deprecated names
 *                       (nixl_telemetry_plugin_init/_fini), as plug-ins built
 *                       against earlier versions of the header do
 *   NIXL_ADAPTER        also export nixl_telemetry_nixl_adapter, the mark of
 *                       a NIXL adapter (hosts skip such files)
 * Without any, a well-behaved plug-in that accepts and discards everything.
 */
#include "nixl_telemetry_plugin.h"

#include <stdio.h>
#include <stdlib.h>

#ifndef API_VERSION
#define API_VERSION NIXL_TELEMETRY_PLUGIN_API_VERSION
#endif
#ifndef STRUCT_SIZE
#define STRUCT_SIZE sizeof(nixl_telemetry_plugin_t)
#endif

static int token;

void *hostile_create(const nixl_telemetry_exporter_params_t *params, char *err, size_t err_len) {
#ifdef CREATE_FAILS
    snprintf(err, err_len, "hostile plug-in refuses agent %s", params->agent_name);
    return NULL;
#else
    (void)params;
    (void)err;
    (void)err_len;
    return &token;
#endif
}

#ifdef EXPORT_FAILS
#define RESULT NIXL_TELEMETRY_EXPORT_FAILED
#else
#define RESULT NIXL_TELEMETRY_EXPORT_OK
#endif

static int32_t hostile_export_event(void *exporter, const nixl_telemetry_event_t *event) {
    (void)exporter;
    (void)event;
    return RESULT;
}

static int32_t hostile_export_batch(void *exporter, const nixl_telemetry_event_t *events, size_t count) {
    (void)exporter;
    (void)events;
    (void)count;
    return RESULT;
}

static int32_t hostile_flush(void *exporter) {
    (void)exporter;
    return RESULT;
}

#ifdef LAST_ERROR
size_t nixl_telemetry_exporter_last_error(void *exporter, char *err, size_t err_len) {
    static const char reason[] = "hostile plug-in: the disk is on fire";
    if (exporter != &token) {
        abort();
    }
    if (err != NULL && err_len > 0) {
        snprintf(err, err_len, "%s", reason);
    }
    return sizeof(reason) - 1;
}
#endif

static void hostile_destroy(void *exporter) {
    /* The host must hand back the handle create_exporter returned. */
    if (exporter != &token) {
        abort();
    }
}

/* Not static: some builds leave it unreferenced. */
const nixl_telemetry_plugin_t hostile_plugin = {
    .api_version = API_VERSION,
    .struct_size = STRUCT_SIZE,
    .name = "hostile",
    .version = "0.0.0",
#ifdef NULL_CREATE
    .create_exporter = NULL,
#else
    .create_exporter = hostile_create,
#endif
    .export_event = hostile_export_event,
    .export_batch = hostile_export_batch,
    .flush = hostile_flush,
    .destroy_exporter = hostile_destroy,
};

static void log_call(const char *what) {
#ifdef FINI_LOG
    FILE *f = fopen(FINI_LOG, "a");
    if (f != NULL) {
        fprintf(f, "%s\n", what);
        fclose(f);
    }
#else
    (void)what;
#endif
}

#ifdef LEGACY_NAMES
#define INIT_NAME nixl_telemetry_plugin_init
#define FINI_NAME nixl_telemetry_plugin_fini
#else
#define INIT_NAME nixl_telemetry_exporter_plugin_init
#define FINI_NAME nixl_telemetry_exporter_plugin_fini
#endif

#ifdef NIXL_ADAPTER
NIXL_TELEMETRY_PLUGIN_EXPORT const char nixl_telemetry_nixl_adapter[] = "test";
#endif

#ifndef NO_INIT
NIXL_TELEMETRY_PLUGIN_EXPORT const nixl_telemetry_plugin_t *INIT_NAME(void);
NIXL_TELEMETRY_PLUGIN_EXPORT const nixl_telemetry_plugin_t *INIT_NAME(void) {
    log_call("init");
#ifdef INIT_NULL
    return NULL;
#else
    return &hostile_plugin;
#endif
}
#endif

NIXL_TELEMETRY_PLUGIN_EXPORT void FINI_NAME(void);
NIXL_TELEMETRY_PLUGIN_EXPORT void FINI_NAME(void) {
    log_call("fini");
}
