//! The Prometheus exporter plug-in: `libtelemetry_exporter_prometheus.so`,
//! selected with `NIXL_TELEMETRY_EXPORTER=prometheus`.
//!
//! Only the plug-in's entry points: the exporter is
//! `nixl_telemetry_prometheus::PrometheusExporter` (created from the
//! environment as the host asks), the metric model it publishes is
//! `nixl-telemetry-metrics`. See `docs/prometheus.md`.

nixl_telemetry_abi::export_plugin!(
    nixl_telemetry_prometheus::PrometheusExporter,
    name = "prometheus",
    version = env!("CARGO_PKG_VERSION")
);
