//! Every error the processor reports. Each names the offending key, entry or builder
//! and says what was expected.

use std::path::PathBuf;

use thiserror::Error;

use crate::types::AttributeType;

/// A record body that could not be read as a JSON object.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The text is not valid JSON.
    #[error("the record is not valid JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// The JSON is valid but not an object.
    #[error("the record must be a JSON object, found {found}")]
    NotAnObject {
        /// What was found instead (`an array`, `a string`, …).
        found: &'static str,
    },
}

/// A raw value that does not fit its attribute's type.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ExtractError {
    /// The value has the wrong JSON type.
    #[error("key `{raw_key}` (attribute `{attribute}`): expected {}, found {found}", .expected.expectation())]
    WrongType {
        /// The attribute's internal name.
        attribute: String,
        /// The key in the raw record.
        raw_key: String,
        /// The attribute's type.
        expected: AttributeType,
        /// What was found (`an array`, `a string`, …).
        found: &'static str,
    },
    /// A list element that is not a string.
    #[error("key `{raw_key}` (attribute `{attribute}`): element {index} must be a string, found {found}")]
    ListElement {
        /// The attribute's internal name.
        attribute: String,
        /// The key in the raw record.
        raw_key: String,
        /// Position of the element, from 0.
        index: usize,
        /// What was found.
        found: &'static str,
    },
    /// An integer outside the signed 64-bit range.
    #[error("key `{raw_key}` (attribute `{attribute}`): expected a 64-bit integer, found {value} (out of range)")]
    IntegerOutOfRange {
        /// The attribute's internal name.
        attribute: String,
        /// The key in the raw record.
        raw_key: String,
        /// The value as read.
        value: u64,
    },
}

/// A timestamp that is not in an accepted ISO 8601 form.
#[derive(Debug, Error)]
#[error("`{text}` is not an ISO 8601 date-time (YYYY-MM-DD[THH[:MM[:SS[.ffffff]]]][Z|±HH:MM]): {reason}")]
pub struct TimestampError {
    /// The text that was given.
    pub text: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// A registry that cannot be used.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The registry file could not be read (missing, unreadable, not a regular file,
    /// too large, not UTF-8).
    #[error(transparent)]
    File(#[from] FileError),
    /// The file's extension says neither TOML nor JSON.
    #[error("attribute registry {}: unknown format (use a .toml or .json file)", .path.display())]
    UnknownFormat {
        /// The file.
        path: PathBuf,
    },
    /// The text is not valid TOML or JSON.
    #[error("attribute registry is not valid {format}: {message}")]
    Syntax {
        /// `TOML` or `JSON`.
        format: &'static str,
        /// The parser's message.
        message: String,
    },
    /// The document's shape is wrong (no `attributes` array, unknown top-level key, …).
    #[error("attribute registry: {0}")]
    Shape(String),
    /// An entry lacks a required field.
    #[error("attribute registry, {entry}: missing field `{field}`")]
    MissingField {
        /// Which entry (`attribute #3 (framework)`).
        entry: String,
        /// The field.
        field: &'static str,
    },
    /// An entry has a field this format does not know.
    #[error("attribute registry, {entry}: unknown field `{field}`")]
    UnknownField {
        /// Which entry.
        entry: String,
        /// The field.
        field: String,
    },
    /// A field has the wrong type.
    #[error("attribute registry, {entry}: field `{field}` must be {expected}")]
    FieldType {
        /// Which entry.
        entry: String,
        /// The field.
        field: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// The `type` is not one of the four attribute types.
    #[error("attribute registry, {entry}: unknown type `{found}` (expected string, boolean, integer or list)")]
    UnknownType {
        /// Which entry.
        entry: String,
        /// The type that was given.
        found: String,
    },
    /// The default does not fit the attribute's type.
    #[error("attribute registry, {entry}: default must be {} for a {attr_type} attribute", default_expectation(*.attr_type))]
    WrongDefault {
        /// Which entry.
        entry: String,
        /// The attribute's type.
        attr_type: AttributeType,
    },
    /// The name is not usable in metric names and label names.
    #[error("attribute registry, {entry}: name `{name}` must match [A-Za-z_][A-Za-z0-9_]*")]
    InvalidName {
        /// Which entry.
        entry: String,
        /// The name.
        name: String,
    },
    /// Two entries share a name.
    #[error("attribute registry, {entry}: duplicate name `{name}` (first defined by attribute #{first})")]
    Duplicate {
        /// Which entry.
        entry: String,
        /// The name.
        name: String,
        /// Position of the first entry with that name, from 1.
        first: usize,
    },
    /// A list attribute cannot be part of the comprehensive name.
    #[error("attribute registry, {entry}: a list attribute cannot be included in the comprehensive name")]
    ListInComprehensive {
        /// Which entry.
        entry: String,
    },
}

fn default_expectation(t: AttributeType) -> &'static str {
    match t {
        AttributeType::String => "a string",
        AttributeType::Boolean => "true or false",
        AttributeType::Integer => "a 64-bit integer",
        AttributeType::List => "a list of strings",
    }
}

/// A builder that cannot work with the processor's registry, or an unknown builder name.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum BindError {
    /// The builder needs an attribute the registry lacks.
    #[error("builder `{builder}` needs a {expected} attribute named `{attribute}`, which the registry lacks")]
    MissingAttribute {
        /// The builder.
        builder: String,
        /// The attribute.
        attribute: &'static str,
        /// The type it must have.
        expected: AttributeType,
    },
    /// The registry's attribute has a type the builder cannot use.
    #[error("builder `{builder}` needs attribute `{attribute}` to be {expected}, the registry says {found}")]
    WrongAttributeType {
        /// The builder.
        builder: String,
        /// The attribute.
        attribute: &'static str,
        /// The type it must have.
        expected: AttributeType,
        /// The type it has.
        found: AttributeType,
    },
    /// No built-in builder has this name.
    #[error("unknown builder `{name}` (known: legacy, comprehensive, time, labeled)")]
    UnknownBuilder {
        /// The name that was given.
        name: String,
    },
}

/// A builder could not apply a record.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A value would leave the signed 64-bit range.
    #[error("metric `{key}` would overflow a 64-bit integer")]
    Overflow {
        /// The metric key.
        key: String,
    },
    /// `last_updated` is kept by the processor and cannot be written by a builder.
    #[error("metric key `last_updated` is reserved for the processor's timestamp")]
    ReservedKey,
    /// A slot remembered from another map, or from before a roll-back, was used.
    #[error("a metric slot was used after its map changed (check MetricsUpdate::is_current)")]
    StaleSlot,
    /// Any other reason, given by a user-defined builder.
    #[error("{0}")]
    Custom(String),
}

/// A record the processor rejected. The metrics are left exactly as they were.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ProcessError {
    /// The body is not a JSON object.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// A value does not fit its attribute.
    #[error(transparent)]
    Extract(#[from] ExtractError),
    /// The metrics' `last_updated` cannot be read as a timestamp.
    #[error("metrics key `last_updated`: {0}")]
    LastUpdated(#[source] TimestampError),
    /// A builder failed.
    #[error("builder `{builder}`: {source}")]
    Build {
        /// The builder.
        builder: String,
        /// What went wrong.
        #[source]
        source: BuildError,
    },
}

/// Why an input line was not applied ([`crate::MetricProcessor::process_line`]): the
/// line's own error or the record's, each with its own message.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ProcessLineError {
    /// The line is not a record or an envelope of one.
    #[error(transparent)]
    Line(#[from] crate::input::LineError),
    /// The record could not be applied.
    #[error(transparent)]
    Process(#[from] ProcessError),
}

/// A metrics document (for example a state file) that cannot be loaded.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StateError {
    /// Not valid JSON.
    #[error("metrics are not valid JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// Not a JSON object.
    #[error("metrics must be a JSON object, found {found}")]
    NotAnObject {
        /// What was found.
        found: &'static str,
    },
    /// A value of the wrong type.
    #[error("metrics key `{key}`: expected {expected}, found {found}")]
    BadValue {
        /// The key.
        key: String,
        /// What it must be.
        expected: &'static str,
        /// What was found.
        found: &'static str,
    },
}

/// A metric key that has no Prometheus text-format form.
#[derive(Debug, Error)]
#[error("metric key `{key}` is not a valid Prometheus series ({reason})")]
pub struct PrometheusKeyError {
    /// The key.
    pub key: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// A file the processor reads (an attribute registry, a state file) that was not read.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum FileError {
    /// Opening or reading failed.
    #[error("cannot read {what} {}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Its role (`attribute registry`, `state file`).
        what: &'static str,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Not a regular file (a FIFO, a device, a directory, a socket).
    #[error("{what} {} is {found}, not a regular file; only regular files are read", .path.display())]
    NotRegular {
        /// The file.
        path: PathBuf,
        /// Its role.
        what: &'static str,
        /// What it is.
        found: &'static str,
    },
    /// Longer than the limit for its role.
    #[error("{what} {} is larger than {limit} bytes, the limit for a {what}", .path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its role.
        what: &'static str,
        /// The limit in bytes.
        limit: u64,
    },
    /// Not UTF-8 text.
    #[error("{what} {} is not UTF-8 text (invalid byte {offset})", .path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// Its role.
        what: &'static str,
        /// The offset of the first invalid byte.
        offset: u64,
    },
}
