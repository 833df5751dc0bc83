//! The per-agent metric model of NIXL telemetry: one definition of what the
//! exporters (Prometheus, `prometheus_mp`, OTLP), the sidecar and the live
//! view make of an agent's events.
//!
//! As metrics-util owns storage and metrics-exporter-prometheus only renders,
//! this crate owns the model and the exporters differ only in how they
//! publish it:
//!
//! * [`AgentMetrics`] folds events into plain per-agent totals, built from
//!   [`nixl_telemetry_abi::names`]: fixed readings ([`slot`]), two latency
//!   histograms ([`histogram`]) and run-time series ([`Series`]: error
//!   statuses, with the known `NIXL_ERR_*` statuses there from the start, and
//!   per-name counters), whose number is bounded ([`MAX_NAMES_PER_AGENT`];
//!   further names are counted in `agent_telemetry_unmapped_events_total`,
//!   with one warning). [`AgentMetrics::changes`] tells a publisher what to
//!   copy.
//! * [`Totals`] is the read view: plain numbers, cheap to clone or copy,
//!   [`Totals::since`] subtracts two readings (rates), and
//!   [`HistogramTotals::quantile`] estimates a quantile as Prometheus's
//!   `histogram_quantile` does.
//! * [`families`] holds the fixed families (names, types, help texts, the
//!   known error statuses), [`naming`] how event names become metric names,
//!   [`mapping`] what each event does.
//!
//! The model only models: the Prometheus text renderer is the Prometheus
//! exporter's (`nixl-telemetry-prometheus`). The Prometheus plug-in publishes
//! the totals into atomics behind a sequence lock and renders them on a scrape; `prometheus_mp` publishes
//! them into its shared-memory store and renders every rank's; the OTLP
//! plug-in copies them and pushes them over HTTP. See `docs/metrics.md`.
//!
//! ```
//! use nixl_telemetry_abi::buckets::Buckets;
//! use nixl_telemetry_abi::{Category, Event};
//! use nixl_telemetry_metrics::{slot, AgentMetrics, SeriesNaming};
//!
//! let buckets = Buckets::default();
//! let mut agent = AgentMetrics::new("initiator", buckets, SeriesNaming::Prometheus);
//! agent.record(&[Event::new(1, Category::TRANSFER, "agent_tx_bytes", 4096)]);
//! assert_eq!(agent.totals().fixed(slot::TX_BYTES), 4096);
//! ```

#![forbid(unsafe_code)]

mod agent;
pub mod families;
mod hostname;
pub mod mapping;
mod name_cache;
pub mod naming;
mod series;
mod totals;

pub use agent::{AgentMetrics, Changes};
pub use families::{histogram, slot};
pub use hostname::hostname;
pub use mapping::EventEffect;
pub use naming::{SeriesNaming, MAX_SERIES_NAME_LEN};
pub use series::{Series, MAX_NAMES_PER_AGENT, MAX_SERIES};
pub use totals::{HistogramTotals, Totals};

/// The histogram bounds and their parser, shared with every part
/// (`nixl_telemetry_abi::buckets`).
pub use nixl_telemetry_abi::buckets::{Buckets, BucketsError};
