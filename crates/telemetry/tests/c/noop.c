/*
 * Benchmark plug-in: accepts every batch and only counts it, so the time
 * measured is the host's flush path and the ABI call.
 */
#include "nixl_telemetry_plugin.h"

#include <stdlib.h>

struct noop_exporter {
    uint64_t events;
    uint64_t value_sum;
};

static void *noop_create(const nixl_telemetry_exporter_params_t *params, char *err, size_t err_len) {
    (void)params;
    (void)err;
    (void)err_len;
    return calloc(1, sizeof(struct noop_exporter));
}

static int32_t noop_export_event(void *exporter, const nixl_telemetry_event_t *event) {
    struct noop_exporter *e = exporter;
    e->events += 1;
    e->value_sum += event->value;
    return NIXL_TELEMETRY_EXPORT_OK;
}

static int32_t noop_export_batch(void *exporter, const nixl_telemetry_event_t *events, size_t count) {
    struct noop_exporter *e = exporter;
    e->events += count;
    /* Touch the last event so the batch is really read. */
    if (count > 0) {
        e->value_sum += events[count - 1].value;
    }
    return NIXL_TELEMETRY_EXPORT_OK;
}

static void noop_destroy(void *exporter) {
    free(exporter);
}

static const nixl_telemetry_plugin_t noop_plugin = {
    .api_version = NIXL_TELEMETRY_PLUGIN_API_VERSION,
    .struct_size = sizeof(nixl_telemetry_plugin_t),
    .name = "noop",
    .version = "1.0.0",
    .create_exporter = noop_create,
    .export_event = noop_export_event,
    .export_batch = noop_export_batch,
    .flush = NULL,
    .destroy_exporter = noop_destroy,
};

const nixl_telemetry_plugin_t *nixl_telemetry_exporter_plugin_init(void) {
    return &noop_plugin;
}

void nixl_telemetry_exporter_plugin_fini(void) {}
