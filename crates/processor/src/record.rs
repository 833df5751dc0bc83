//! Raw records: JSON objects read without copying their text where possible.
//!
//! A [`Record`] borrows its strings from the line it was parsed from (strings with
//! escapes are the only ones copied), so reading a record costs a few small vectors
//! and no string allocations in the common case.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::error::RecordError;

/// A JSON number as the parser read it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum JsonNumber {
    /// A non-negative integer that fits in 64 bits.
    PosInt(u64),
    /// A negative integer that fits in 64 bits.
    NegInt(i64),
    /// Any other number: one with a fraction or exponent, or an integer outside the 64-bit
    /// range (read as the nearest double, see `docs/processor.md`).
    Float(f64),
}

/// A JSON value whose strings borrow from the parsed text where possible.
#[derive(Debug, Clone, PartialEq)]
pub enum JsonValue<'a> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number.
    Number(JsonNumber),
    /// A string.
    String(Cow<'a, str>),
    /// An array.
    Array(Vec<JsonValue<'a>>),
    /// An object, members in text order (duplicates kept; lookups take the last one).
    Object(Vec<(Cow<'a, str>, JsonValue<'a>)>),
}

impl<'a> JsonValue<'a> {
    /// What kind of JSON value this is, for error messages (`a string`, `an array`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            JsonValue::Null => "null",
            JsonValue::Bool(_) => "a boolean",
            JsonValue::Number(JsonNumber::Float(_)) => "a floating-point number",
            JsonValue::Number(_) => "an integer",
            JsonValue::String(_) => "a string",
            JsonValue::Array(_) => "an array",
            JsonValue::Object(_) => "an object",
        }
    }

    /// Parses one JSON text, borrowing its strings where they have no escapes.
    /// The value and every error are exactly serde_json's
    /// (`serde_json::from_str::<JsonValue>`): the common shape of records is
    /// read by a direct parser, anything outside it (floats, `\u` escapes,
    /// deep nesting, every syntax error) by serde_json.
    pub fn parse(text: &'a str) -> Result<JsonValue<'a>, serde_json::Error> {
        match crate::direct_parse::parse_direct(text) {
            Some(value) => Ok(value),
            None => serde_json::from_str(text),
        }
    }

    /// Borrows every string of a `serde_json::Value`.
    pub fn from_serde(value: &'a serde_json::Value) -> JsonValue<'a> {
        match value {
            serde_json::Value::Null => JsonValue::Null,
            serde_json::Value::Bool(b) => JsonValue::Bool(*b),
            serde_json::Value::Number(n) => JsonValue::Number(if let Some(u) = n.as_u64() {
                JsonNumber::PosInt(u)
            } else if let Some(i) = n.as_i64() {
                JsonNumber::NegInt(i)
            } else {
                JsonNumber::Float(n.as_f64().unwrap_or(f64::NAN))
            }),
            serde_json::Value::String(s) => JsonValue::String(Cow::Borrowed(s)),
            serde_json::Value::Array(items) => {
                JsonValue::Array(items.iter().map(JsonValue::from_serde).collect())
            }
            serde_json::Value::Object(map) => JsonValue::Object(
                map.iter()
                    .map(|(k, v)| (Cow::Borrowed(k.as_str()), JsonValue::from_serde(v)))
                    .collect(),
            ),
        }
    }
}

/// A raw usage record: the members of one JSON object.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Record<'a> {
    fields: Vec<(Cow<'a, str>, JsonValue<'a>)>,
}

impl<'a> Record<'a> {
    /// Parses one JSON object. Anything else (an array, a number, bad JSON) is an error.
    ///
    /// Lines of the common shape are read by a direct parser; the others, and every
    /// error, by serde_json (the values and messages are serde_json's either way).
    pub fn parse(text: &'a str) -> Result<Record<'a>, RecordError> {
        Record::from_json(JsonValue::parse(text).map_err(RecordError::Json)?)
    }

    /// Wraps a parsed value, which must be an object.
    pub fn from_json(value: JsonValue<'a>) -> Result<Record<'a>, RecordError> {
        match value {
            JsonValue::Object(fields) => Ok(Record { fields }),
            other => Err(RecordError::NotAnObject {
                found: other.kind(),
            }),
        }
    }

    /// Borrows a `serde_json::Value`, which must be an object.
    pub fn from_serde(value: &'a serde_json::Value) -> Result<Record<'a>, RecordError> {
        Record::from_json(JsonValue::from_serde(value))
    }

    /// Builds a record from members (later duplicates win on lookup, as in a parsed object).
    pub fn from_fields(fields: Vec<(Cow<'a, str>, JsonValue<'a>)>) -> Record<'a> {
        Record { fields }
    }

    /// The value of a member; with duplicate keys, the last one (as JSON parsers do).
    pub fn get(&self, key: &str) -> Option<&JsonValue<'a>> {
        let first = key.as_bytes().first();
        self.fields
            .iter()
            .rev()
            // Length and first byte first: most keys differ there, without a memcmp call.
            .find(|(k, _)| k.len() == key.len() && k.as_bytes().first() == first && k == key)
            .map(|(_, v)| v)
    }

    /// The members in text order.
    pub fn fields(&self) -> &[(Cow<'a, str>, JsonValue<'a>)] {
        &self.fields
    }

    /// Takes the members out.
    pub fn into_fields(self) -> Vec<(Cow<'a, str>, JsonValue<'a>)> {
        self.fields
    }
}

/// A string that borrows from the input when it has no escapes.
struct CowStr<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for CowStr<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StrVisitor;
        impl<'de> Visitor<'de> for StrVisitor {
            type Value = CowStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(StrVisitor)
    }
}

impl<'de> Deserialize<'de> for JsonValue<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = JsonValue<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(JsonValue::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(JsonValue::Null)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(JsonValue::Bool(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(JsonValue::Number(JsonNumber::PosInt(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(JsonValue::Number(if v >= 0 {
            JsonNumber::PosInt(v as u64)
        } else {
            JsonNumber::NegInt(v)
        }))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(JsonValue::Number(JsonNumber::Float(v)))
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(JsonValue::String(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(JsonValue::String(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(JsonValue::String(Cow::Owned(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(item) = seq.next_element::<JsonValue<'de>>()? {
            items.push(item);
        }
        Ok(JsonValue::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = Vec::with_capacity(map.size_hint().unwrap_or(0).clamp(16, 64));
        while let Some(CowStr(key)) = map.next_key::<CowStr<'de>>()? {
            let value = map.next_value::<JsonValue<'de>>()?;
            fields.push((key, value));
        }
        Ok(JsonValue::Object(fields))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_without_escapes_are_borrowed() {
        let text = r#"{"a": "plain", "b": "esc\"aped", "c": [1, -2, 2.5, null, true]}"#;
        let record = Record::parse(text).unwrap();
        assert!(matches!(
            record.get("a"),
            Some(JsonValue::String(Cow::Borrowed("plain")))
        ));
        assert!(
            matches!(record.get("b"), Some(JsonValue::String(Cow::Owned(s))) if s == "esc\"aped")
        );
        assert_eq!(
            record.get("c"),
            Some(&JsonValue::Array(vec![
                JsonValue::Number(JsonNumber::PosInt(1)),
                JsonValue::Number(JsonNumber::NegInt(-2)),
                JsonValue::Number(JsonNumber::Float(2.5)),
                JsonValue::Null,
                JsonValue::Bool(true),
            ]))
        );
    }

    #[test]
    fn last_duplicate_wins_and_non_objects_are_rejected() {
        let record = Record::parse(r#"{"k": 1, "k": 2}"#).unwrap();
        assert_eq!(
            record.get("k"),
            Some(&JsonValue::Number(JsonNumber::PosInt(2)))
        );
        assert!(matches!(
            Record::parse("[1]"),
            Err(RecordError::NotAnObject { found: "an array" })
        ));
        assert!(matches!(Record::parse("{"), Err(RecordError::Json(_))));
    }

    #[test]
    fn serde_values_convert_alike() {
        let text = r#"{"x": {"y": [1, "z"]}, "n": -7, "f": 1e300}"#;
        let serde: serde_json::Value = serde_json::from_str(text).unwrap();
        let ours = Record::parse(text).unwrap();
        let theirs = Record::from_serde(&serde).unwrap();
        for key in ["x", "n", "f"] {
            assert_eq!(ours.get(key), theirs.get(key), "{key}");
        }
    }
}
