//! The metric families: the model's ([`nixl_telemetry_metrics::families`]),
//! the ones the Prometheus plug-ins expose, so the exporters cannot drift apart, mapped to OTLP's data model — counters as
//! monotonic cumulative Sums, last values as Gauges, latencies as
//! explicit-bucket Histograms, errors as one Sum with a `status` attribute.
//! Only the descriptions are this exporter's own (they say what a Collector
//! user sees; the Prometheus help texts are NIXL's words).

use nixl_telemetry_abi::Category;
use nixl_telemetry_metrics::families::{self as model, Kind};

pub(crate) use model::PER_NAME_HELP as PER_NAME_DESCRIPTION;
pub(crate) use model::{Source, ERRORS_SAMPLE as ERRORS_NAME};

/// The OTLP shape of a scalar family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A monotonic cumulative Sum.
    Counter,
    /// A Gauge (the last value).
    Gauge,
}

impl From<Kind> for Shape {
    fn from(kind: Kind) -> Shape {
        match kind {
            Kind::Counter => Shape::Counter,
            Kind::Gauge => Shape::Gauge,
        }
    }
}

/// A family with one data point per agent.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scalar {
    pub(crate) name: &'static str,
    pub(crate) description: &'static str,
    pub(crate) shape: Shape,
    pub(crate) category: Category,
    pub(crate) source: Source,
}

/// The scalar families, in the Prometheus plug-in's order.
pub(crate) fn scalars() -> impl ExactSizeIterator<Item = Scalar> {
    model::SCALARS.iter().map(|s| Scalar {
        name: s.sample,
        description: description(s.sample, s.help),
        shape: s.kind.into(),
        category: s.category,
        source: s.source,
    })
}

/// A latency histogram.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Histogram {
    pub(crate) name: &'static str,
    pub(crate) description: &'static str,
}

/// The latency histograms, in the Prometheus plug-in's order (the
/// aggregator's `histograms[i]` is `histograms().nth(i)`).
pub(crate) fn histograms() -> impl ExactSizeIterator<Item = Histogram> {
    model::HISTOGRAMS.iter().map(|h| Histogram {
        name: h.family,
        description: description(h.family, h.help),
    })
}

/// The description of the Sum of errors.
pub(crate) const ERRORS_DESCRIPTION: &str =
    "Errors by status (lower case, without NIXL_ERR_); each error event counts one.";

/// This exporter's descriptions of the fixed families, by family name.
const DESCRIPTIONS: [(&str, &str); 19] = [
    ("agent_tx_bytes_total", "Bytes sent by completed transfers (sum of agent_tx_bytes events)."),
    ("agent_rx_bytes_total", "Bytes received by completed transfers (sum of agent_rx_bytes events)."),
    ("agent_tx_requests_num_total", "Completed sending transfer requests (sum of agent_tx_requests_num events)."),
    ("agent_rx_requests_num_total", "Completed receiving transfer requests (sum of agent_rx_requests_num events)."),
    ("agent_tx_last_bytes", "Bytes of the most recent sending transfer."),
    ("agent_rx_last_bytes", "Bytes of the most recent receiving transfer."),
    ("agent_memory_registered_total", "Bytes of memory registered, summed over all registrations."),
    ("agent_memory_deregistered_total", "Bytes of memory deregistered, summed over all deregistrations."),
    ("agent_memory_registered_last_bytes", "Bytes of the most recent memory registration."),
    ("agent_memory_deregistered_last_bytes", "Bytes of the most recent memory deregistration."),
    ("agent_memory_registered_bytes", "Bytes of memory registered now: registered minus deregistered."),
    ("agent_xfer_time_total", "Microseconds spent in completed transfers, summed (sum of agent_xfer_time events)."),
    ("agent_xfer_post_time_total", "Microseconds spent posting transfers, summed (sum of agent_xfer_post_time events)."),
    ("agent_xfer_time", "Microseconds of the most recent completed transfer."),
    ("agent_xfer_post_time", "Microseconds of the most recent transfer post."),
    ("agent_telemetry_events_dropped_total", "Telemetry events lost before export (sum of agent_telemetry_events_dropped events)."),
    ("agent_telemetry_unmapped_events_total", "Events this exporter could not map to a series: unknown categories, and names past the per-agent limit of distinct names."),
    ("agent_xfer_time_us", "Distribution of completed transfer times, microseconds."),
    ("agent_xfer_post_time_us", "Distribution of transfer post times, microseconds."),
];

/// This exporter's description of family `name`, or the Prometheus help text
/// `help` for a family it has none for (a test keeps that from happening).
fn description(name: &str, help: &'static str) -> &'static str {
    DESCRIPTIONS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(help, |(_, d)| d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_of_the_model_has_a_description_and_no_other_does() {
        let model_names: Vec<&str> = model::SCALARS
            .iter()
            .map(|s| s.sample)
            .chain(model::HISTOGRAMS.iter().map(|h| h.family))
            .collect();
        for name in &model_names {
            assert!(
                DESCRIPTIONS.iter().any(|(n, _)| n == name),
                "{name}: no OTLP description"
            );
        }
        for (name, _) in DESCRIPTIONS {
            assert!(model_names.contains(&name), "{name}: not a family");
        }
    }

    #[test]
    fn shapes_follow_the_model() {
        assert_eq!(scalars().len(), model::SCALARS.len());
        for (otlp, prometheus) in scalars().zip(&model::SCALARS) {
            assert_eq!(otlp.name, prometheus.sample);
            assert_eq!(
                otlp.shape == Shape::Counter,
                prometheus.kind == Kind::Counter
            );
            assert_eq!(otlp.name.ends_with("_total"), otlp.shape == Shape::Counter);
        }
    }
}
