//! A configuration-driven processor that turns raw usage records (one JSON object per
//! job: version, action, network, success, GPU list, time taken, …) into a flat map of
//! integer metrics, through pluggable builders.
//!
//! * [`AttributeRegistry`]: which attributes a record has, their raw keys, types and
//!   defaults; built in or loaded from a TOML or JSON file.
//! * [`extract_telemetry_data`]: normalises a [`Record`] into [`TelemetryData`].
//! * [`MetricBuilder`]: the builder trait, with four built-in builders
//!   ([`LegacyMetricsBuilder`], [`ComprehensiveMetricsBuilder`], [`TimeMetricsBuilder`],
//!   [`LabeledMetricsBuilder`]).
//! * [`MetricProcessor`]: runs the builders over each record, all or nothing, and keeps
//!   `last_updated`.
//! * [`Metrics`]: the map, serialised as sorted JSON or as Prometheus text
//!   ([`render_prometheus`]).
//!
//! `docs/processor.md` describes formats, key shapes and the exact rules.
//!
//! # Example: a user-defined builder
//!
//! A builder that counts failed jobs per day, added after the default builders:
//!
//! ```
//! use nixl_telemetry_processor::{
//!     BuildContext, BuildError, Context, MetricBuilder, MetricProcessor, Metrics,
//!     MetricsUpdate, TelemetryData, Timestamp,
//! };
//!
//! struct AlertBuilder;
//!
//! impl MetricBuilder for AlertBuilder {
//!     fn name(&self) -> &str {
//!         "alerts"
//!     }
//!     fn build(
//!         &mut self,
//!         metrics: &mut MetricsUpdate<'_>,
//!         data: &TelemetryData<'_>,
//!         context: &BuildContext,
//!     ) -> Result<(), BuildError> {
//!         if context.now.date() != context.old_now.date() {
//!             metrics.set("failures_today", 0)?;
//!         }
//!         if data.truthy("success") == Some(false) {
//!             metrics.add("failures_today", 1)?;
//!         }
//!         Ok(())
//!     }
//! }
//!
//! let mut processor = MetricProcessor::new();
//! processor.add_builder(AlertBuilder)?;
//! let mut metrics = Metrics::new();
//! let now = Timestamp::parse_iso("2025-01-13T10:00:00")?;
//! processor.process_json(&mut metrics, r#"{"action": "train", "success": false}"#, &Context::at(now))?;
//! processor.process_json(&mut metrics, r#"{"action": "train", "success": true}"#, &Context::at(now))?;
//! assert_eq!(metrics.get("failures_today"), Some(1));
//! assert_eq!(metrics.get("total_action_train_fail"), Some(1));
//! assert_eq!(metrics.last_updated().as_deref(), Some("2025-01-13T10:00:00"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

pub mod builders;
mod direct_parse;
mod error;
mod extract;
mod file;
mod hash;
mod input;
mod metrics;
mod next_keys;
mod processor;
mod prometheus;
mod raw_keys;
mod record;
mod registry;
mod sanitize;
mod time;
mod types;
mod unicode;
mod unicode_tables;

pub use builders::{
    builder_by_name, builders_from_list, extract_gpu_type, extract_primary_gpu, BuildContext,
    ComprehensiveMetricsBuilder, LabeledMetricsBuilder, LegacyMetricsBuilder, MetricBuilder,
    MetricKind, TimeMetricsBuilder, DEFAULT_BUILDERS,
};
pub use error::{
    BindError, BuildError, ExtractError, FileError, ProcessError, ProcessLineError,
    PrometheusKeyError, RecordError, RegistryError, StateError, TimestampError,
};
pub use extract::{
    extract_telemetry_data, AttrValue, ListValue, NameGroups, Scalar, TelemetryData, Text,
};
pub use file::{read_regular_file, MAX_REGISTRY_BYTES, MAX_STATE_BYTES};
pub use input::{parse_input_line, InputLine, LineError};
pub use metrics::{Metrics, MetricsUpdate, Slot, LAST_UPDATED};
pub use processor::{Context, MetricProcessor};
pub use prometheus::{render_prometheus, split_series};
pub use record::{JsonNumber, JsonValue, Record};
pub use registry::AttributeRegistry;
pub use sanitize::{
    create_gpu_identifier, escape_label_value_into, render_scalar, sanitize_field_value,
    sanitize_field_value_upper, sanitize_into, sanitize_str, write_number,
};
pub use time::Timestamp;
pub use types::{AttributeDef, AttributeType, DefaultValue};
