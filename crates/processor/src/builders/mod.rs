//! Builders: each turns one normalised record into metric updates.
//!
//! The four built-in builders are [`LegacyMetricsBuilder`], [`ComprehensiveMetricsBuilder`],
//! [`TimeMetricsBuilder`] and [`LabeledMetricsBuilder`]. Any type implementing
//! [`MetricBuilder`] can be added to a [`crate::MetricProcessor`].

mod comprehensive;
mod labeled;
mod legacy;
mod time;

pub use comprehensive::ComprehensiveMetricsBuilder;
pub use labeled::{
    extract_gpu_type, extract_primary_gpu, LabeledMetricsBuilder, GPU_PRIORITY, JOB_DURATION_SUM,
    JOB_GPU_TIME_SUM, JOB_GPU_TOTAL, JOB_TOTAL,
};
pub use legacy::LegacyMetricsBuilder;
pub use time::TimeMetricsBuilder;

use crate::error::{BindError, BuildError};
use crate::extract::TelemetryData;
use crate::metrics::MetricsUpdate;
use crate::registry::AttributeRegistry;
use crate::time::Timestamp;
use crate::types::AttributeType;

/// The times a record is processed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuildContext {
    /// The time of this record.
    pub now: Timestamp,
    /// The time of the previous record (the metrics' `last_updated`), or `now` for the first.
    pub old_now: Timestamp,
}

/// How a metric family behaves, for the Prometheus `# TYPE` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// Only goes up.
    Counter,
    /// Goes up and down (or resets).
    Gauge,
}

impl MetricKind {
    /// The Prometheus type name.
    pub fn as_str(self) -> &'static str {
        match self {
            MetricKind::Counter => "counter",
            MetricKind::Gauge => "gauge",
        }
    }
}

/// A builder of metrics from normalised records.
///
/// `bind` is called once when the builder joins a processor, with the processor's
/// registry: look up the attributes you need there (and fail if they are missing).
/// `build` is then called for every record, in processor order. Any error from
/// `build` (including one returned by [`MetricsUpdate::add`]) rejects the record and
/// undoes every write made for it by every builder.
///
/// Builders are `Send`, so that a processor can move to (or be shared behind a
/// lock by) another thread, as a service or the Python binding does.
pub trait MetricBuilder: Send {
    /// A short name for error messages (`legacy`, `alerts`).
    fn name(&self) -> &str;

    /// Prepares the builder for a registry. The default accepts any registry.
    fn bind(&mut self, registry: &AttributeRegistry) -> Result<(), BindError> {
        let _ = registry;
        Ok(())
    }

    /// Applies one record.
    fn build(
        &mut self,
        metrics: &mut MetricsUpdate<'_>,
        data: &TelemetryData<'_>,
        context: &BuildContext,
    ) -> Result<(), BuildError>;

    /// The kind of a metric family (the key up to `{`) this builder writes, if it
    /// writes that family. The default claims none (Prometheus `untyped`).
    fn metric_kind(&self, family: &str) -> Option<MetricKind> {
        let _ = family;
        None
    }
}

/// Names of the default builders, in the order the processor runs them.
pub const DEFAULT_BUILDERS: [&str; 4] = ["legacy", "comprehensive", "time", "labeled"];

/// A built-in builder by name: `legacy`, `comprehensive`, `time` or `labeled`.
pub fn builder_by_name(name: &str) -> Result<Box<dyn MetricBuilder>, BindError> {
    Ok(match name {
        "legacy" => Box::new(LegacyMetricsBuilder::new()),
        "comprehensive" => Box::new(ComprehensiveMetricsBuilder::new()),
        "time" => Box::new(TimeMetricsBuilder::new()),
        "labeled" => Box::new(LabeledMetricsBuilder::new()),
        other => {
            return Err(BindError::UnknownBuilder {
                name: other.to_owned(),
            })
        }
    })
}

/// Built-in builders from a comma-separated list (`legacy,time`); blanks around names
/// are ignored and an empty list gives no builders.
pub fn builders_from_list(list: &str) -> Result<Vec<Box<dyn MetricBuilder>>, BindError> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(builder_by_name)
        .collect()
}

/// Looks up an attribute a builder uses. A `required` attribute must exist; an
/// existing one must have type `expected`. Returns its registry position.
pub fn bind_attribute(
    registry: &AttributeRegistry,
    builder: &str,
    attribute: &'static str,
    expected: AttributeType,
    required: bool,
) -> Result<Option<usize>, BindError> {
    match registry.index_of(attribute) {
        None if required => Err(BindError::MissingAttribute {
            builder: builder.to_owned(),
            attribute,
            expected,
        }),
        None => Ok(None),
        Some(i) => {
            let found = registry.attributes()[i].attr_type;
            if found == expected {
                Ok(Some(i))
            } else {
                Err(BindError::WrongAttributeType {
                    builder: builder.to_owned(),
                    attribute,
                    expected,
                    found,
                })
            }
        }
    }
}

/// The mask of registry positions for [`TelemetryData`]'s record classes (bit `i`:
/// position `i`), or 0 (no classes) if a position does not fit in the mask.
pub(crate) fn class_mask(positions: impl IntoIterator<Item = usize>) -> u64 {
    let mut mask = 0u64;
    for position in positions {
        if position >= 64 {
            return 0;
        }
        mask |= 1 << position;
    }
    mask
}

/// The truth value of an optional boolean attribute (absent → false).
pub(crate) fn truthy_at(data: &TelemetryData<'_>, index: Option<usize>) -> bool {
    match index.map(|i| data.at(i)) {
        Some(crate::extract::AttrValue::Boolean(b)) => b.truthy(),
        _ => false,
    }
}

/// The value of an optional integer attribute (absent → 0).
pub(crate) fn integer_at(data: &TelemetryData<'_>, index: Option<usize>) -> i64 {
    match index.map(|i| data.at(i)) {
        Some(crate::extract::AttrValue::Integer(v)) => *v,
        _ => 0,
    }
}
