//! The metric families: the Prometheus plug-in's, with the same names (so a
//! Collector exporting to Prometheus shows the same series), mapped to OTLP's
//! data model — counters as monotonic cumulative Sums, last values as Gauges,
//! latencies as explicit-bucket Histograms, errors as one Sum with a `status`
//! attribute.

use nixl_telemetry_abi::Category;

/// Indices of an agent's fixed 64-bit readings.
pub(crate) mod slot {
    pub(crate) const TX_BYTES: usize = 0;
    pub(crate) const RX_BYTES: usize = 1;
    pub(crate) const TX_REQUESTS: usize = 2;
    pub(crate) const RX_REQUESTS: usize = 3;
    pub(crate) const TX_LAST: usize = 4;
    pub(crate) const RX_LAST: usize = 5;
    pub(crate) const MEM_REGISTERED: usize = 6;
    pub(crate) const MEM_DEREGISTERED: usize = 7;
    pub(crate) const MEM_REGISTERED_LAST: usize = 8;
    pub(crate) const MEM_DEREGISTERED_LAST: usize = 9;
    pub(crate) const XFER_TIME: usize = 10;
    pub(crate) const POST_TIME: usize = 11;
    pub(crate) const XFER_LAST: usize = 12;
    pub(crate) const POST_LAST: usize = 13;
    pub(crate) const DROPPED: usize = 14;
    pub(crate) const UNMAPPED: usize = 15;
    /// How many slots there are.
    pub(crate) const COUNT: usize = 16;
}

/// The OTLP shape of a scalar family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A monotonic cumulative Sum.
    Counter,
    /// A Gauge (the last value).
    Gauge,
}

/// Where a scalar family's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// One slot.
    Slot(usize),
    /// Registered minus deregistered bytes (may be negative).
    RegisteredNow,
}

/// A family with one data point per agent.
#[derive(Debug)]
pub(crate) struct Scalar {
    pub(crate) name: &'static str,
    pub(crate) description: &'static str,
    pub(crate) shape: Shape,
    pub(crate) category: Category,
    pub(crate) source: Source,
}

const fn counter(
    name: &'static str,
    description: &'static str,
    category: Category,
    slot: usize,
) -> Scalar {
    Scalar {
        name,
        description,
        shape: Shape::Counter,
        category,
        source: Source::Slot(slot),
    }
}

const fn gauge(
    name: &'static str,
    description: &'static str,
    category: Category,
    slot: usize,
) -> Scalar {
    Scalar {
        name,
        description,
        shape: Shape::Gauge,
        category,
        source: Source::Slot(slot),
    }
}

/// The scalar families, in the Prometheus plug-in's order.
pub(crate) const SCALARS: [Scalar; 17] = [
    counter("agent_tx_bytes_total", "Bytes sent by completed transfers (sum of agent_tx_bytes events).", Category::TRANSFER, slot::TX_BYTES),
    counter("agent_rx_bytes_total", "Bytes received by completed transfers (sum of agent_rx_bytes events).", Category::TRANSFER, slot::RX_BYTES),
    counter("agent_tx_requests_num_total", "Completed sending transfer requests (sum of agent_tx_requests_num events).", Category::TRANSFER, slot::TX_REQUESTS),
    counter("agent_rx_requests_num_total", "Completed receiving transfer requests (sum of agent_rx_requests_num events).", Category::TRANSFER, slot::RX_REQUESTS),
    gauge("agent_tx_last_bytes", "Bytes of the most recent sending transfer.", Category::TRANSFER, slot::TX_LAST),
    gauge("agent_rx_last_bytes", "Bytes of the most recent receiving transfer.", Category::TRANSFER, slot::RX_LAST),
    counter("agent_memory_registered_total", "Bytes of memory registered, summed over all registrations.", Category::MEMORY, slot::MEM_REGISTERED),
    counter("agent_memory_deregistered_total", "Bytes of memory deregistered, summed over all deregistrations.", Category::MEMORY, slot::MEM_DEREGISTERED),
    gauge("agent_memory_registered_last_bytes", "Bytes of the most recent memory registration.", Category::MEMORY, slot::MEM_REGISTERED_LAST),
    gauge("agent_memory_deregistered_last_bytes", "Bytes of the most recent memory deregistration.", Category::MEMORY, slot::MEM_DEREGISTERED_LAST),
    Scalar {
        name: "agent_memory_registered_bytes",
        description: "Bytes of memory registered now: registered minus deregistered.",
        shape: Shape::Gauge,
        category: Category::MEMORY,
        source: Source::RegisteredNow,
    },
    counter("agent_xfer_time_total", "Microseconds spent in completed transfers, summed (sum of agent_xfer_time events).", Category::PERFORMANCE, slot::XFER_TIME),
    counter("agent_xfer_post_time_total", "Microseconds spent posting transfers, summed (sum of agent_xfer_post_time events).", Category::PERFORMANCE, slot::POST_TIME),
    gauge("agent_xfer_time", "Microseconds of the most recent completed transfer.", Category::PERFORMANCE, slot::XFER_LAST),
    gauge("agent_xfer_post_time", "Microseconds of the most recent transfer post.", Category::PERFORMANCE, slot::POST_LAST),
    counter("agent_telemetry_events_dropped_total", "Telemetry events lost before export (sum of agent_telemetry_events_dropped events).", Category::SYSTEM, slot::DROPPED),
    counter("agent_telemetry_unmapped_events_total", "Events this exporter could not map to a series: unknown categories, and names past the per-agent limit of distinct names.", Category::SYSTEM, slot::UNMAPPED),
];

/// A latency histogram.
#[derive(Debug)]
pub(crate) struct Histogram {
    pub(crate) name: &'static str,
    pub(crate) description: &'static str,
}

/// The latency histograms: 0 observes `agent_xfer_time`, 1 `agent_xfer_post_time`.
pub(crate) const HISTOGRAMS: [Histogram; 2] = [
    Histogram {
        name: "agent_xfer_time_us",
        description: "Distribution of completed transfer times, microseconds.",
    },
    Histogram {
        name: "agent_xfer_post_time_us",
        description: "Distribution of transfer post times, microseconds.",
    },
];

/// The NIXL error statuses every agent shows from its creation, at 0: the
/// status strings without `NIXL_ERR_`, lower case.
pub const KNOWN_ERROR_STATUSES: [&str; 12] = [
    "not_posted",
    "invalid_param",
    "backend",
    "not_found",
    "mismatch",
    "not_allowed",
    "repost_active",
    "unknown",
    "not_supported",
    "remote_disconnect",
    "canceled",
    "no_telemetry",
];

/// The Sum of errors, with a `status` attribute.
pub(crate) const ERRORS_NAME: &str = "agent_errors_total";
/// Its description.
pub(crate) const ERRORS_DESCRIPTION: &str =
    "Errors by status (lower case, without NIXL_ERR_); each error event counts one.";
/// The description of every per-name Sum.
pub(crate) const PER_NAME_DESCRIPTION: &str = "Sum of the values of the events with this name (backend, connection, custom and other non-built-in events), by category.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_each_used_once() {
        let mut seen = [0; slot::COUNT];
        for s in &SCALARS {
            if let Source::Slot(i) = s.source {
                seen[i] += 1;
            }
        }
        assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
    }

    #[test]
    fn counters_end_in_total_and_gauges_do_not() {
        for s in &SCALARS {
            assert_eq!(
                s.name.ends_with("_total"),
                s.shape == Shape::Counter,
                "{}",
                s.name
            );
        }
    }
}
