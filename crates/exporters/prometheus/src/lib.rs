//! The Prometheus exporter without plug-in entry points: the single-process
//! plug-in (`libtelemetry_exporter_prometheus.so`, crate
//! `nixl-telemetry-exporter-prometheus` in `crates/plugins/prometheus`) is
//! this crate's [`PrometheusExporter`] behind an `export_plugin!`, and the multi-process plug-in (`prometheus_mp`)
//! serves its files with this crate's HTTP server. Being an `rlib` only, it
//! can be linked into each of them without two definitions of the plug-in
//! entry points.
//!
//! Each exporter (one per agent) folds the events the host flushes into the
//! metric model of `nixl-telemetry-metrics` and serves them over HTTP at
//! `GET /metrics`, in the text format 0.0.4 or, when the scraper asks for it,
//! OpenMetrics 1.0, written by [`render`] (the one Prometheus text renderer of
//! the workspace: the model only models). Agents of one process that export
//! to one address share one endpoint and are told apart by their `agent_name`
//! label. See `docs/prometheus.md` for the series and the configuration.
//!
//! The parts: [`settings`] (environment; the histogram bounds are
//! [`nixl_telemetry_abi::buckets`]), `agent` (how an agent's totals are
//! published: atomics behind a sequence lock, read by scrapes), `http` and
//! `server` (the HTTP/1.1 endpoint), `exposer` (the server's own families),
//! `gzip` (answers compressed around a cached part), `endpoint` (the
//! process-wide registry of listeners), [`external`] (the server for bodies
//! rendered elsewhere).
//!
//! From Rust: [`PrometheusExporter::with_settings`], [`PrometheusExporter::record`] and
//! [`PrometheusExporter::render`].

#![forbid(unsafe_code)]

mod agent;
mod endpoint;
mod error;
mod exposer;
pub mod external;
mod gzip;
mod http;
mod listen_backlog;
mod render;
mod server;
pub mod settings;
mod socket_send;
mod thread_priority;

use std::net::SocketAddr;
use std::sync::Arc;

use nixl_telemetry_abi::rust_plugin::{full_message, RustPluginExporter, RustPluginParams};
use nixl_telemetry_abi::Event;

pub use error::PrometheusError;
pub use http::{METRICS_PATH, OPENMETRICS_CONTENT_TYPE, TEXT_CONTENT_TYPE};
pub use render::{
    format_bound, render, render_into, write_counter_header, write_header, AgentLabels, Format,
};
pub use settings::{Buckets, BucketsError, ServerLimits, Settings, SettingsError};

/// The exporter of one agent.
///
/// Creating it registers the agent with the endpoint for its address (opening
/// the endpoint if needed); dropping it removes the agent's series, and the
/// last agent of an endpoint closes the listener.
#[derive(Debug)]
#[must_use = "dropping it removes the agent's series (and closes the endpoint after its last agent)"]
pub struct PrometheusExporter {
    writer: agent::AgentWriter,
    endpoint: Arc<endpoint::Endpoint>,
}

impl PrometheusExporter {
    /// Creates the exporter of `agent_name` with explicit settings (the plug-in
    /// entry point reads them from the environment with [`Settings::from_env`]).
    ///
    /// Fails if the address cannot be bound, or if a live agent of the same
    /// name already exports on this endpoint in this process.
    pub fn with_settings(
        agent_name: &str,
        settings: &Settings,
    ) -> Result<PrometheusExporter, PrometheusError> {
        let writer = agent::AgentWriter::new(
            agent_name,
            nixl_telemetry_metrics::hostname(),
            settings.buckets.clone(),
        );
        let endpoint = endpoint::attach(settings, writer.shared())?;
        Ok(PrometheusExporter { writer, endpoint })
    }

    /// The address the endpoint listens on (with the real port when port 0
    /// was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.endpoint.addr
    }

    /// The agent's name.
    pub fn agent_name(&self) -> &str {
        &self.writer.shared().name
    }

    /// Turns `events` into series and makes them visible to scrapes. Never
    /// blocks on a scrape.
    pub fn record(&mut self, events: &[Event]) {
        self.writer.record(events);
    }

    /// The agents' part of the body a scrape of this exporter's endpoint
    /// would get now in `format` (every agent of the endpoint). A scrape's
    /// body also starts with the HTTP server's own `exposer_*` families
    /// (bytes sent, scrapes served, answer latencies), which only the server
    /// knows.
    pub fn render(&self, format: Format) -> Vec<u8> {
        agent::render(&self.endpoint.directory.current().agents, format)
    }
}

/// The plug-in's side: created from the environment ([`Settings::from_env`])
/// as the host asks; the plug-in crate declares its entry points around it.
impl RustPluginExporter for PrometheusExporter {
    fn create(params: &RustPluginParams<'_>) -> Result<Self, String> {
        let settings = Settings::from_env(params.output_path).map_err(|e| full_message(&e))?;
        PrometheusExporter::with_settings(params.agent_name, &settings)
            .map_err(|e| full_message(&e))
    }

    fn export_batch(&mut self, events: &[Event]) -> Result<(), String> {
        self.record(events);
        Ok(())
    }
}

impl Drop for PrometheusExporter {
    fn drop(&mut self) {
        endpoint::detach(&self.endpoint, self.writer.shared());
    }
}

/// Entry points for the fuzz targets in `fuzz/` (not a stable interface).
#[doc(hidden)]
pub mod fuzzing {
    /// Parses a request head at the start of `buf` as the endpoint does: `None`
    /// while the head is incomplete, `Ok((consumed, request))` for a head it answers
    /// (the request in its `Debug` form), `Err(status)` for one it refuses.
    pub fn parse_request(buf: &[u8]) -> Option<Result<(usize, String), String>> {
        match crate::http::parse(buf) {
            crate::http::Parsed::Incomplete => None,
            crate::http::Parsed::Complete { request, consumed } => {
                Some(Ok((consumed, format!("{request:?}"))))
            }
            crate::http::Parsed::Invalid(status) => Some(Err(format!("{status:?}"))),
        }
    }
}

/// The request-head parser, for `benches/request_parsers.rs` (not a stable
/// interface).
#[doc(hidden)]
pub mod request_parsers {
    use crate::http::Parsed;

    /// What a parse found, without allocating: `None` while incomplete,
    /// `Ok((consumed, keep_alive, gzip, metrics))` for an answered head,
    /// `Err(())` for a refused one.
    pub type Verdict = Option<Result<(usize, bool, bool, bool), ()>>;

    /// Parses a request head as the endpoint does.
    pub fn parse(buf: &[u8]) -> Verdict {
        match crate::http::parse(buf) {
            Parsed::Incomplete => None,
            Parsed::Complete { request, consumed } => Some(Ok((
                consumed,
                request.keep_alive,
                request.gzip,
                request.metrics,
            ))),
            Parsed::Invalid(_) => Some(Err(())),
        }
    }
}
