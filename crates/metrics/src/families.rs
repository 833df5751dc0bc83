//! The fixed metric families every agent has from its creation, and the names
//! they take: the one definition of the families the Prometheus plug-ins
//! expose and the OTLP plug-in sends.

use nixl_telemetry_abi::Category;

/// Indices of an agent's fixed 64-bit readings (counters and last values).
pub mod slot {
    /// Bytes sent (`agent_tx_bytes`), summed.
    pub const TX_BYTES: usize = 0;
    /// Bytes received (`agent_rx_bytes`), summed.
    pub const RX_BYTES: usize = 1;
    /// Sending requests (`agent_tx_requests_num`), summed.
    pub const TX_REQUESTS: usize = 2;
    /// Receiving requests (`agent_rx_requests_num`), summed.
    pub const RX_REQUESTS: usize = 3;
    /// The last `agent_tx_bytes` value.
    pub const TX_LAST: usize = 4;
    /// The last `agent_rx_bytes` value.
    pub const RX_LAST: usize = 5;
    /// Bytes registered (`agent_memory_registered`), summed.
    pub const MEM_REGISTERED: usize = 6;
    /// Bytes deregistered (`agent_memory_deregistered`), summed.
    pub const MEM_DEREGISTERED: usize = 7;
    /// The last `agent_memory_registered` value.
    pub const MEM_REGISTERED_LAST: usize = 8;
    /// The last `agent_memory_deregistered` value.
    pub const MEM_DEREGISTERED_LAST: usize = 9;
    /// Transfer times (`agent_xfer_time`), µs, summed.
    pub const XFER_TIME: usize = 10;
    /// Post times (`agent_xfer_post_time`), µs, summed.
    pub const POST_TIME: usize = 11;
    /// The last `agent_xfer_time` value.
    pub const XFER_LAST: usize = 12;
    /// The last `agent_xfer_post_time` value.
    pub const POST_LAST: usize = 13;
    /// Events dropped before export (`agent_telemetry_events_dropped`), summed.
    pub const DROPPED: usize = 14;
    /// Events no series could take.
    pub const UNMAPPED: usize = 15;
    /// How many slots there are.
    pub const COUNT: usize = 16;
}

/// A metric type as far as the exposition is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only grows; the sample name ends in `_total`.
    Counter,
    /// A value that may go up and down (the last one seen).
    Gauge,
}

/// Where a scalar family's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// One slot.
    Slot(usize),
    /// Registered minus deregistered bytes (may be negative).
    RegisteredNow,
}

/// A family with one series per agent.
#[derive(Debug)]
pub struct Scalar {
    /// The sample name (with `_total` for counters).
    pub sample: &'static str,
    /// The `# HELP` text.
    pub help: &'static str,
    /// Counter or gauge.
    pub kind: Kind,
    /// The category of the events it is made of.
    pub category: Category,
    /// Where its value comes from.
    pub source: Source,
}

/// The scalar families in exposition order. The help texts of the families
/// NIXL 1.5.1's own plug-in has are its words, so the two expositions agree
/// line for line; the two families of ours only say what they are. The last [`SYSTEM_SCALARS`] are
/// written after the histograms and errors.
pub const SCALARS: [Scalar; 17] = [
    Scalar {
        sample: "agent_tx_bytes_total",
        help: "Number of bytes sent by the agent",
        kind: Kind::Counter,
        category: Category::TRANSFER,
        source: Source::Slot(slot::TX_BYTES),
    },
    Scalar {
        sample: "agent_rx_bytes_total",
        help: "Number of bytes received by the agent",
        kind: Kind::Counter,
        category: Category::TRANSFER,
        source: Source::Slot(slot::RX_BYTES),
    },
    Scalar {
        sample: "agent_tx_requests_num_total",
        help: "Number of requests sent by the agent",
        kind: Kind::Counter,
        category: Category::TRANSFER,
        source: Source::Slot(slot::TX_REQUESTS),
    },
    Scalar {
        sample: "agent_rx_requests_num_total",
        help: "Number of requests received by the agent",
        kind: Kind::Counter,
        category: Category::TRANSFER,
        source: Source::Slot(slot::RX_REQUESTS),
    },
    Scalar {
        sample: "agent_tx_last_bytes",
        help: "Bytes sent by the last request",
        kind: Kind::Gauge,
        category: Category::TRANSFER,
        source: Source::Slot(slot::TX_LAST),
    },
    Scalar {
        sample: "agent_rx_last_bytes",
        help: "Bytes received by the last request",
        kind: Kind::Gauge,
        category: Category::TRANSFER,
        source: Source::Slot(slot::RX_LAST),
    },
    Scalar {
        sample: "agent_memory_registered_total",
        help: "Cumulative memory registered",
        kind: Kind::Counter,
        category: Category::MEMORY,
        source: Source::Slot(slot::MEM_REGISTERED),
    },
    Scalar {
        sample: "agent_memory_deregistered_total",
        help: "Cumulative memory deregistered",
        kind: Kind::Counter,
        category: Category::MEMORY,
        source: Source::Slot(slot::MEM_DEREGISTERED),
    },
    Scalar {
        sample: "agent_memory_registered_last_bytes",
        help: "Memory registered by the last operation",
        kind: Kind::Gauge,
        category: Category::MEMORY,
        source: Source::Slot(slot::MEM_REGISTERED_LAST),
    },
    Scalar {
        sample: "agent_memory_deregistered_last_bytes",
        help: "Memory deregistered by the last operation",
        kind: Kind::Gauge,
        category: Category::MEMORY,
        source: Source::Slot(slot::MEM_DEREGISTERED_LAST),
    },
    Scalar {
        sample: "agent_memory_registered_bytes",
        help: "Bytes of memory registered now: registered minus deregistered.",
        kind: Kind::Gauge,
        category: Category::MEMORY,
        source: Source::RegisteredNow,
    },
    Scalar {
        sample: "agent_xfer_time_total",
        help: "Cumulative sum of transfer time from start to completion",
        kind: Kind::Counter,
        category: Category::PERFORMANCE,
        source: Source::Slot(slot::XFER_TIME),
    },
    Scalar {
        sample: "agent_xfer_post_time_total",
        help: "Cumulative sum of time from start to posting to the back-end",
        kind: Kind::Counter,
        category: Category::PERFORMANCE,
        source: Source::Slot(slot::POST_TIME),
    },
    Scalar {
        sample: "agent_xfer_time",
        help: "Transfer time of the last request",
        kind: Kind::Gauge,
        category: Category::PERFORMANCE,
        source: Source::Slot(slot::XFER_LAST),
    },
    Scalar {
        sample: "agent_xfer_post_time",
        help: "Post time of the last request",
        kind: Kind::Gauge,
        category: Category::PERFORMANCE,
        source: Source::Slot(slot::POST_LAST),
    },
    Scalar {
        sample: "agent_telemetry_events_dropped_total",
        help: "Cumulative telemetry events dropped at the producer-side staging queue",
        kind: Kind::Counter,
        category: Category::SYSTEM,
        source: Source::Slot(slot::DROPPED),
    },
    Scalar {
        sample: "agent_telemetry_unmapped_events_total",
        help: "Events this exporter could not map to a series: unknown categories, and names past the per-agent limit of distinct names.",
        kind: Kind::Counter,
        category: Category::SYSTEM,
        source: Source::Slot(slot::UNMAPPED),
    },
];

/// How many of the last [`SCALARS`] are telemetry's own (written last).
pub const SYSTEM_SCALARS: usize = 2;

/// Indices of an agent's latency histograms ([`HISTOGRAMS`],
/// [`Totals::histogram`](crate::Totals::histogram)).
pub mod histogram {
    /// `agent_xfer_time_us`: transfer times (`agent_xfer_time` events), µs.
    pub const XFER_TIME: usize = 0;
    /// `agent_xfer_post_time_us`: post times (`agent_xfer_post_time` events), µs.
    pub const POST_TIME: usize = 1;
    /// How many histograms there are.
    pub const COUNT: usize = 2;
}

/// A latency histogram family.
#[derive(Debug)]
pub struct HistogramFamily {
    /// The family name; samples add `_bucket`, `_sum` and `_count`.
    pub family: &'static str,
    /// The `# HELP` text.
    pub help: &'static str,
    /// The slot holding the sum of the observed values.
    pub sum_slot: usize,
}

/// The latency histograms, in exposition order (indexed by [`histogram`]).
pub const HISTOGRAMS: [HistogramFamily; histogram::COUNT] = [
    HistogramFamily {
        family: "agent_xfer_time_us",
        help: "Distribution of transfer time from start to completion, in microseconds",
        sum_slot: slot::XFER_TIME,
    },
    HistogramFamily {
        family: "agent_xfer_post_time_us",
        help: "Distribution of time from start to posting to the back-end, in microseconds",
        sum_slot: slot::POST_TIME,
    },
];

/// The family of error counters, labelled by `status`.
pub const ERRORS_SAMPLE: &str = "agent_errors_total";
/// Its help text.
pub const ERRORS_HELP: &str = "Cumulative error count by status";

/// The help text of every per-name family.
pub const PER_NAME_HELP: &str = "Sum of the values of the events with this name (backend, connection, custom and other non-built-in events), by category.";

/// Whether the OpenMetrics family name of counter `sample` (the name without
/// `_total`) is also the name of another family here, in which case the
/// counter is exposed as type `unknown` under its full name in OpenMetrics
/// (`agent_xfer_time_total` beside the gauge `agent_xfer_time`).
pub fn om_counter_collides(sample: &str) -> bool {
    match sample.strip_suffix("_total") {
        Some(family) => SCALARS.iter().any(|s| s.sample == family),
        None => true,
    }
}

/// Whether `name` is a sample or family name the fixed agent families use (in
/// either exposition format): a scalar's sample, a counter's name without
/// `_total`, a histogram's family or one of its samples, the errors' family.
pub fn is_agent_family_name(name: &str) -> bool {
    let scalar = SCALARS.iter().any(|s| {
        s.sample == name
            || (s.kind == Kind::Counter && s.sample.strip_suffix("_total") == Some(name))
    });
    let histogram = HISTOGRAMS.iter().any(|h| {
        name.strip_prefix(h.family)
            .is_some_and(|rest| matches!(rest, "" | "_bucket" | "_sum" | "_count" | "_created"))
    });
    scalar
        || histogram
        || name == ERRORS_SAMPLE
        || ERRORS_SAMPLE.strip_suffix("_total") == Some(name)
}

/// The prefix of the Prometheus HTTP endpoint's own families
/// (`exposer_transferred_bytes_total`, `exposer_scrapes_total`,
/// `exposer_request_latencies`, as NIXL's plug-in has them beside its
/// agents'): a per-name counter of a Prometheus exposition never takes a
/// name with it ([`SeriesNaming::Prometheus`](crate::SeriesNaming::Prometheus)).
pub const EXPOSER_PREFIX: &str = "exposer_";

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
        assert_eq!(seen, [1; slot::COUNT]);
        assert!(SCALARS[SCALARS.len() - SYSTEM_SCALARS..]
            .iter()
            .all(|s| s.sample.starts_with("agent_telemetry_")));
    }

    #[test]
    fn counters_end_in_total_and_others_do_not() {
        for s in &SCALARS {
            assert_eq!(
                s.sample.ends_with("_total"),
                s.kind == Kind::Counter,
                "{}",
                s.sample
            );
        }
    }

    #[test]
    fn only_the_time_sums_collide_in_openmetrics() {
        let colliding: Vec<_> = SCALARS
            .iter()
            .filter(|s| s.kind == Kind::Counter && om_counter_collides(s.sample))
            .map(|s| s.sample)
            .collect();
        assert_eq!(
            colliding,
            ["agent_xfer_time_total", "agent_xfer_post_time_total"]
        );
    }

    #[test]
    fn reserved_names_cover_every_form() {
        let is_reserved = |name: &str| crate::SeriesNaming::Prometheus.is_reserved(name);
        for name in [
            "agent_tx_bytes_total",
            "agent_tx_bytes",
            "agent_tx_last_bytes",
            "agent_xfer_time_us_bucket",
            "agent_xfer_post_time_us",
            "agent_errors_total",
            "agent_errors",
            "agent_telemetry_unmapped_events",
            "exposer_scrapes_total",
            "exposer_request_latencies_sum",
        ] {
            assert!(is_reserved(name), "{name}");
        }
        for name in [
            "agent_tx_last_bytes_total",
            "ucx_rndv_total",
            "agent_xfer_time_us_x",
        ] {
            assert!(!is_reserved(name), "{name}");
        }
    }
}
