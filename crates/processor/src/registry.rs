//! The attribute registry: which attributes a record has, where they are read from,
//! their types and defaults. Built in, or loaded from a TOML or JSON file.

use std::path::Path;

use serde_json::{Map, Value};

use crate::error::RegistryError;
use crate::file::{read_regular_file, MAX_REGISTRY_BYTES};
use crate::raw_keys::RawKeyIndex;
use crate::types::{AttributeDef, AttributeType, DefaultValue};

/// A validated, ordered list of attribute definitions.
///
/// The order matters: it is the order of the normalised data, and the labeled builder
/// visits attributes in it; the comprehensive name sorts by `metric_order` and keeps
/// this order among equal orders.
#[derive(Debug, Clone, PartialEq)]
pub struct AttributeRegistry {
    attrs: Vec<AttributeDef>,
    /// The attributes by raw key, for reading a record in one pass.
    raw_keys: RawKeyIndex,
}

impl Default for AttributeRegistry {
    /// The nine built-in attributes (see [`AttributeRegistry::builtin_attributes`]).
    fn default() -> Self {
        let attrs = Self::builtin_attributes();
        AttributeRegistry {
            raw_keys: RawKeyIndex::new(&attrs),
            attrs,
        }
    }
}

impl AttributeRegistry {
    /// The nine built-in attributes, in this order:
    ///
    /// | name | raw key | type | default | comprehensive | order |
    /// |------|---------|------|---------|---------------|-------|
    /// | version | version | string | `unknown` | yes | 3 |
    /// | action | action | string | `unknown` | yes | 2 |
    /// | network | network | string | `unknown` | yes | 1 |
    /// | success | success | boolean | false | no | 4 |
    /// | user_error | user_error | boolean | false | no | 5 |
    /// | time_lapsed | time_lapsed | integer | 0 | no | 100 |
    /// | gpus | gpu | list | `["unknown"]` | no | 100 |
    /// | client_type | client_type | string | `container` | no | 6 |
    /// | automl_triggered | automl_triggered | boolean | false | no | 100 |
    pub fn builtin_attributes() -> Vec<AttributeDef> {
        use AttributeType as T;
        use DefaultValue as D;
        let unknown = || D::String("unknown".into());
        vec![
            AttributeDef::new("version", "version", T::String, unknown()).order(3),
            AttributeDef::new("action", "action", T::String, unknown()).order(2),
            AttributeDef::new("network", "network", T::String, unknown()).order(1),
            AttributeDef::new("success", "success", T::Boolean, D::Boolean(false))
                .order(4)
                .comprehensive(false),
            AttributeDef::new("user_error", "user_error", T::Boolean, D::Boolean(false))
                .order(5)
                .comprehensive(false),
            AttributeDef::new("time_lapsed", "time_lapsed", T::Integer, D::Integer(0))
                .comprehensive(false),
            AttributeDef::new("gpus", "gpu", T::List, D::List(vec!["unknown".into()]))
                .comprehensive(false),
            AttributeDef::new(
                "client_type",
                "client_type",
                T::String,
                D::String("container".into()),
            )
            .order(6)
            .comprehensive(false),
            AttributeDef::new(
                "automl_triggered",
                "automl_triggered",
                T::Boolean,
                D::Boolean(false),
            )
            .comprehensive(false),
        ]
    }

    /// Validates a list of definitions: names must be unique and match
    /// `[A-Za-z_][A-Za-z0-9_]*`, each default must fit its type, and a list attribute
    /// cannot be part of the comprehensive name.
    pub fn new(attrs: Vec<AttributeDef>) -> Result<AttributeRegistry, RegistryError> {
        for (i, attr) in attrs.iter().enumerate() {
            let entry = entry_name(i, Some(&attr.name));
            if !valid_name(&attr.name) {
                return Err(RegistryError::InvalidName {
                    entry,
                    name: attr.name.clone(),
                });
            }
            if let Some(first) = attrs[..i].iter().position(|a| a.name == attr.name) {
                return Err(RegistryError::Duplicate {
                    entry,
                    name: attr.name.clone(),
                    first: first + 1,
                });
            }
            if attr.default.attribute_type() != attr.attr_type {
                return Err(RegistryError::WrongDefault {
                    entry,
                    attr_type: attr.attr_type,
                });
            }
            if attr.attr_type == AttributeType::List && attr.include_in_comprehensive {
                return Err(RegistryError::ListInComprehensive { entry });
            }
        }
        Ok(AttributeRegistry {
            raw_keys: RawKeyIndex::new(&attrs),
            attrs,
        })
    }

    /// Loads a registry file; the extension (`.toml` or `.json`) selects the format.
    /// Only a regular file of at most [`crate::MAX_REGISTRY_BYTES`] is read (a FIFO, a
    /// device or a longer file is refused, see [`crate::read_regular_file`]).
    pub fn from_path(path: &Path) -> Result<AttributeRegistry, RegistryError> {
        let text = read_regular_file(path, MAX_REGISTRY_BYTES, "attribute registry")?;
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("toml") => Self::from_toml_str(&text),
            Some(e) if e.eq_ignore_ascii_case("json") => Self::from_json_str(&text),
            _ => Err(RegistryError::UnknownFormat {
                path: path.to_owned(),
            }),
        }
    }

    /// Reads a registry from TOML text (format: see `docs/processor.md`).
    pub fn from_toml_str(text: &str) -> Result<AttributeRegistry, RegistryError> {
        let doc: Value = toml::from_str(text).map_err(|e| RegistryError::Syntax {
            format: "TOML",
            message: e.to_string(),
        })?;
        Self::from_document(&doc)
    }

    /// Reads a registry from JSON text (same shape as the TOML form).
    pub fn from_json_str(text: &str) -> Result<AttributeRegistry, RegistryError> {
        let doc: Value = serde_json::from_str(text).map_err(|e| RegistryError::Syntax {
            format: "JSON",
            message: e.to_string(),
        })?;
        Self::from_document(&doc)
    }

    /// Reads a registry from a parsed document:
    /// `{ "include_defaults": bool?, "attributes": [ {entry}, … ] }`.
    pub fn from_document(doc: &Value) -> Result<AttributeRegistry, RegistryError> {
        let top = doc
            .as_object()
            .ok_or_else(|| RegistryError::Shape("the document must be a table/object".into()))?;
        if let Some(key) = top
            .keys()
            .find(|k| *k != "attributes" && *k != "include_defaults")
        {
            return Err(RegistryError::Shape(format!(
                "unknown top-level key `{key}` (expected `attributes` and optionally `include_defaults`)"
            )));
        }
        let include_defaults = match top.get("include_defaults") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return Err(RegistryError::Shape(
                    "`include_defaults` must be true or false".into(),
                ))
            }
        };
        let entries = match top.get("attributes") {
            Some(Value::Array(entries)) => entries.as_slice(),
            None => &[],
            Some(_) => {
                return Err(RegistryError::Shape(
                    "`attributes` must be an array of tables".into(),
                ))
            }
        };
        let mut attrs = if include_defaults {
            Self::builtin_attributes()
        } else {
            Vec::new()
        };
        let offset = attrs.len();
        for (i, entry) in entries.iter().enumerate() {
            attrs.push(parse_entry(offset + i, entry)?);
        }
        Self::new(attrs)
    }

    /// The definitions, in registry order.
    pub fn attributes(&self) -> &[AttributeDef] {
        &self.attrs
    }

    /// The attributes by raw key.
    pub(crate) fn raw_keys(&self) -> &RawKeyIndex {
        &self.raw_keys
    }

    /// Position of the attribute with this name.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.attrs.iter().position(|a| a.name == name)
    }

    /// The attribute with this name.
    pub fn get(&self, name: &str) -> Option<&AttributeDef> {
        self.attrs.iter().find(|a| a.name == name)
    }

    /// Number of attributes.
    pub fn len(&self) -> usize {
        self.attrs.len()
    }

    /// Whether the registry has no attributes.
    pub fn is_empty(&self) -> bool {
        self.attrs.is_empty()
    }
}

fn valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn entry_name(index: usize, name: Option<&str>) -> String {
    match name {
        Some(name) => format!("attribute #{} ({name})", index + 1),
        None => format!("attribute #{}", index + 1),
    }
}

const ENTRY_FIELDS: [&str; 6] = [
    "name",
    "raw_key",
    "type",
    "default",
    "include_in_comprehensive",
    "metric_order",
];

fn parse_entry(index: usize, entry: &Value) -> Result<AttributeDef, RegistryError> {
    let table: &Map<String, Value> = entry.as_object().ok_or_else(|| {
        RegistryError::Shape(format!(
            "{} must be a table/object",
            entry_name(index, None)
        ))
    })?;
    let name = match table.get("name") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => {
            return Err(RegistryError::FieldType {
                entry: entry_name(index, None),
                field: "name",
                expected: "a string",
            })
        }
        None => {
            return Err(RegistryError::MissingField {
                entry: entry_name(index, None),
                field: "name",
            })
        }
    };
    let entry = entry_name(index, Some(&name));
    if let Some(field) = table.keys().find(|k| !ENTRY_FIELDS.contains(&k.as_str())) {
        return Err(RegistryError::UnknownField {
            entry,
            field: field.clone(),
        });
    }
    let raw_key = match table.get("raw_key") {
        None => name.clone(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => {
            return Err(RegistryError::FieldType {
                entry,
                field: "raw_key",
                expected: "a string",
            })
        }
    };
    let attr_type = match table.get("type") {
        None => {
            return Err(RegistryError::MissingField {
                entry,
                field: "type",
            })
        }
        Some(Value::String(s)) => {
            AttributeType::parse(s).ok_or_else(|| RegistryError::UnknownType {
                entry: entry.clone(),
                found: s.clone(),
            })?
        }
        Some(_) => {
            return Err(RegistryError::FieldType {
                entry,
                field: "type",
                expected: "a string",
            })
        }
    };
    let default = match table.get("default") {
        None => {
            return Err(RegistryError::MissingField {
                entry,
                field: "default",
            })
        }
        Some(value) => {
            parse_default(attr_type, value).ok_or_else(|| RegistryError::WrongDefault {
                entry: entry.clone(),
                attr_type,
            })?
        }
    };
    let include_in_comprehensive = match table.get("include_in_comprehensive") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(RegistryError::FieldType {
                entry,
                field: "include_in_comprehensive",
                expected: "true or false",
            })
        }
    };
    let metric_order = match table.get("metric_order") {
        None => AttributeDef::DEFAULT_METRIC_ORDER,
        Some(v) => v.as_i64().ok_or_else(|| RegistryError::FieldType {
            entry: entry.clone(),
            field: "metric_order",
            expected: "a 64-bit integer",
        })?,
    };
    Ok(AttributeDef {
        name,
        raw_key,
        attr_type,
        default,
        include_in_comprehensive,
        metric_order,
    })
}

fn parse_default(attr_type: AttributeType, value: &Value) -> Option<DefaultValue> {
    match (attr_type, value) {
        (AttributeType::String, Value::String(s)) => Some(DefaultValue::String(s.clone())),
        (AttributeType::Boolean, Value::Bool(b)) => Some(DefaultValue::Boolean(*b)),
        (AttributeType::Integer, Value::Number(n)) => n.as_i64().map(DefaultValue::Integer),
        (AttributeType::List, Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .map(DefaultValue::List),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_registry_is_valid() {
        let builtin = AttributeRegistry::new(AttributeRegistry::builtin_attributes()).unwrap();
        assert_eq!(builtin, AttributeRegistry::default());
        assert_eq!(builtin.len(), 9);
        assert_eq!(builtin.get("gpus").unwrap().raw_key, "gpu");
    }

    #[test]
    fn names_are_checked() {
        for bad in ["", "1x", "a-b", "a b", "é"] {
            assert!(!valid_name(bad), "{bad:?}");
        }
        for good in ["a", "_x", "framework_2"] {
            assert!(valid_name(good), "{good:?}");
        }
    }
}
