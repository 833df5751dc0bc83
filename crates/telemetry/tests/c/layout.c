/*
 * Prints the header's sizes, offsets and constants as "key value" lines; a Rust
 * test compares them with nixl-telemetry-abi's layout.
 */
#include "nixl_telemetry_plugin.h"

#include <stddef.h>
#include <stdio.h>

#define SHOW(key, value) printf("%s %lld\n", key, (long long)(value))

int main(void) {
    SHOW("api_version", NIXL_TELEMETRY_PLUGIN_API_VERSION);
    SHOW("export_ok", NIXL_TELEMETRY_EXPORT_OK);
    SHOW("export_failed", NIXL_TELEMETRY_EXPORT_FAILED);
    SHOW("export_panicked", NIXL_TELEMETRY_EXPORT_PANICKED);
    SHOW("event_name_len", NIXL_TELEMETRY_EVENT_NAME_LEN);
    SHOW("category_memory", NIXL_TELEMETRY_MEMORY);
    SHOW("category_custom", NIXL_TELEMETRY_CUSTOM);

    SHOW("event.size", sizeof(nixl_telemetry_event_t));
    SHOW("event.align", _Alignof(nixl_telemetry_event_t));
    SHOW("event.timestamp_us", offsetof(nixl_telemetry_event_t, timestamp_us));
    SHOW("event.category", offsetof(nixl_telemetry_event_t, category));
    SHOW("event.event_name", offsetof(nixl_telemetry_event_t, event_name));
    SHOW("event.reserved", offsetof(nixl_telemetry_event_t, reserved));
    SHOW("event.value", offsetof(nixl_telemetry_event_t, value));

    SHOW("params.size", sizeof(nixl_telemetry_exporter_params_t));
    SHOW("params.agent_name", offsetof(nixl_telemetry_exporter_params_t, agent_name));
    SHOW("params.max_events_buffered", offsetof(nixl_telemetry_exporter_params_t, max_events_buffered));
    SHOW("params.output_path", offsetof(nixl_telemetry_exporter_params_t, output_path));

    SHOW("plugin.size", sizeof(nixl_telemetry_plugin_t));
    SHOW("plugin.api_version", offsetof(nixl_telemetry_plugin_t, api_version));
    SHOW("plugin.struct_size", offsetof(nixl_telemetry_plugin_t, struct_size));
    SHOW("plugin.name", offsetof(nixl_telemetry_plugin_t, name));
    SHOW("plugin.version", offsetof(nixl_telemetry_plugin_t, version));
    SHOW("plugin.create_exporter", offsetof(nixl_telemetry_plugin_t, create_exporter));
    SHOW("plugin.export_event", offsetof(nixl_telemetry_plugin_t, export_event));
    SHOW("plugin.export_batch", offsetof(nixl_telemetry_plugin_t, export_batch));
    SHOW("plugin.flush", offsetof(nixl_telemetry_plugin_t, flush));
    SHOW("plugin.destroy_exporter", offsetof(nixl_telemetry_plugin_t, destroy_exporter));

    SHOW("log_error", NIXL_TELEMETRY_LOG_ERROR);
    SHOW("log_warn", NIXL_TELEMETRY_LOG_WARN);
    SHOW("log_info", NIXL_TELEMETRY_LOG_INFO);
    SHOW("log_debug", NIXL_TELEMETRY_LOG_DEBUG);
    SHOW("log_trace", NIXL_TELEMETRY_LOG_TRACE);
    SHOW("delivery.size", sizeof(nixl_telemetry_delivery_t));
    SHOW("delivery.reserved", offsetof(nixl_telemetry_delivery_t, reserved));
    SHOW("delivery.events_accepted", offsetof(nixl_telemetry_delivery_t, events_accepted));
    SHOW("delivery.events_delivered", offsetof(nixl_telemetry_delivery_t, events_delivered));
    SHOW("delivery.events_undelivered", offsetof(nixl_telemetry_delivery_t, events_undelivered));
    return 0;
}
