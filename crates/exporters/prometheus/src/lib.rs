//! The Prometheus exporter plug-in: `libtelemetry_exporter_prometheus.so`,
//! selected with `NIXL_TELEMETRY_EXPORTER=prometheus`.
//!
//! This crate is the plug-in glue only: the entry points (`export_plugin!`)
//! around [`PrometheusExporter`], which, with the metric model, the rendering
//! and the HTTP server, lives in `nixl-telemetry-prometheus-core` (an rlib
//! without entry points, which the multi-process and OTLP plug-ins link too).
//! Everything public there is re-exported here, so Rust users of this crate
//! keep their paths. See `docs/prometheus.md` for the series and the
//! configuration.

pub use nixl_telemetry_prometheus_core::*;

use nixl_telemetry_abi::rust_plugin::{full_message, RustPluginExporter, RustPluginParams};
use nixl_telemetry_abi::Event;

/// The plug-in's exporter: one [`PrometheusExporter`], created from the
/// environment ([`Settings::from_env`]) as the host asks.
#[derive(Debug)]
pub struct PrometheusPlugin(pub PrometheusExporter);

impl RustPluginExporter for PrometheusPlugin {
    fn create(params: &RustPluginParams<'_>) -> Result<Self, String> {
        let settings = Settings::from_env(params.output_path).map_err(|e| full_message(&e))?;
        PrometheusExporter::with_settings(params.agent_name, &settings)
            .map(PrometheusPlugin)
            .map_err(|e| full_message(&e))
    }

    fn export_batch(&mut self, events: &[Event]) -> Result<(), String> {
        self.0.record(events);
        Ok(())
    }
}

nixl_telemetry_abi::export_plugin!(
    PrometheusPlugin,
    name = "prometheus",
    version = env!("CARGO_PKG_VERSION")
);
