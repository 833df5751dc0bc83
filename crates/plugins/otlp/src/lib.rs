//! The OTLP exporter plug-in: `libtelemetry_exporter_otlp.so`, selected with
//! `NIXL_TELEMETRY_EXPORTER=otlp`.
//!
//! Only the plug-in's entry points: the exporter is
//! `nixl_telemetry_otlp::OtlpExporter` (created from the environment as the
//! host asks). See `docs/otlp.md`.

nixl_telemetry_abi::export_plugin!(
    nixl_telemetry_otlp::OtlpExporter,
    name = "otlp",
    version = env!("CARGO_PKG_VERSION")
);
