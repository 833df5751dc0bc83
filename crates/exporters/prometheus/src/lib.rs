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

use nixl_telemetry_abi::rust_plugin::{RustPluginExporter, RustPluginParams};
use nixl_telemetry_abi::Event;

/// The plug-in's exporter: one [`PrometheusExporter`], created from the
/// environment ([`Settings::from_env`]) as the host asks.
#[derive(Debug)]
pub struct PrometheusPlugin(pub PrometheusExporter);

/// Shows an error with its chain of causes.
fn full_message(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

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
