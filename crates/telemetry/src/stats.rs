//! Counters a telemetry instance exposes about itself.

/// Events lost, by cause. All are running totals since creation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DropCounts {
    /// A recording thread's staging buffer was full.
    pub staging_full: u64,
    /// The exporter had no room (the ring was full: no reader keeps up).
    pub exporter_full: u64,
    /// The exporter failed (a plug-in returned an error or panicked).
    pub exporter_failed: u64,
    /// The exporter's format cannot carry the event: the ring version chosen
    /// with `NIXL_TELEMETRY_RING_VERSION` has no event type for its name.
    pub format: u64,
    /// Recorded while the recording thread was being torn down, through a
    /// handle after its telemetry was dropped, or on a thread for which no
    /// staging queue could be allocated.
    pub late: u64,
}

impl DropCounts {
    /// All causes together.
    pub fn total(&self) -> u64 {
        self.staging_full + self.exporter_full + self.exporter_failed + self.format + self.late
    }
}

/// A snapshot of one telemetry instance's accounting.
///
/// After a [`flush`](crate::Telemetry::flush) with no concurrent recording,
/// `recorded + generated == delivered + dropped.total() + pending` holds exactly,
/// and `pending` is 0 unless the instance only collects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TelemetryStats {
    /// Events that passed the enable switch and the allowlist.
    pub recorded: u64,
    /// Events telemetry produced itself (`agent_telemetry_events_dropped`).
    pub generated: u64,
    /// Events the exporter accepted (or `drain` handed out when collecting only).
    pub delivered: u64,
    /// Events staged and not yet flushed.
    pub pending: u64,
    /// Events lost, by cause.
    pub dropped: DropCounts,
}
