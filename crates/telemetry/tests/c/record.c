/*
 * Test plug-in: appends every event it receives, raw (56 bytes each), to
 * <output_path>/<agent_name>.events, so a test can check that what was recorded
 * arrived intact.
 *
 * Build options (-D):
 *   LIFECYCLE_LOG="path"  append "init - <live>", "create <agent> <live> <max_events_buffered>",
 *                         "destroy <agent> <live>", "fini - <live>" lines to that file
 *                         (live = exporters alive after the call)
 *   NO_BATCH              leave export_batch and flush NULL (the host loops export_event)
 */
#include "nixl_telemetry_plugin.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct record_exporter {
    FILE *out;
    char agent[256];
};

static int live_exporters;

static void lifecycle(const char *what, const char *agent, const char *extra) {
#ifdef LIFECYCLE_LOG
    FILE *log = fopen(LIFECYCLE_LOG, "a");
    if (log != NULL) {
        fprintf(log, "%s %s %d%s\n", what, agent, __atomic_load_n(&live_exporters, __ATOMIC_SEQ_CST), extra);
        fclose(log);
    }
#else
    (void)what;
    (void)agent;
    (void)extra;
#endif
}

static void *record_create(const nixl_telemetry_exporter_params_t *params, char *err, size_t err_len) {
    if (params->output_path == NULL) {
        snprintf(err, err_len, "the record plug-in needs an output directory");
        return NULL;
    }
    size_t n = strlen(params->output_path) + strlen(params->agent_name) + sizeof("/.events");
    char *path = malloc(n);
    if (path == NULL) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    snprintf(path, n, "%s/%s.events", params->output_path, params->agent_name);
    FILE *out = fopen(path, "ab");
    if (out == NULL) {
        snprintf(err, err_len, "cannot open %s: %s", path, strerror(errno));
        free(path);
        return NULL;
    }
    free(path);
    struct record_exporter *e = calloc(1, sizeof *e);
    if (e == NULL) {
        fclose(out);
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    e->out = out;
    snprintf(e->agent, sizeof e->agent, "%s", params->agent_name);
    __atomic_add_fetch(&live_exporters, 1, __ATOMIC_SEQ_CST);
    char extra[32];
    snprintf(extra, sizeof extra, " %zu", params->max_events_buffered);
    lifecycle("create", e->agent, extra);
    return e;
}

static int32_t record_export_event(void *exporter, const nixl_telemetry_event_t *event) {
    struct record_exporter *e = exporter;
    return fwrite(event, sizeof *event, 1, e->out) == 1 ? NIXL_TELEMETRY_EXPORT_OK
                                                        : NIXL_TELEMETRY_EXPORT_FAILED;
}

#ifndef NO_BATCH
static int32_t record_export_batch(void *exporter, const nixl_telemetry_event_t *events, size_t count) {
    struct record_exporter *e = exporter;
    return fwrite(events, sizeof *events, count, e->out) == count ? NIXL_TELEMETRY_EXPORT_OK
                                                                   : NIXL_TELEMETRY_EXPORT_FAILED;
}

static int32_t record_flush(void *exporter) {
    struct record_exporter *e = exporter;
    return fflush(e->out) == 0 ? NIXL_TELEMETRY_EXPORT_OK : NIXL_TELEMETRY_EXPORT_FAILED;
}
#endif

static void record_destroy(void *exporter) {
    struct record_exporter *e = exporter;
    fclose(e->out);
    __atomic_sub_fetch(&live_exporters, 1, __ATOMIC_SEQ_CST);
    lifecycle("destroy", e->agent, "");
    free(e);
}

static const nixl_telemetry_plugin_t record_plugin = {
    .api_version = NIXL_TELEMETRY_PLUGIN_API_VERSION,
    .struct_size = sizeof(nixl_telemetry_plugin_t),
    .name = "record",
    .version = "1.0.0",
    .create_exporter = record_create,
    .export_event = record_export_event,
#ifdef NO_BATCH
    .export_batch = NULL,
    .flush = NULL,
#else
    .export_batch = record_export_batch,
    .flush = record_flush,
#endif
    .destroy_exporter = record_destroy,
};

const nixl_telemetry_plugin_t *nixl_telemetry_exporter_plugin_init(void) {
    lifecycle("init", "-", "");
    return &record_plugin;
}

void nixl_telemetry_exporter_plugin_fini(void) {
    lifecycle("fini", "-", "");
}
