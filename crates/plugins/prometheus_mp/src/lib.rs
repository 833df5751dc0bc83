//! The multi-process Prometheus exporter plug-in:
//! `libtelemetry_exporter_prometheus_mp.so`, selected with
//! `NIXL_TELEMETRY_EXPORTER=prometheus_mp`.
//!
//! Only the plug-in's entry points: the exporter is
//! `nixl_telemetry_prometheus_mp::MultiProcessExporter` (created from the
//! environment as the host asks). See `docs/prometheus-mp.md`.

nixl_telemetry_abi::export_plugin!(
    nixl_telemetry_prometheus_mp::MultiProcessExporter,
    name = "prometheus_mp",
    version = env!("CARGO_PKG_VERSION")
);
