//! The OTLP exporter, without plug-in entry points: the plug-in
//! `libtelemetry_exporter_otlp.so` (selected with
//! `NIXL_TELEMETRY_EXPORTER=otlp`) is `crates/plugins/otlp`, an
//! `export_plugin!` around [`OtlpExporter`].
//!
//! Each exporter (one per agent) folds the events the host flushes into the
//! Prometheus plug-in's metric families, and a thread of the plug-in pushes
//! them to an OpenTelemetry Collector over OTLP/HTTP (binary protobuf, the
//! OpenTelemetry project's own message definitions) every export interval:
//! counters as monotonic cumulative Sums, last values as Gauges, latencies as
//! explicit-bucket Histograms, errors as one Sum with a `status` attribute.
//! Agents of one process with the same settings share one pipeline and one
//! request per export. With `NIXL_TELEMETRY_OTLP_EVENTS=1` every event is also
//! sent as an OTLP log record. See `docs/otlp.md`.
//!
//! The parts: [`settings`] (the `OTEL_*` and `NIXL_TELEMETRY_*` variables),
//! the flush thread's totals (the metric model of `nixl-telemetry-metrics`,
//! [`AgentMetrics`]), [`encode`] (OTLP messages),
//! `pipeline` (process-wide sharing and the hand-off), `worker` (the export
//! thread: interval, retries, shutdown), `transport` (HTTP), [`stats`].
//!
//! The host's flush thread never waits on the network: it folds events into
//! plain totals, publishes them with a `try_lock`, and hands events for logs
//! to a bounded queue; a batch the queue cannot take is refused (the export
//! call fails and the host counts the batch as lost).

#![forbid(unsafe_code)]

pub mod encode;
mod error;
mod families;
mod pipeline;
pub mod settings;
pub mod stats;
mod transport;
mod worker;

use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;
use std::sync::{Arc, TryLockError};

use nixl_telemetry_abi::rust_plugin::{
    full_message, PluginDelivery, RustPluginExporter, RustPluginParams,
};
use nixl_telemetry_abi::Event;

pub use error::OtlpError;
/// The histogram bounds and their parser: the ones of every exporter.
pub use nixl_telemetry_abi::buckets;
pub use nixl_telemetry_abi::buckets::Buckets;
pub use nixl_telemetry_abi::names::ERROR_STATUSES;
use nixl_telemetry_metrics::{AgentMetrics, SeriesNaming};
pub use settings::{Compression, Settings, SettingsError, SignalSettings};
pub use stats::ExportStats;
pub use transport::MAX_RETRY_AFTER;
pub use worker::MAX_LOG_RECORDS_PER_REQUEST;

use pipeline::{AgentSlot, EventBatch, Message, Pipeline};

/// The events handed over were refused: the events queue is full (the
/// collector is down or slow). They are counted as lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
// The text is the same for every refused batch (hosts may log each distinct
// reason once); the count is in `events`.
#[error("batch refused: the OTLP events queue is full (at most {capacity} events wait to be sent; NIXL_TELEMETRY_OTLP_QUEUE_EVENTS); the collector is down or slow")]
pub struct QueueFull {
    /// Events refused.
    pub events: usize,
    /// The queue's bound.
    pub capacity: usize,
}

/// The exporter of one agent.
///
/// Creating it joins (or starts) the pipeline for its settings; dropping it
/// publishes its final totals, which the pipeline sends once more; the last
/// agent of a pipeline stops it after a final export.
#[derive(Debug)]
pub struct OtlpExporter {
    aggregator: AgentMetrics,
    slot: Arc<AgentSlot>,
    pipeline: Arc<Pipeline>,
    events: Option<Sender<Message>>,
    unpublished: bool,
    /// Events folded into `aggregator`.
    recorded: u64,
}

impl OtlpExporter {
    /// Creates the exporter of `agent_name` with explicit settings (the plug-in
    /// entry point reads them from the environment with [`Settings::from_env`]).
    pub fn with_settings(agent_name: &str, settings: &Settings) -> Result<OtlpExporter, OtlpError> {
        let (pipeline, slot) = pipeline::attach(agent_name, settings)?;
        let aggregator =
            AgentMetrics::new(agent_name, settings.buckets.clone(), SeriesNaming::Otlp);
        pipeline::lock(&slot.published).copy_from(aggregator.totals());
        let events = settings.events.then(|| pipeline.sender());
        Ok(OtlpExporter {
            aggregator,
            slot,
            pipeline,
            events,
            unpublished: false,
            recorded: 0,
        })
    }

    /// The agent's name.
    pub fn agent_name(&self) -> &str {
        &self.slot.name
    }

    /// The settings of this exporter's pipeline.
    pub fn settings(&self) -> &Settings {
        &self.pipeline.settings
    }

    /// Folds `events` into the agent's metrics and, when events are sent as
    /// logs, queues them. Never blocks. When the events queue cannot take the
    /// whole batch, nothing of it is used (`Err`): it is lost, and counted.
    pub fn record(&mut self, events: &[Event]) -> Result<(), QueueFull> {
        if events.is_empty() {
            return Ok(());
        }
        if let Some(sender) = &self.events {
            let counters = &self.pipeline.counters;
            let n = events.len() as u64;
            let capacity = self.pipeline.settings.queue_events as u64;
            let before = counters.events_queued.fetch_add(n, Ordering::Relaxed);
            let refused = || {
                counters.events_queued.fetch_sub(n, Ordering::Relaxed);
                stats::bump(&counters.events_lost_queue_full, n);
                QueueFull {
                    events: events.len(),
                    capacity: capacity as usize,
                }
            };
            if before + n > capacity {
                return Err(refused());
            }
            let batch = EventBatch {
                agent: Arc::clone(&self.slot.name),
                events: events.to_vec(),
            };
            if sender.send(Message::Events(batch)).is_err() {
                return Err(refused());
            }
        }
        self.aggregator.record(events);
        self.recorded += events.len() as u64;
        stats::bump(&self.pipeline.counters.events_accepted, events.len() as u64);
        self.unpublished = true;
        Ok(())
    }

    /// Makes the totals visible to the export thread. Never waits: if the
    /// export thread is reading them at this moment, they are published at the
    /// next call.
    pub fn publish(&mut self) {
        if !self.unpublished {
            return;
        }
        let mut published = match self.slot.published.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => return,
        };
        published.copy_from(self.aggregator.totals());
        self.slot
            .published_events
            .store(self.recorded, Ordering::Relaxed);
        self.unpublished = false;
    }

    /// What became of this pipeline's exports so far.
    pub fn stats(&self) -> ExportStats {
        self.pipeline.counters.snapshot()
    }
}

impl Drop for OtlpExporter {
    fn drop(&mut self) {
        {
            let mut published = pipeline::lock(&self.slot.published);
            published.copy_from(self.aggregator.totals());
            self.slot
                .published_events
                .store(self.recorded, Ordering::Relaxed);
        }
        pipeline::detach(&self.pipeline, &self.slot);
    }
}

impl RustPluginExporter for OtlpExporter {
    fn create(params: &RustPluginParams<'_>) -> Result<Self, String> {
        let settings = Settings::from_env(params.output_path).map_err(|e| full_message(&e))?;
        OtlpExporter::with_settings(params.agent_name, &settings).map_err(|e| full_message(&e))
    }

    fn export_batch(&mut self, events: &[Event]) -> Result<(), String> {
        let result = self.record(events).map_err(|e| e.to_string());
        // Also here, not only in `flush`: a host that never flushes still
        // exports (a publish is a copy of the totals, and never waits).
        self.publish();
        result
    }

    fn flush(&mut self) -> Result<(), String> {
        self.publish();
        Ok(())
    }

    fn delivery() -> Option<PluginDelivery> {
        Some(delivery())
    }
}

/// What became of the events every exporter of this process accepted:
/// accepted, delivered (counted in metric totals the collector accepted),
/// undelivered (of stopped pipelines, never delivered); the rest are on
/// their way.
pub fn delivery() -> PluginDelivery {
    let (events_accepted, events_delivered, events_undelivered) = pipeline::delivery();
    PluginDelivery {
        events_accepted,
        events_delivered,
        events_undelivered,
    }
}
