//! `nixl_telemetry_stats_t`: the accounting, copied into a caller's struct.

use nixl_telemetry::TelemetryStats;

/// `nixl_telemetry_stats_t`, version 1 (80 bytes).
///
/// The caller sets `struct_size` to `sizeof(nixl_telemetry_stats_t)` as its
/// header declares it; the library fills the fields both know and zeroes the
/// bytes past the fields it knows, so fields can be appended in later
/// versions (a new drop cause, say) without breaking either side.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NixlTelemetryStats {
    /// `sizeof(nixl_telemetry_stats_t)` as the caller knows it (left unchanged).
    pub struct_size: u32,
    /// Zero.
    pub reserved: u32,
    /// Events that passed the enable switch and the allowlist.
    pub recorded: u64,
    /// Events telemetry produced itself (`agent_telemetry_events_dropped`).
    pub generated: u64,
    /// Events the exporter accepted.
    pub delivered: u64,
    /// Events staged, not yet flushed.
    pub pending: u64,
    /// Events lost, all causes together.
    pub dropped_total: u64,
    /// Lost because a recording thread's staging queue was full.
    pub dropped_staging_full: u64,
    /// Lost because the exporter had no room (a ring that no reader drains).
    pub dropped_exporter_full: u64,
    /// Lost because the exporter (a plug-in) failed.
    pub dropped_exporter_failed: u64,
    /// Recorded too late: while the thread was exiting, or through a handle
    /// whose telemetry was destroyed.
    pub dropped_late: u64,
    /// Lost because the chosen ring version has no type for the event
    /// (version 2 of the struct).
    pub dropped_format: u64,
}

/// `NIXL_TELEMETRY_STATS_V1_SIZE`: the size of version 1 of the stats, the smallest accepted.
pub const STATS_V1_SIZE: usize = 80;

/// `NIXL_TELEMETRY_STATS_V2_SIZE`: the size of version 2 (adds `dropped_format`).
pub const STATS_V2_SIZE: usize = 88;

/// The size of the stats this library knows (grows when fields are appended).
pub const STATS_KNOWN_SIZE: usize = std::mem::size_of::<NixlTelemetryStats>();

const _: () = assert!(STATS_KNOWN_SIZE >= STATS_V1_SIZE);
const _: () = assert!(std::mem::align_of::<NixlTelemetryStats>() == crate::settings::STRUCT_ALIGN);

impl NixlTelemetryStats {
    /// The C form of `stats`, with `struct_size` set to what the caller gave.
    pub fn from_stats(stats: &TelemetryStats, struct_size: u32) -> NixlTelemetryStats {
        NixlTelemetryStats {
            struct_size,
            reserved: 0,
            recorded: stats.recorded,
            generated: stats.generated,
            delivered: stats.delivered,
            pending: stats.pending,
            dropped_total: stats.dropped.total(),
            dropped_staging_full: stats.dropped.staging_full,
            dropped_exporter_full: stats.dropped.exporter_full,
            dropped_exporter_failed: stats.dropped.exporter_failed,
            dropped_late: stats.dropped.late,
            dropped_format: stats.dropped.format,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counter_is_carried_over() {
        let stats = TelemetryStats {
            recorded: 1,
            generated: 2,
            delivered: 3,
            pending: 4,
            dropped: nixl_telemetry::DropCounts {
                staging_full: 5,
                exporter_full: 6,
                exporter_failed: 7,
                late: 8,
                format: 9,
            },
        };
        let c = NixlTelemetryStats::from_stats(&stats, 99);
        assert_eq!(
            (
                c.struct_size,
                c.recorded,
                c.generated,
                c.delivered,
                c.pending
            ),
            (99, 1, 2, 3, 4)
        );
        assert_eq!(
            (
                c.dropped_staging_full,
                c.dropped_exporter_full,
                c.dropped_exporter_failed,
                c.dropped_late,
                c.dropped_format
            ),
            (5, 6, 7, 8, 9)
        );
        assert_eq!(c.dropped_total, stats.dropped.total());
        assert_eq!(std::mem::size_of::<NixlTelemetryStats>(), STATS_V2_SIZE);
    }
}
