//! The metrics map: integer values by key, plus the processor's `last_updated`
//! timestamp. Memory grows with the number of distinct keys only.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io;

use serde_json::Value;

use crate::error::{BuildError, StateError};
use crate::hash::KeyHashState;

/// The key under which the processor's timestamp is serialised.
pub const LAST_UPDATED: &str = "last_updated";

/// Integer metrics by key, and the time of the last applied record.
///
/// Serialised as one flat JSON object whose keys are sorted by code point, every value
/// an integer except `last_updated`, a string (see [`Metrics::write_json`]).
#[derive(Debug, Clone, Default)]
pub struct Metrics {
    values: HashMap<String, i64, KeyHashState>,
    last_updated: Option<String>,
}

impl PartialEq for Metrics {
    fn eq(&self, other: &Self) -> bool {
        self.last_updated == other.last_updated && self.values == other.values
    }
}

impl Eq for Metrics {}

impl Metrics {
    /// An empty map.
    pub fn new() -> Metrics {
        Metrics::default()
    }

    /// Number of integer metrics (`last_updated` not counted).
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are no integer metrics.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The value of a metric.
    pub fn get(&self, key: &str) -> Option<i64> {
        self.values.get(key).copied()
    }

    /// Sets a metric. `last_updated` is reserved and refused.
    pub fn insert(&mut self, key: impl Into<String>, value: i64) -> Result<(), BuildError> {
        let key = key.into();
        if key == LAST_UPDATED {
            return Err(BuildError::ReservedKey);
        }
        self.values.insert(key, value);
        Ok(())
    }

    /// The metrics in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, i64)> {
        self.values.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// The metrics sorted by key (code-point order).
    pub fn sorted(&self) -> Vec<(&str, i64)> {
        let mut entries: Vec<(&str, i64)> = self.iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
        entries
    }

    /// The ISO time of the last applied record, as the processor wrote it.
    pub fn last_updated(&self) -> Option<&str> {
        self.last_updated.as_deref()
    }

    /// Replaces the `last_updated` text (the processor parses it as the previous `now`).
    pub fn set_last_updated(&mut self, value: Option<String>) {
        self.last_updated = value;
    }

    pub(crate) fn last_updated_buffer(&mut self) -> &mut String {
        self.last_updated.get_or_insert_with(String::new)
    }

    /// Reads a metrics document: a JSON object of integers, plus an optional
    /// `last_updated` string (or `null`).
    pub fn from_json_str(text: &str) -> Result<Metrics, StateError> {
        let value: Value = serde_json::from_str(text).map_err(StateError::Json)?;
        Metrics::from_json_value(&value)
    }

    /// Reads a parsed metrics document (see [`Metrics::from_json_str`]).
    pub fn from_json_value(value: &Value) -> Result<Metrics, StateError> {
        let map = value.as_object().ok_or(StateError::NotAnObject {
            found: json_kind(value),
        })?;
        let mut metrics = Metrics::new();
        metrics.values.reserve(map.len());
        for (key, v) in map {
            if key == LAST_UPDATED {
                metrics.last_updated = match v {
                    Value::String(s) => Some(s.clone()),
                    Value::Null => None,
                    other => {
                        return Err(StateError::BadValue {
                            key: key.clone(),
                            expected: "a string",
                            found: json_kind(other),
                        })
                    }
                };
                continue;
            }
            let n = v.as_i64().ok_or_else(|| StateError::BadValue {
                key: key.clone(),
                expected: "a 64-bit integer",
                found: json_kind(v),
            })?;
            metrics.values.insert(key.clone(), n);
        }
        Ok(metrics)
    }

    /// Writes the metrics as JSON the way the reference's state files are written:
    /// keys sorted by code point, one member per line indented by one space, `": "`
    /// between key and value, non-ASCII text as is, and a trailing newline.
    pub fn write_json<W: io::Write>(&self, mut out: W) -> io::Result<()> {
        out.write_all(self.to_json_string().as_bytes())
    }

    /// The text [`Metrics::write_json`] writes.
    pub fn to_json_string(&self) -> String {
        let entries = self.sorted();
        let mut s =
            String::with_capacity(entries.iter().map(|e| e.0.len() + 32).sum::<usize>() + 64);
        let mut first = true;
        let mut member = |s: &mut String, key: &str| {
            s.push_str(if first { "{\n \"" } else { ",\n \"" });
            first = false;
            write_json_str(s, key);
            s.push_str("\": ");
        };
        let mut pending_last = self.last_updated.as_deref();
        for (key, value) in entries {
            if let Some(last) = pending_last.filter(|_| LAST_UPDATED < key) {
                member(&mut s, LAST_UPDATED);
                s.push('"');
                write_json_str(&mut s, last);
                s.push('"');
                pending_last = None;
            }
            member(&mut s, key);
            let _ = write!(s, "{value}");
        }
        if let Some(last) = pending_last {
            member(&mut s, LAST_UPDATED);
            s.push('"');
            write_json_str(&mut s, last);
            s.push('"');
        }
        if first {
            s.push_str("{}\n");
        } else {
            s.push_str("\n}\n");
        }
        s
    }
}

/// Appends a JSON string body (without quotes), escaping `"`, `\` and control characters
/// (`\b \f \n \r \t` by name, others as `\u00xx`) and leaving all other text as is.
pub(crate) fn write_json_str(out: &mut String, text: &str) {
    let needs = text.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\');
    if !needs {
        out.push_str(text);
        return;
    }
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a floating-point number",
        Value::Number(_) => "an integer out of the 64-bit range",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Undo information for the record being applied: the keys written so far and their
/// previous values, kept in buffers reused across records.
#[derive(Debug, Default)]
pub(crate) struct UndoLog {
    keys: String,
    entries: Vec<(u32, u32, Option<i64>)>,
}

impl UndoLog {
    pub(crate) fn clear(&mut self) {
        self.keys.clear();
        self.entries.clear();
    }

    fn record(&mut self, key: &str, previous: Option<i64>) {
        let start = self.keys.len() as u32;
        self.keys.push_str(key);
        self.entries.push((start, self.keys.len() as u32, previous));
    }

    /// Puts back every value written since the last [`UndoLog::clear`], newest first.
    pub(crate) fn roll_back(&mut self, metrics: &mut Metrics) {
        for &(s, e, previous) in self.entries.iter().rev() {
            let key = &self.keys[s as usize..e as usize];
            match previous {
                Some(v) => {
                    if let Some(slot) = metrics.values.get_mut(key) {
                        *slot = v;
                    }
                }
                None => {
                    metrics.values.remove(key);
                }
            }
        }
        self.clear();
    }
}

/// The metrics as builders see them while a record is applied: every write is
/// recorded so that a record that fails half-way leaves the map exactly as it was.
#[derive(Debug)]
pub struct MetricsUpdate<'m> {
    metrics: &'m mut Metrics,
    undo: &'m mut UndoLog,
}

impl<'m> MetricsUpdate<'m> {
    pub(crate) fn new(metrics: &'m mut Metrics, undo: &'m mut UndoLog) -> MetricsUpdate<'m> {
        MetricsUpdate { metrics, undo }
    }

    /// The current value of a metric (including this record's earlier writes).
    pub fn get(&self, key: &str) -> Option<i64> {
        self.metrics.get(key)
    }

    /// Adds `delta` to a metric (a missing metric counts as 0) and returns the new value.
    /// Fails, changing nothing, if the result leaves the 64-bit range.
    pub fn add(&mut self, key: &str, delta: i64) -> Result<i64, BuildError> {
        if let Some(slot) = self.metrics.values.get_mut(key) {
            let new = slot
                .checked_add(delta)
                .ok_or_else(|| BuildError::Overflow {
                    key: key.to_owned(),
                })?;
            self.undo.record(key, Some(*slot));
            *slot = new;
            Ok(new)
        } else {
            self.insert_new(key, delta)?;
            Ok(delta)
        }
    }

    /// Sets a metric to `value`.
    pub fn set(&mut self, key: &str, value: i64) -> Result<(), BuildError> {
        if let Some(slot) = self.metrics.values.get_mut(key) {
            self.undo.record(key, Some(*slot));
            *slot = value;
            Ok(())
        } else {
            self.insert_new(key, value)
        }
    }

    fn insert_new(&mut self, key: &str, value: i64) -> Result<(), BuildError> {
        if key == LAST_UPDATED {
            return Err(BuildError::ReservedKey);
        }
        self.undo.record(key, None);
        self.metrics.values.insert(key.to_owned(), value);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_sorted_with_last_updated_in_place() {
        let mut m = Metrics::new();
        m.insert("zeta", 1).unwrap();
        m.insert("alpha", 5_000_000_000).unwrap();
        m.insert("tab\there \"q\" é", -3).unwrap();
        m.set_last_updated(Some("2025-01-13T00:00:00".into()));
        let text = m.to_json_string();
        assert_eq!(
            text,
            "{\n \"alpha\": 5000000000,\n \"last_updated\": \"2025-01-13T00:00:00\",\n \"tab\\there \\\"q\\\" é\": -3,\n \"zeta\": 1\n}\n"
        );
        assert_eq!(Metrics::from_json_str(&text).unwrap(), m);
        assert_eq!(Metrics::new().to_json_string(), "{}\n");
    }

    #[test]
    fn undo_restores_everything() {
        let mut m = Metrics::new();
        m.insert("a", 1).unwrap();
        let before = m.clone();
        let mut undo = UndoLog::default();
        {
            let mut up = MetricsUpdate::new(&mut m, &mut undo);
            up.add("a", 2).unwrap();
            up.add("b", 7).unwrap();
            up.set("a", 40).unwrap();
            assert!(matches!(
                up.add("a", i64::MAX),
                Err(BuildError::Overflow { .. })
            ));
            assert!(matches!(
                up.set(LAST_UPDATED, 1),
                Err(BuildError::ReservedKey)
            ));
        }
        assert_eq!(m.get("a"), Some(40));
        undo.roll_back(&mut m);
        assert_eq!(m, before);
    }

    #[test]
    fn bad_state_values_are_named() {
        let err = Metrics::from_json_str(r#"{"a": 1, "b": 1.5}"#).unwrap_err();
        assert!(err.to_string().contains("`b`"), "{err}");
        assert!(Metrics::from_json_str(r#"{"last_updated": 3}"#).is_err());
        assert!(Metrics::from_json_str("[]").is_err());
    }
}
