//! The daily time accumulator.

use crate::error::{BindError, BuildError};
use crate::extract::TelemetryData;
use crate::metrics::{MetricsUpdate, Slot};
use crate::registry::AttributeRegistry;
use crate::types::AttributeType;

use super::{bind_attribute, integer_at, BuildContext, MetricBuilder, MetricKind};

/// The metric the time builder writes.
const TIME_LAPSED_TODAY: &str = "time_lapsed_today";

/// Keeps `time_lapsed_today`: the sum of `time_lapsed` over the records of the current
/// calendar day. When the calendar date of `now` differs from that of `old_now` the sum
/// restarts at this record's `time_lapsed`; otherwise the record's value is added.
/// (Dates are compared whole, so 15 January → 15 February resets.)
///
/// Uses the integer attribute `time_lapsed` if the registry has one (0 otherwise).
#[derive(Debug, Default)]
#[must_use]
pub struct TimeMetricsBuilder {
    time_lapsed: Option<usize>,
    /// Where `time_lapsed_today` is in the metrics, once known.
    slot: Option<Slot>,
}

impl TimeMetricsBuilder {
    /// A new builder.
    pub fn new() -> TimeMetricsBuilder {
        TimeMetricsBuilder::default()
    }
}

impl MetricBuilder for TimeMetricsBuilder {
    fn name(&self) -> &str {
        "time"
    }

    fn bind(&mut self, registry: &AttributeRegistry) -> Result<(), BindError> {
        self.time_lapsed = bind_attribute(
            registry,
            "time",
            "time_lapsed",
            AttributeType::Integer,
            false,
        )?;
        Ok(())
    }

    fn build(
        &mut self,
        metrics: &mut MetricsUpdate<'_>,
        data: &TelemetryData<'_>,
        context: &BuildContext,
    ) -> Result<(), BuildError> {
        let time_lapsed = integer_at(data, self.time_lapsed);
        let slot = match self.slot {
            Some(slot) if metrics.is_current(slot) => slot,
            _ => *self.slot.insert(metrics.slot(TIME_LAPSED_TODAY)?),
        };
        if context.now.date() != context.old_now.date() {
            metrics.set_at(slot, time_lapsed)
        } else {
            metrics.add_at(slot, time_lapsed).map(drop)
        }
    }

    fn metric_kind(&self, family: &str) -> Option<MetricKind> {
        (family == TIME_LAPSED_TODAY).then_some(MetricKind::Gauge)
    }
}
