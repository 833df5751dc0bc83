//! Metrics documents: how metrics move between stores, in the format of TAO's own
//! migration scripts (`nvidia_tao_core/telemetry/migration/{export,import}_metrics.py`).
//!
//! A document is one JSON object: every metric key with its integer value, plus
//! `last_updated` (a string). TAO's exports also carry MongoDB's `_id` and the
//! document's `name`; both are ignored on import. `store export` writes the map as
//! [`Metrics::to_json_string`] does (sorted keys), which TAO's import reads as well.

use std::fmt;

use nixl_telemetry_processor::{split_series, Metrics, Timestamp};
use serde_json::Value;

use crate::error::DocumentError;
use crate::record_rules::shown_key;

/// The keys of a TAO export that are MongoDB's, not metrics: dropped on import.
pub const IGNORED_KEYS: [&str; 2] = ["_id", "name"];

/// A metrics document, read and checked.
#[derive(Debug, Clone)]
pub struct MetricsDocument {
    metrics: Metrics,
    ignored: Vec<String>,
}

impl MetricsDocument {
    /// Reads a document: a JSON object whose values are 64-bit integers, except
    /// `last_updated` (an ISO 8601 string, or `null`) and the ignored `_id` and
    /// `name`.
    /// A key that appears twice is refused, naming it.
    pub fn parse(text: &str) -> Result<MetricsDocument, DocumentError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| DocumentError::Content(nixl_telemetry_processor::StateError::Json(e)))?;
        if value.is_object() {
            if let Ok(KeysOnce(Some(key))) = serde_json::from_str::<KeysOnce>(text) {
                return Err(DocumentError::DuplicateKey(shown_key(&key)));
            }
        }
        MetricsDocument::from_value(value)
    }

    /// Reads a parsed document (see [`MetricsDocument::parse`]).
    pub fn from_value(mut value: Value) -> Result<MetricsDocument, DocumentError> {
        let mut ignored = Vec::new();
        if let Value::Object(map) = &mut value {
            for key in IGNORED_KEYS {
                if map.remove(key).is_some() {
                    ignored.push(key.to_owned());
                }
            }
        }
        let metrics = Metrics::from_json_value(&value).map_err(DocumentError::Content)?;
        if let Some(last) = metrics.last_updated().filter(|t| !t.is_empty()) {
            Timestamp::parse_iso(&last).map_err(DocumentError::LastUpdated)?;
        }
        Ok(MetricsDocument { metrics, ignored })
    }

    /// The document's metrics (and `last_updated`).
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Which of `_id` and `name` the document had (and were dropped).
    pub fn ignored_keys(&self) -> &[String] {
        &self.ignored
    }
}

/// How an import combines the document with the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ImportMode {
    /// The store keeps its metrics; the document's keys are added, and where a key
    /// is in both the document's value wins (TAO's merge: `dict.update`). The
    /// document's `last_updated` wins too, when it has one.
    #[default]
    Merge,
    /// The store holds exactly the document afterwards: metrics the document lacks
    /// are removed, and `last_updated` is the document's.
    Replace,
}

/// What an import changes (or would change, in a dry run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportSummary {
    /// Merge or replace.
    pub mode: ImportMode,
    /// Whether nothing was changed.
    pub dry_run: bool,
    /// Metrics in the store before.
    pub current: usize,
    /// Metrics in the document.
    pub imported: usize,
    /// Metrics in the store after.
    pub after: usize,
    /// Document keys the store did not have.
    pub added: usize,
    /// Document keys the store had with another value.
    pub changed: usize,
    /// Document keys the store had with the same value.
    pub unchanged: usize,
    /// Store keys that the import removes (replace only).
    pub removed: usize,
    /// `last_updated` before.
    pub last_updated_before: Option<String>,
    /// `last_updated` after.
    pub last_updated_after: Option<String>,
    /// The MongoDB keys of a TAO export that were ignored.
    pub ignored: Vec<String>,
    /// Document keys that are not valid Prometheus series, sorted (TAO's processor
    /// writes label values unescaped): imported, kept in the JSON map, left out of
    /// `GET /metrics`.
    pub not_series: Vec<String>,
}

impl fmt::Display for ImportSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = match self.mode {
            ImportMode::Merge => "merge (the document's values win where both have a key)",
            ImportMode::Replace => "replace (the store holds exactly the document afterwards)",
        };
        // Text from the document or the store, control characters escaped.
        let show = |t: &Option<String>| t.as_deref().map_or_else(|| "(none)".into(), shown_key);
        writeln!(f, "mode: {mode}")?;
        writeln!(f, "metrics in the store: {}", self.current)?;
        writeln!(f, "metrics in the document: {}", self.imported)?;
        if !self.ignored.is_empty() {
            writeln!(
                f,
                "ignored keys of the document: {}",
                self.ignored.join(", ")
            )?;
        }
        if let Some(first) = self.not_series.first() {
            writeln!(
                f,
                "keys that are not valid Prometheus series: {} (kept; GET /metrics leaves them out), first: {}",
                self.not_series.len(),
                shown_key(first)
            )?;
        }
        writeln!(f, "  new: {}", self.added)?;
        writeln!(f, "  changed: {}", self.changed)?;
        writeln!(f, "  unchanged: {}", self.unchanged)?;
        if self.mode == ImportMode::Replace {
            writeln!(f, "  removed (not in the document): {}", self.removed)?;
        }
        writeln!(
            f,
            "last_updated: {} -> {}",
            show(&self.last_updated_before),
            show(&self.last_updated_after)
        )?;
        writeln!(f, "metrics in the store afterwards: {}", self.after)?;
        if self.dry_run {
            writeln!(
                f,
                "dry run: nothing was changed (run again without --dry-run to import)"
            )?;
        } else {
            writeln!(f, "imported")?;
        }
        Ok(())
    }
}

/// An import worked out against the store's current metrics.
pub(crate) struct ImportPlan<'a> {
    /// The metrics to write (after removing every metric, for a replace).
    pub writes: Vec<(&'a str, i64)>,
    /// `last_updated` afterwards.
    pub last_updated: Option<String>,
    /// What changes.
    pub summary: ImportSummary,
}

/// Works out what importing `document` into a store holding `current` writes.
pub(crate) fn plan_import<'a>(
    current: &Metrics,
    document: &'a MetricsDocument,
    mode: ImportMode,
    dry_run: bool,
) -> ImportPlan<'a> {
    let incoming = &document.metrics;
    let (mut added, mut changed, mut unchanged) = (0, 0, 0);
    let mut writes = Vec::with_capacity(incoming.len());
    for (key, value) in incoming.iter() {
        match current.get(key) {
            None => added += 1,
            Some(old) if old != value => changed += 1,
            Some(_) => {
                unchanged += 1;
                if mode == ImportMode::Merge {
                    continue;
                }
            }
        }
        writes.push((key, value));
    }
    writes.sort_unstable();
    let before = current.last_updated().map(|t| t.into_owned());
    let from_document = incoming.last_updated().map(|t| t.into_owned());
    let (last_updated, removed, after) = match mode {
        ImportMode::Merge => (
            from_document.or_else(|| before.clone()),
            0,
            current.len() + added,
        ),
        ImportMode::Replace => (
            from_document,
            current.len() - changed - unchanged,
            incoming.len(),
        ),
    };
    ImportPlan {
        writes,
        summary: ImportSummary {
            mode,
            dry_run,
            current: current.len(),
            imported: incoming.len(),
            after,
            added,
            changed,
            unchanged,
            removed,
            last_updated_before: before,
            last_updated_after: last_updated.clone(),
            ignored: document.ignored.clone(),
            not_series: {
                let mut keys: Vec<String> = incoming
                    .iter()
                    .filter(|(key, _)| split_series(key).is_err())
                    .map(|(key, _)| key.to_owned())
                    .collect();
                keys.sort_unstable();
                keys
            },
        },
        last_updated,
    }
}

/// The first key that appears twice in a JSON object's top level, if any.
struct KeysOnce(Option<String>);

impl<'de> serde::Deserialize<'de> for KeysOnce {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> serde::de::Visitor<'de> for Keys {
            type Value = KeysOnce;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<KeysOnce, A::Error> {
                let mut seen = std::collections::HashSet::new();
                while let Some(key) = map.next_key::<String>()? {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    if !seen.insert(key.clone()) {
                        return Ok(KeysOnce(Some(key)));
                    }
                }
                Ok(KeysOnce(None))
            }
        }
        deserializer.deserialize_map(Keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(text: &str) -> Metrics {
        Metrics::from_json_str(text).unwrap()
    }

    #[test]
    fn a_key_given_twice_is_refused_by_name() {
        let err = MetricsDocument::parse(r#"{"a": 1, "b\u001b": 2, "b\u001b": 3}"#).unwrap_err();
        assert!(matches!(err, DocumentError::DuplicateKey(_)), "{err:?}");
        let message = err.to_string();
        assert!(message.contains("`b\\u{1b}` more than once"), "{message}");
        assert!(!message.contains('\u{1b}'), "{message}");
        // Distinct keys are read as ever.
        assert!(MetricsDocument::parse(r#"{"a": 1, "b": 2}"#).is_ok());
    }

    #[test]
    fn the_summary_escapes_terminal_controls() {
        let document = MetricsDocument::parse(
            r#"{"x{a=\"\u001b[2J\"} ": 1, "last_updated": "2025-01-13T10:00:00\u001b[31m"}"#,
        );
        // A last_updated with controls is no ISO time; the key alone then.
        assert!(document.is_err());
        let document = MetricsDocument::parse(r#"{"x{a=\"\u001b[2J\"} ": 1}"#).unwrap();
        let plan = plan_import(&Metrics::new(), &document, ImportMode::Merge, true);
        let text = plan.summary.to_string();
        assert!(text.contains("\\u{1b}[2J"), "{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
    }

    #[test]
    fn tao_exports_are_read_without_mongodb_keys() {
        let doc = MetricsDocument::parse(
            r#"{"_id": "65a1b2c3d4e5f6a7b8c9d0e1", "name": "metrics", "a": 1,
                "last_updated": "2025-01-13T22:18:25.626509"}"#,
        )
        .unwrap();
        assert_eq!(doc.metrics().get("a"), Some(1));
        assert_eq!(doc.metrics().len(), 1);
        assert_eq!(doc.ignored_keys(), ["_id", "name"]);
    }

    #[test]
    fn bad_documents_name_what_is_wrong() {
        for (text, says) in [
            ("[1]", "must be a JSON object"),
            (
                r#"{"a": 1.5}"#,
                "metrics key `a`: expected a 64-bit integer",
            ),
            (r#"{"a": 1e30}"#, "metrics key `a`"),
            (r#"{"last_updated": "yesterday"}"#, "last_updated"),
            (r#"{"last_updated": 5}"#, "expected a string"),
            (r#"{"a": 1"#, "not valid JSON"),
        ] {
            let err = MetricsDocument::parse(text).unwrap_err().to_string();
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn merge_lets_the_document_win_and_replace_removes_the_rest() {
        let current = metrics(r#"{"a": 1, "b": 2, "c": 3, "last_updated": "2025-01-01T00:00:00"}"#);
        let doc = MetricsDocument::parse(r#"{"b": 20, "c": 3, "d": 4}"#).unwrap();
        let merge = plan_import(&current, &doc, ImportMode::Merge, true);
        assert_eq!(merge.writes, [("b", 20), ("d", 4)]);
        assert_eq!(merge.last_updated.as_deref(), Some("2025-01-01T00:00:00"));
        let s = &merge.summary;
        assert_eq!(
            (
                s.current,
                s.imported,
                s.added,
                s.changed,
                s.unchanged,
                s.removed,
                s.after
            ),
            (3, 3, 1, 1, 1, 0, 4)
        );
        let replace = plan_import(&current, &doc, ImportMode::Replace, false);
        assert_eq!(replace.writes, [("b", 20), ("c", 3), ("d", 4)]);
        assert_eq!(replace.last_updated, None);
        let s = &replace.summary;
        assert_eq!((s.removed, s.after), (1, 3));
        let text = s.to_string();
        assert!(text.contains("removed (not in the document): 1"), "{text}");
        assert!(
            text.contains("last_updated: 2025-01-01T00:00:00 -> (none)"),
            "{text}"
        );
        let dated = MetricsDocument::parse(r#"{"last_updated": "2025-02-01T00:00:00"}"#).unwrap();
        let merge = plan_import(&current, &dated, ImportMode::Merge, true);
        assert_eq!(merge.last_updated.as_deref(), Some("2025-02-01T00:00:00"));
        assert!(merge
            .summary
            .to_string()
            .contains("dry run: nothing was changed"));
    }
}
