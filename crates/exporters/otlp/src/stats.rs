//! What became of the exports: counters shared by the flush threads and the
//! export thread, read by [`crate::OtlpExporter::stats`] and sent as the
//! exporter's own metrics (`nixl_telemetry_otlp_*`).

use std::sync::atomic::{AtomicU64, Ordering};

/// Running totals of one export pipeline (all agents of a process that share
/// its settings), since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportStats {
    /// Metric requests the collector accepted (fully or in part).
    pub metric_requests_delivered: u64,
    /// Metric request attempts that failed and were retried (or superseded).
    pub metric_requests_retried: u64,
    /// Metric requests given up: refused for good by the collector, or still
    /// undelivered at shutdown.
    pub metric_requests_dropped: u64,
    /// Undelivered metric requests replaced by a newer one before a retry
    /// succeeded. Nothing is lost: the newer one carries the cumulative totals.
    pub metric_requests_superseded: u64,
    /// Data points the collector rejected in partial-success answers.
    pub metric_points_rejected: u64,
    /// Log requests the collector accepted (fully or in part).
    pub log_requests_delivered: u64,
    /// Log request attempts that failed and were retried.
    pub log_requests_retried: u64,
    /// Log requests given up.
    pub log_requests_dropped: u64,
    /// Events the collector accepted as log records.
    pub events_exported: u64,
    /// Events refused because the events queue was full; the host counts
    /// these as lost too (the export call that handed them over failed).
    pub events_lost_queue_full: u64,
    /// Events the collector rejected in partial-success answers.
    pub events_lost_rejected: u64,
    /// Events in log requests given up.
    pub events_lost_undeliverable: u64,
    /// Events waiting to be sent now.
    pub events_queued: u64,
    /// Events the exporters of the pipeline accepted (folded into their
    /// metrics), whatever became of them.
    pub events_accepted: u64,
    /// Of those, events counted in metric totals the collector accepted.
    pub events_in_delivered_metrics: u64,
}

impl ExportStats {
    /// Every event lost, whatever the cause.
    pub fn events_lost(&self) -> u64 {
        self.events_lost_queue_full + self.events_lost_rejected + self.events_lost_undeliverable
    }
}

/// The shared counters behind [`ExportStats`].
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) metric_requests_delivered: AtomicU64,
    pub(crate) metric_requests_retried: AtomicU64,
    pub(crate) metric_requests_dropped: AtomicU64,
    pub(crate) metric_requests_superseded: AtomicU64,
    pub(crate) metric_points_rejected: AtomicU64,
    pub(crate) log_requests_delivered: AtomicU64,
    pub(crate) log_requests_retried: AtomicU64,
    pub(crate) log_requests_dropped: AtomicU64,
    pub(crate) events_exported: AtomicU64,
    pub(crate) events_lost_queue_full: AtomicU64,
    pub(crate) events_lost_rejected: AtomicU64,
    pub(crate) events_lost_undeliverable: AtomicU64,
    pub(crate) events_queued: AtomicU64,
    pub(crate) events_accepted: AtomicU64,
    pub(crate) events_in_delivered_metrics: AtomicU64,
}

/// Adds `n` to `counter`.
pub(crate) fn bump(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

impl Counters {
    /// The current totals.
    pub(crate) fn snapshot(&self) -> ExportStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ExportStats {
            metric_requests_delivered: get(&self.metric_requests_delivered),
            metric_requests_retried: get(&self.metric_requests_retried),
            metric_requests_dropped: get(&self.metric_requests_dropped),
            metric_requests_superseded: get(&self.metric_requests_superseded),
            metric_points_rejected: get(&self.metric_points_rejected),
            log_requests_delivered: get(&self.log_requests_delivered),
            log_requests_retried: get(&self.log_requests_retried),
            log_requests_dropped: get(&self.log_requests_dropped),
            events_exported: get(&self.events_exported),
            events_lost_queue_full: get(&self.events_lost_queue_full),
            events_lost_rejected: get(&self.events_lost_rejected),
            events_lost_undeliverable: get(&self.events_lost_undeliverable),
            events_queued: get(&self.events_queued),
            events_accepted: get(&self.events_accepted),
            events_in_delivered_metrics: get(&self.events_in_delivered_metrics),
        }
    }
}
