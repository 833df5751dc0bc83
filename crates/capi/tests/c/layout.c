/* Prints every size, offset and constant of nixl_telemetry.h as "key value"
 * lines, for tests/it/header_matches_rust.rs to compare with the Rust side. */
#include <stddef.h>
#include <stdio.h>

#include "nixl_telemetry.h"

#define P(key, value) printf("%s %lld\n", key, (long long)(value))
#define SETTINGS(field) P("settings." #field, offsetof(nixl_telemetry_settings_t, field))
#define STATS(field) P("stats." #field, offsetof(nixl_telemetry_stats_t, field))

int main(void) {
    P("c_api_version", NIXL_TELEMETRY_C_API_VERSION);
    P("ok", NIXL_TELEMETRY_OK);
    P("err_null", NIXL_TELEMETRY_ERR_NULL);
    P("err_invalid_name", NIXL_TELEMETRY_ERR_INVALID_NAME);
    P("err_invalid_category", NIXL_TELEMETRY_ERR_INVALID_CATEGORY);
    P("err_invalid_argument", NIXL_TELEMETRY_ERR_INVALID_ARGUMENT);
    P("err_config", NIXL_TELEMETRY_ERR_CONFIG);
    P("err_exporter", NIXL_TELEMETRY_ERR_EXPORTER);
    P("err_system", NIXL_TELEMETRY_ERR_SYSTEM);
    P("err_internal", NIXL_TELEMETRY_ERR_INTERNAL);
    P("category_memory", NIXL_TELEMETRY_CATEGORY_MEMORY);
    P("category_transfer", NIXL_TELEMETRY_CATEGORY_TRANSFER);
    P("category_connection", NIXL_TELEMETRY_CATEGORY_CONNECTION);
    P("category_backend", NIXL_TELEMETRY_CATEGORY_BACKEND);
    P("category_error", NIXL_TELEMETRY_CATEGORY_ERROR);
    P("category_performance", NIXL_TELEMETRY_CATEGORY_PERFORMANCE);
    P("category_system", NIXL_TELEMETRY_CATEGORY_SYSTEM);
    P("category_custom", NIXL_TELEMETRY_CATEGORY_CUSTOM);
    P("direction_read", NIXL_TELEMETRY_DIRECTION_READ);
    P("direction_write", NIXL_TELEMETRY_DIRECTION_WRITE);
    P("event_name_len", NIXL_TELEMETRY_EVENT_NAME_LEN);
    P("settings_v1_size", NIXL_TELEMETRY_SETTINGS_V1_SIZE);
    P("stats_v1_size", NIXL_TELEMETRY_STATS_V1_SIZE);
    P("settings_v2_size", NIXL_TELEMETRY_SETTINGS_V2_SIZE);
    P("stats_v2_size", NIXL_TELEMETRY_STATS_V2_SIZE);

    P("settings.size", sizeof(nixl_telemetry_settings_t));
    P("settings.align", _Alignof(nixl_telemetry_settings_t));
    SETTINGS(struct_size);
    SETTINGS(enabled);
    SETTINGS(buffer_size);
    SETTINGS(run_interval_ms);
    SETTINGS(exporter);
    SETTINGS(ring_directory);
    SETTINGS(output_path);
    SETTINGS(plugin_dirs);
    SETTINGS(enabled_metrics);
    SETTINGS(ring_version);

    P("stats.size", sizeof(nixl_telemetry_stats_t));
    P("stats.align", _Alignof(nixl_telemetry_stats_t));
    STATS(struct_size);
    STATS(reserved);
    STATS(recorded);
    STATS(generated);
    STATS(delivered);
    STATS(pending);
    STATS(dropped_total);
    STATS(dropped_staging_full);
    STATS(dropped_exporter_full);
    STATS(dropped_exporter_failed);
    STATS(dropped_late);
    STATS(dropped_format);
    return 0;
}
