//! The Prometheus exporter plug-in: `libtelemetry_exporter_prometheus.so`,
//! selected with `NIXL_TELEMETRY_EXPORTER=prometheus`.
//!
//! This crate is the plug-in's entry points only (`export_plugin!`) around
//! [`PrometheusExporter`], which lives in `nixl-telemetry-prometheus-http`
//! (an rlib without entry points; the metric model it publishes is
//! `nixl-telemetry-metrics`). Rust code uses those crates; nothing links this
//! one but the host that loads it (and its own tests). See
//! `docs/prometheus.md` for the series and the configuration.

use nixl_telemetry_abi::rust_plugin::{full_message, RustPluginExporter, RustPluginParams};
use nixl_telemetry_abi::Event;
use nixl_telemetry_prometheus_http::{PrometheusExporter, Settings};

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
