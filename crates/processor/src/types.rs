//! The vocabulary of the processor: attribute types and attribute definitions.

use std::fmt;

/// How an attribute's raw value is read and normalised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttributeType {
    /// Text. JSON strings are sanitised (see [`crate::sanitize_field_value`]);
    /// other JSON scalars are first rendered as text (see `docs/processor.md`).
    String,
    /// A flag used for its truth value. Any JSON scalar is kept as given.
    Boolean,
    /// A 64-bit signed integer.
    Integer,
    /// A list of strings, kept as given.
    List,
}

impl AttributeType {
    /// The lower-case name used in registry files (`string`, `boolean`, `integer`, `list`).
    pub fn as_str(self) -> &'static str {
        match self {
            AttributeType::String => "string",
            AttributeType::Boolean => "boolean",
            AttributeType::Integer => "integer",
            AttributeType::List => "list",
        }
    }

    /// Parses a registry-file type name, case-insensitively (`STRING` and `string` both work).
    pub fn parse(name: &str) -> Option<AttributeType> {
        [
            AttributeType::String,
            AttributeType::Boolean,
            AttributeType::Integer,
            AttributeType::List,
        ]
        .into_iter()
        .find(|t| t.as_str().eq_ignore_ascii_case(name))
    }

    /// What a value of this type must look like, for error messages.
    pub fn expectation(self) -> &'static str {
        match self {
            AttributeType::String => "a string or another JSON scalar (string attribute)",
            AttributeType::Boolean => "a JSON scalar (boolean attribute)",
            AttributeType::Integer => "a 64-bit integer (integer attribute)",
            AttributeType::List => "a list of strings (list attribute)",
        }
    }
}

impl fmt::Display for AttributeType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The default an attribute takes when its raw key is missing or `null`.
#[derive(Debug, Clone, PartialEq)]
pub enum DefaultValue {
    /// Default of a [`AttributeType::String`] attribute (sanitised like any given value).
    String(String),
    /// Default of a [`AttributeType::Boolean`] attribute.
    Boolean(bool),
    /// Default of an [`AttributeType::Integer`] attribute.
    Integer(i64),
    /// Default of a [`AttributeType::List`] attribute.
    List(Vec<String>),
}

impl DefaultValue {
    /// The attribute type this default fits.
    pub fn attribute_type(&self) -> AttributeType {
        match self {
            DefaultValue::String(_) => AttributeType::String,
            DefaultValue::Boolean(_) => AttributeType::Boolean,
            DefaultValue::Integer(_) => AttributeType::Integer,
            DefaultValue::List(_) => AttributeType::List,
        }
    }
}

/// One attribute of the registry: where it is read from, its type and its default,
/// and whether (and where) it takes part in the comprehensive metric name.
#[derive(Debug, Clone, PartialEq)]
pub struct AttributeDef {
    /// Internal name, used by builders and in metric keys (`network`, `gpus`, …).
    pub name: String,
    /// Key of the value in the raw record (`gpu` for `gpus`).
    pub raw_key: String,
    /// How the raw value is read.
    pub attr_type: AttributeType,
    /// Value taken when the raw key is missing or `null`.
    pub default: DefaultValue,
    /// Whether the attribute appears in the comprehensive metric name.
    pub include_in_comprehensive: bool,
    /// Position in the comprehensive name: lower comes first, ties keep registry order.
    pub metric_order: i64,
}

impl AttributeDef {
    /// The metric order an attribute gets when its definition gives none.
    pub const DEFAULT_METRIC_ORDER: i64 = 100;

    /// A definition with `include_in_comprehensive = true` and the default metric order,
    /// like an entry of a registry file that gives only name, key, type and default.
    pub fn new(
        name: impl Into<String>,
        raw_key: impl Into<String>,
        attr_type: AttributeType,
        default: DefaultValue,
    ) -> AttributeDef {
        AttributeDef {
            name: name.into(),
            raw_key: raw_key.into(),
            attr_type,
            default,
            include_in_comprehensive: true,
            metric_order: Self::DEFAULT_METRIC_ORDER,
        }
    }

    /// Sets [`AttributeDef::metric_order`].
    pub fn order(mut self, metric_order: i64) -> AttributeDef {
        self.metric_order = metric_order;
        self
    }

    /// Sets [`AttributeDef::include_in_comprehensive`].
    pub fn comprehensive(mut self, include: bool) -> AttributeDef {
        self.include_in_comprehensive = include;
        self
    }
}
