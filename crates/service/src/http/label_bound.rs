//! The bound on distinct label values: past the limit, a label's new values are
//! shown as `other`, and `tao_service_label_values_folded_total` counts them.
//!
//! A value once shown keeps its series for the life of the instance, so that no
//! counter jumps from one series to another; the first exposition of an instance
//! admits values in the order of the stored keys (sorted), later ones in the
//! order they first appear.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Mutex, MutexGuard};

use super::text_format::{escape_label_value, TextFormat};

/// The value distinct values past the limit are shown as.
pub(crate) const OTHER: &str = "other";

#[derive(Debug, Default)]
struct Values {
    admitted: HashSet<String>,
    folded: HashSet<String>,
}

/// Distinct values admitted and folded, per label name.
#[derive(Debug)]
pub(crate) struct LabelBound {
    limit: usize,
    labels: Mutex<BTreeMap<String, Values>>,
}

/// The bound, held while one exposition maps its values.
pub(crate) struct Admission<'a> {
    limit: usize,
    labels: MutexGuard<'a, BTreeMap<String, Values>>,
}

impl LabelBound {
    /// At most `limit` distinct values per label (besides `other`).
    pub fn new(limit: usize) -> LabelBound {
        LabelBound {
            limit,
            labels: Mutex::new(BTreeMap::new()),
        }
    }

    /// Holds the bound for one exposition.
    pub fn admission(&self) -> Admission<'_> {
        Admission {
            limit: self.limit,
            labels: self.labels.lock().unwrap_or_else(|e| e.into_inner()),
        }
    }
}

impl Admission<'_> {
    /// `value` of `label` (both as written in the exposition, the value escaped), or
    /// `other` once the label has `limit` other values.
    pub fn value<'v>(&mut self, label: &str, value: &'v str) -> &'v str {
        let values = match self.labels.get_mut(label) {
            Some(values) => values,
            None => self.labels.entry(label.to_owned()).or_default(),
        };
        if value == OTHER || values.admitted.contains(value) {
            return value;
        }
        if values.admitted.len() < self.limit {
            values.admitted.insert(value.to_owned());
            return value;
        }
        if !values.folded.contains(value) {
            values.folded.insert(value.to_owned());
        }
        OTHER
    }

    /// Writes `tao_service_label_values_folded_total`, one series per label seen.
    pub fn write(&self, text: &mut TextFormat) {
        text.family(
            "tao_service_label_values_folded_total",
            "counter",
            "Distinct values of a label shown as \"other\" because the label already had the most distinct values this instance shows (serve --max-label-values).",
        );
        let mut labels = String::new();
        for (label, values) in self.labels.iter() {
            labels.clear();
            labels.push_str("label=\"");
            escape_label_value(&mut labels, label);
            labels.push('"');
            text.sample(
                "tao_service_label_values_folded_total",
                &labels,
                values.folded.len(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_past_the_limit_are_other_and_counted_once() {
        let bound = LabelBound::new(2);
        let mut admission = bound.admission();
        assert_eq!(admission.value("network", "a"), "a");
        assert_eq!(admission.value("network", "b"), "b");
        assert_eq!(admission.value("network", "c"), OTHER);
        assert_eq!(admission.value("network", "c"), OTHER);
        assert_eq!(admission.value("network", "d"), OTHER);
        assert_eq!(admission.value("network", "other"), OTHER);
        assert_eq!(admission.value("network", "a"), "a");
        assert_eq!(admission.value("action", "c"), "c");
        drop(admission);
        // Admitted values stay, whatever comes next.
        let mut admission = bound.admission();
        assert_eq!(admission.value("network", "b"), "b");
        let mut text = TextFormat::new();
        admission.write(&mut text);
        let text = text.finish();
        assert!(text.contains("tao_service_label_values_folded_total{label=\"network\"} 2\n"));
        assert!(text.contains("tao_service_label_values_folded_total{label=\"action\"} 0\n"));
    }
}
