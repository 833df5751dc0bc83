//! The processor: normalises each record and runs the builders over it, all or nothing.

use std::fmt;

use crate::builders::{builder_by_name, BuildContext, MetricBuilder, MetricKind, DEFAULT_BUILDERS};
use crate::error::{BindError, ProcessError};
use crate::extract::{extract_into, recycle, AttrValue, RecordClasses};
use crate::metrics::{Metrics, MetricsUpdate, Stamp, UndoLog};
use crate::record::Record;
use crate::registry::AttributeRegistry;
use crate::time::Timestamp;

/// The times given with a record. Either may be left out:
/// * `now` defaults to the current local time;
/// * `old_now` defaults to the metrics' `last_updated` parsed as ISO 8601, or to `now`
///   when the metrics have none (or an empty one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Context {
    /// The time of this record.
    pub now: Option<Timestamp>,
    /// The time of the previous record.
    pub old_now: Option<Timestamp>,
}

impl Context {
    /// A context with only `now`, as the processor is usually driven.
    pub fn at(now: Timestamp) -> Context {
        Context {
            now: Some(now),
            old_now: None,
        }
    }
}

/// Runs builders over records and keeps the metrics' `last_updated`.
///
/// Each record is normalised against the registry ([`crate::extract_telemetry_data`]), then
/// every builder runs in order over the same metrics, then `last_updated` is set to
/// `now` in ISO form. If anything fails, every write made for the record is undone
/// and the metrics are exactly as before.
#[must_use]
pub struct MetricProcessor {
    registry: AttributeRegistry,
    builders: Vec<Box<dyn MetricBuilder>>,
    undo: UndoLog,
    /// The normalised values' vector, reused from record to record.
    spare: Vec<AttrValue<'static>>,
    /// Record classes for the builders that remember slots per class, and the attribute
    /// positions they have asked classes over.
    classes: RecordClasses,
    class_mask: u64,
    /// Whether record classes are computed (see [`MetricProcessor::set_memo`]).
    memo: bool,
}

impl fmt::Debug for MetricProcessor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricProcessor")
            .field("registry", &self.registry)
            .field(
                "builders",
                &self.builders.iter().map(|b| b.name()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Default for MetricProcessor {
    /// The built-in registry and the default builders.
    fn default() -> Self {
        MetricProcessor::with_registry(AttributeRegistry::default())
            .expect("the default builders bind to the built-in registry")
    }
}

impl MetricProcessor {
    /// The built-in registry and the default builders: legacy, comprehensive, time,
    /// labeled.
    pub fn new() -> MetricProcessor {
        MetricProcessor::default()
    }

    /// A registry with the default builders.
    pub fn with_registry(registry: AttributeRegistry) -> Result<MetricProcessor, BindError> {
        let builders = DEFAULT_BUILDERS
            .iter()
            .map(|name| builder_by_name(name))
            .collect::<Result<Vec<_>, _>>()?;
        MetricProcessor::with_builders(registry, builders)
    }

    /// A registry and any list of builders (empty included), run in the given order.
    pub fn with_builders(
        registry: AttributeRegistry,
        builders: Vec<Box<dyn MetricBuilder>>,
    ) -> Result<MetricProcessor, BindError> {
        let mut processor = MetricProcessor {
            registry,
            builders: Vec::with_capacity(builders.len()),
            undo: UndoLog::default(),
            spare: Vec::new(),
            classes: RecordClasses::default(),
            class_mask: 0,
            memo: true,
        };
        for builder in builders {
            processor.add_boxed_builder(builder)?;
        }
        Ok(processor)
    }

    /// Appends a builder; it runs after those already there.
    pub fn add_builder<B: MetricBuilder + 'static>(&mut self, builder: B) -> Result<(), BindError> {
        self.add_boxed_builder(Box::new(builder))
    }

    /// Appends a boxed builder.
    pub fn add_boxed_builder(
        &mut self,
        mut builder: Box<dyn MetricBuilder>,
    ) -> Result<(), BindError> {
        builder.bind(&self.registry)?;
        self.builders.push(builder);
        Ok(())
    }

    /// Whether the built-in builders may replay what they wrote for a combination of
    /// values seen before (on by default). With it off every record's keys are built
    /// and looked up again. The metrics are the same either way; only the speed
    /// differs (`docs/PERFORMANCE.md`, "Metric processor").
    pub fn set_memo(&mut self, on: bool) {
        self.memo = on;
    }

    /// The registry records are normalised against.
    pub fn registry(&self) -> &AttributeRegistry {
        &self.registry
    }

    /// The builders' names, in run order.
    pub fn builder_names(&self) -> Vec<&str> {
        self.builders.iter().map(|b| b.name()).collect()
    }

    /// The kind of a metric family, from the first builder that claims it.
    pub fn metric_kind(&self, family: &str) -> Option<MetricKind> {
        self.builders.iter().find_map(|b| b.metric_kind(family))
    }

    /// Applies one record to `metrics`, wholly or not at all.
    pub fn process(
        &mut self,
        metrics: &mut Metrics,
        record: &Record<'_>,
        context: &Context,
    ) -> Result<(), ProcessError> {
        let now = context.now.unwrap_or_else(Timestamp::now_local);
        let old_now = match context.old_now {
            Some(t) => t,
            None => match metrics.stamp() {
                Some(Stamp::Time(t)) => *t,
                Some(Stamp::Text(text)) if !text.is_empty() => {
                    Timestamp::parse_iso(text).map_err(ProcessError::LastUpdated)?
                }
                _ => now,
            },
        };
        let spare = recycle(std::mem::take(&mut self.spare));
        let mut data = match extract_into(&self.registry, record, spare) {
            Ok(data) => data,
            Err((error, spare)) => {
                self.spare = recycle(spare);
                return Err(error.into());
            }
        };
        if self.memo && self.class_mask != 0 {
            data.set_class(&mut self.classes, self.class_mask);
        }
        let build_context = BuildContext { now, old_now };
        self.undo.clear();
        let mut update = MetricsUpdate::new(metrics, &mut self.undo);
        let mut failure = None;
        for builder in &mut self.builders {
            if let Err(source) = builder.build(&mut update, &data, &build_context) {
                failure = Some((builder.name().to_owned(), source));
                break;
            }
        }
        self.class_mask |= data.wanted_class_mask();
        self.spare = recycle(data.into_values());
        if let Some((builder, source)) = failure {
            self.undo.roll_back(metrics);
            return Err(ProcessError::Build { builder, source });
        }
        metrics.set_stamp(now);
        Ok(())
    }

    /// Applies a record given as a `serde_json::Value` (which must be an object).
    pub fn process_value(
        &mut self,
        metrics: &mut Metrics,
        record: &serde_json::Value,
        context: &Context,
    ) -> Result<(), ProcessError> {
        let record = Record::from_serde(record)?;
        self.process(metrics, &record, context)
    }

    /// Applies a record given as JSON text (which must be an object).
    pub fn process_json(
        &mut self,
        metrics: &mut Metrics,
        record: &str,
        context: &Context,
    ) -> Result<(), ProcessError> {
        let record = Record::parse(record)?;
        self.process(metrics, &record, context)
    }
}

#[cfg(test)]
mod send_tests {
    /// A processor moves between threads (a service's worker, a lock shared by
    /// the threads of a Python host).
    #[test]
    fn a_processor_is_send() {
        fn send<T: Send>() {}
        send::<super::MetricProcessor>();
    }
}
