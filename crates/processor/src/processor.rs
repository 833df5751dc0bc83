//! The processor: normalises each record and runs the builders over it, all or nothing.

use std::fmt;

use crate::builders::{builder_by_name, BuildContext, MetricBuilder, MetricKind, DEFAULT_BUILDERS};
use crate::direct_parse::{scan_envelope_into, Found, ScanArena};
use crate::error::{BindError, ProcessError, ProcessLineError};
use crate::extract::{
    extract_found, extract_into, recycle, AttrValue, RecordClasses, TelemetryData,
};
use crate::input::{parse_input_line, LineError};
use crate::metrics::{Metrics, MetricsUpdate, Stamp, UndoLog};
use crate::next_keys::NextKeys;
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
    run: BuilderRun,
    /// The values a line read directly keeps for its attributes, reused likewise.
    arena: ScanArena<'static>,
    /// The order of the members of the lines read directly, to guess each key.
    next_keys: NextKeys,
}

/// The most attributes a registry may have for lines to be read straight into them
/// ([`MetricProcessor::process_line`]); larger registries read every line as a record.
const DIRECT_ATTRIBUTES: usize = 64;

/// The builders and what they keep from record to record.
struct BuilderRun {
    builders: Vec<Box<dyn MetricBuilder>>,
    /// The normalised values' vector, reused from record to record.
    spare: Vec<AttrValue<'static>>,
    undo: UndoLog,
    /// Record classes for the builders that remember slots per class, and the attribute
    /// positions they have asked classes over.
    classes: RecordClasses,
    class_mask: u64,
    /// Whether record classes are computed (see [`MetricProcessor::set_memo`]).
    memo: bool,
}

impl BuilderRun {
    /// The values' vector to normalise a record into.
    fn take_spare<'r>(&mut self) -> Vec<AttrValue<'r>> {
        recycle(std::mem::take(&mut self.spare))
    }

    /// Keeps a values' vector for the next record.
    fn keep_spare(&mut self, values: Vec<AttrValue<'_>>) {
        self.spare = recycle(values);
    }

    /// Runs every builder over one normalised record, all or nothing, and stamps the
    /// metrics with `now`.
    fn apply(
        &mut self,
        metrics: &mut Metrics,
        mut data: TelemetryData<'_>,
        build_context: BuildContext,
    ) -> Result<(), ProcessError> {
        if self.memo && self.class_mask != 0 {
            data.set_class(&mut self.classes, self.class_mask);
        }
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
        self.keep_spare(data.into_values());
        if let Some((builder, source)) = failure {
            self.undo.roll_back(metrics);
            return Err(ProcessError::Build { builder, source });
        }
        metrics.set_stamp(build_context.now);
        Ok(())
    }

    /// The rest of [`MetricProcessor::process_line`] for a line read directly: its
    /// `now` (replacing the context's), then the builders.
    fn apply_scanned(
        &mut self,
        metrics: &mut Metrics,
        data: TelemetryData<'_>,
        now: Option<&str>,
        context: &Context,
    ) -> Result<(), ProcessLineError> {
        let now = match now.map(Timestamp::parse_iso) {
            None => context.now,
            Some(Ok(now)) => Some(now),
            Some(Err(error)) => {
                self.keep_spare(data.into_values());
                return Err(LineError::Now(error).into());
            }
        };
        let context = Context {
            now,
            old_now: context.old_now,
        };
        match build_context(metrics, &context) {
            Ok(build_context) => Ok(self.apply(metrics, data, build_context)?),
            Err(error) => {
                self.keep_spare(data.into_values());
                Err(error.into())
            }
        }
    }
}

/// A record's `now` and `old_now`, the context's defaults filled in (see [`Context`]).
fn build_context(metrics: &Metrics, context: &Context) -> Result<BuildContext, ProcessError> {
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
    Ok(BuildContext { now, old_now })
}

impl fmt::Debug for MetricProcessor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricProcessor")
            .field("registry", &self.registry)
            .field("builders", &self.builder_names())
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
        let registry_len = registry.attributes().len();
        let mut processor = MetricProcessor {
            registry,
            run: BuilderRun {
                builders: Vec::with_capacity(builders.len()),
                spare: Vec::new(),
                undo: UndoLog::default(),
                classes: RecordClasses::default(),
                class_mask: 0,
                memo: true,
            },
            arena: ScanArena::default(),
            next_keys: NextKeys::new(registry_len),
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
        self.run.builders.push(builder);
        Ok(())
    }

    /// Whether the built-in builders may replay what they wrote for a combination of
    /// values seen before (on by default). With it off every record's keys are built
    /// and looked up again. The metrics are the same either way; only the speed
    /// differs (`docs/PERFORMANCE.md`, "Metric processor").
    pub fn set_memo(&mut self, on: bool) {
        self.run.memo = on;
    }

    /// The registry records are normalised against.
    pub fn registry(&self) -> &AttributeRegistry {
        &self.registry
    }

    /// The builders' names, in run order.
    pub fn builder_names(&self) -> Vec<&str> {
        self.run.builders.iter().map(|b| b.name()).collect()
    }

    /// The kind of a metric family, from the first builder that claims it.
    pub fn metric_kind(&self, family: &str) -> Option<MetricKind> {
        self.run.builders.iter().find_map(|b| b.metric_kind(family))
    }

    /// Applies one record to `metrics`, wholly or not at all.
    pub fn process(
        &mut self,
        metrics: &mut Metrics,
        record: &Record<'_>,
        context: &Context,
    ) -> Result<(), ProcessError> {
        let build_context = build_context(metrics, context)?;
        match extract_into(&self.registry, record, self.run.take_spare()) {
            Ok(data) => self.run.apply(metrics, data, build_context),
            Err((error, spare)) => {
                self.run.keep_spare(spare);
                Err(error.into())
            }
        }
    }

    /// Applies one input line of the `process` command ([`crate::parse_input_line`]:
    /// a raw record, or an envelope `{"now": …, "record": {…}}` whose `now` replaces
    /// the context's), wholly or not at all.
    ///
    /// The result and every error are those of [`crate::parse_input_line`] followed by
    /// [`MetricProcessor::process`]. An envelope of the common shape is read straight
    /// into the registry's attributes, building no record; any other line, and any
    /// line whose values do not fit their attributes, is read the general way.
    pub fn process_line(
        &mut self,
        metrics: &mut Metrics,
        line: &str,
        context: &Context,
    ) -> Result<(), ProcessLineError> {
        let mut arena = std::mem::take(&mut self.arena).recycle();
        let mut found = [Found::Missing; DIRECT_ATTRIBUTES];
        let attrs = self.registry.attributes();
        let scanned = scan_envelope_into(
            line,
            attrs,
            self.registry.raw_keys(),
            &mut self.next_keys,
            &mut arena,
            &mut found,
        );
        if let Some(now) = scanned {
            let spare = self.run.take_spare();
            match extract_found(&self.registry, &arena, &found[..attrs.len()], spare) {
                Ok(data) => {
                    let result = self
                        .run
                        .apply_scanned(metrics, data, now.as_deref(), context);
                    self.arena = arena.recycle();
                    return result;
                }
                Err(spare) => self.run.keep_spare(spare),
            }
        }
        self.arena = arena.recycle();
        let input = parse_input_line(line)?;
        let context = Context {
            now: input.now.or(context.now),
            old_now: context.old_now,
        };
        Ok(self.process(metrics, &input.record, &context)?)
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
mod direct_tests {
    use super::*;

    /// Whether `line` is read straight into the registry's attributes, its keys
    /// guessed from the lines read before with `next_keys`.
    fn read_directly(registry: &AttributeRegistry, next_keys: &mut NextKeys, line: &str) -> bool {
        let mut arena = ScanArena::default();
        let mut found = [Found::Missing; DIRECT_ATTRIBUTES];
        let attrs = registry.attributes();
        scan_envelope_into(
            line,
            attrs,
            registry.raw_keys(),
            next_keys,
            &mut arena,
            &mut found,
        )
        .is_some()
            && extract_found(registry, &arena, &found[..attrs.len()], Vec::new()).is_ok()
    }

    /// The fast path is the one taken for real records (the comparison of the two
    /// paths in `tests/it/process_line.rs` would prove little otherwise), and not for
    /// lines it cannot read exactly.
    #[test]
    fn every_corpus_line_is_read_directly_and_the_rest_is_not() {
        let registry = AttributeRegistry::default();
        let corpus = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/data/tao_processor/corpus.jsonl"
        ))
        .unwrap();
        // `\u` escapes are outside the direct parser's subset. The keys are guessed
        // from line to line (twice over, so that the first line's are too), and a
        // wrong guess would send the line the general way.
        let mut next_keys = NextKeys::new(registry.attributes().len());
        for line in corpus.lines().chain(corpus.lines()) {
            assert_eq!(
                read_directly(&registry, &mut next_keys, line),
                !line.contains("\\u"),
                "{line}"
            );
        }
        for line in [
            r#"{"action": "train"}"#,
            r#"{"now": null, "record": {"action": "train"}}"#,
            r#"{"now": "2025-01-14", "record": {"action": 1.5}}"#,
            r#"{"now": "2025-01-14", "record": {"action": ["train"]}}"#,
            r#"{"now": "2025-01-14", "record": {"gpu": ["A", 1]}}"#,
            r#"{"now": "2025-01-14", "record": {"time_lapsed": 9223372036854775808}}"#,
            r#"{"now": "2025-01-14", "record": {"action": "train"}} x"#,
        ] {
            assert!(!read_directly(&registry, &mut next_keys, line), "{line}");
        }
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
