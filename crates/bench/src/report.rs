//! Results: rows, the ratios of medians, the targets of the record path, the
//! pipeline, the flush path and the real loop, a printed table and one JSON
//! object.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Map, Value};

use crate::harness::Sample;

/// What a row's numbers mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Nanoseconds per operation per thread (lower is better).
    NsPerOp,
    /// Million events per second (higher is better).
    MEventsPerSec,
    /// Nanoseconds of slowdown per transfer (lower is better).
    NsPerTransfer,
    /// Percent slowdown (lower is better).
    Percent,
    /// A ratio measured directly, per repeat (lower is better).
    Ratio,
}

impl Unit {
    /// The unit as printed.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::NsPerOp => "ns/op",
            Unit::MEventsPerSec => "Mev/s",
            Unit::NsPerTransfer => "ns/xfer",
            Unit::Percent => "%",
            Unit::Ratio => "×",
        }
    }

    /// Whether a larger number is better (the best repeat is then the maximum).
    pub fn higher_is_better(self) -> bool {
        matches!(self, Unit::MEventsPerSec)
    }
}

/// One measured line.
#[derive(Debug, Clone)]
pub struct Row {
    /// Stable identifier (with `threads`, the key of ratios and targets).
    pub id: String,
    /// What was measured, for people.
    pub label: String,
    /// Threads working at once.
    pub threads: usize,
    /// The unit of `median` and `best`.
    pub unit: Unit,
    /// Median over the repeats.
    pub median: f64,
    /// Best repeat (minimum time or maximum rate).
    pub best: f64,
    /// Number of repeats.
    pub repeats: usize,
    /// Conditions worth knowing.
    pub note: String,
    /// Further numbers (accounting, drops…), shown in JSON.
    pub extra: Map<String, Value>,
}

impl Row {
    /// A nanoseconds-per-operation row from a harness sample.
    pub fn from_ns(id: &str, label: &str, threads: usize, s: Sample, note: &str) -> Row {
        let mut extra = Map::new();
        extra.insert("ops_per_repeat".into(), json!(s.ops_per_repeat));
        extra.insert("repeats_measured".into(), json!(s.measured));
        let note = if threads > 1 {
            let kept = format!("{}/{} overlapped", s.repeats, s.measured);
            if note.is_empty() {
                kept
            } else {
                format!("{note}; {kept}")
            }
        } else {
            note.to_owned()
        };
        Row {
            id: id.to_owned(),
            label: label.to_owned(),
            threads,
            unit: Unit::NsPerOp,
            median: s.median,
            best: s.min,
            repeats: s.repeats,
            note,
            extra,
        }
    }

    /// The key `<id>_<threads>t`.
    pub fn key(&self) -> String {
        format!("{}_{}t", self.id, self.threads)
    }
}

/// One benchmark target, judged on this run's medians.
#[derive(Debug, Clone)]
pub struct Target {
    /// The part of the project the target is about (`collector`, `suite`,
    /// `plug-ins`, `Prometheus`).
    pub part: &'static str,
    /// What it says.
    pub what: String,
    /// The measured value (None when it could not be measured in this run).
    pub measured: Option<f64>,
    /// The bound.
    pub limit: f64,
    /// `true`: measured ≤ limit; `false`: measured ≥ limit.
    pub at_most: bool,
    /// Unit of `measured` and `limit`.
    pub unit: &'static str,
}

impl Target {
    /// Whether the target is met (None when not measured).
    pub fn met(&self) -> Option<bool> {
        let m = self.measured?;
        Some(if self.at_most {
            m <= self.limit
        } else {
            m >= self.limit
        })
    }
}

/// Everything one run produced.
#[derive(Debug, Default)]
pub struct Report {
    /// Every measured row, in order.
    pub rows: Vec<Row>,
    /// Free-form notes (skipped parts and why).
    pub notes: Vec<String>,
    /// Settings of the run (mode, repeats…).
    pub settings: Map<String, Value>,
}

impl Report {
    /// The median of row `key` (`<id>_<threads>t`).
    pub fn median(&self, key: &str) -> Option<f64> {
        self.rows.iter().find(|r| r.key() == key).map(|r| r.median)
    }

    fn ratio(&self, a: &str, b: &str) -> Option<f64> {
        Some(self.median(a)? / self.median(b)?)
    }

    /// The ratios of medians, and the ratios measured per repeat (`crate::paired`), by
    /// name. The first five and `record_vs_floor_paired_1t` have targets (see `targets`).
    pub fn ratios(&self) -> BTreeMap<&'static str, f64> {
        let pairs: [(&'static str, &str, &str); 15] = [
            ("record_vs_floor_1t", "record_1t", "floor_1t"),
            (
                "record_vs_mutex_staging_2t",
                "record_2t",
                "mutex_staging_2t",
            ),
            (
                "record_vs_metrics_histogram_1t",
                "record_1t",
                "metrics_histogram_1t",
            ),
            (
                "record_vs_metrics_histogram_2t",
                "record_2t",
                "metrics_histogram_2t",
            ),
            ("record_2t_vs_1t", "record_2t", "record_1t"),
            ("record_vs_floor_2t", "record_2t", "floor_2t"),
            (
                "record_vs_floor_consumed_2t",
                "record_2t",
                "floor_consumed_2t",
            ),
            (
                "floor_consumed_2t_vs_1t",
                "floor_consumed_2t",
                "floor_consumed_1t",
            ),
            (
                "record_vs_mutex_staging_1t",
                "record_1t",
                "mutex_staging_1t",
            ),
            (
                "record_vs_promclient_histogram_1t",
                "record_1t",
                "promclient_histogram_1t",
            ),
            (
                "record_vs_promclient_histogram_2t",
                "record_2t",
                "promclient_histogram_2t",
            ),
            (
                "record_vs_metrics_counter_1t",
                "record_1t",
                "metrics_counter_1t",
            ),
            (
                "mutex_staging_2t_vs_1t",
                "mutex_staging_2t",
                "mutex_staging_1t",
            ),
            ("generic_vs_record_1t", "generic_record_1t", "record_1t"),
            (
                "shared_vs_private_atomic_2t",
                "shared_atomic_add_2t",
                "floor_atomic_add_2t",
            ),
        ];
        // Ratios measured per repeat (`crate::paired`): the row's median is the ratio.
        let measured: [&'static str; 2] =
            ["record_vs_floor_paired_1t", "record_at_vs_write_paired_1t"];
        pairs
            .into_iter()
            .filter_map(|(name, a, b)| Some((name, self.ratio(a, b)?)))
            .chain(
                measured
                    .into_iter()
                    .filter_map(|name| Some((name, self.median(name)?))),
            )
            .collect()
    }

    /// Every target this suite measures: the record path, the pipeline, the
    /// flush path into a plug-in and into Prometheus, the ratios, the real loop.
    pub fn targets(&self) -> Vec<Target> {
        let ratios = self.ratios();
        let r = |name: &str| ratios.get(name).copied();
        let m = |key: &str| self.median(key);
        let t = |part, what: &str, measured, limit, at_most, unit| Target {
            part,
            what: what.to_owned(),
            measured,
            limit,
            at_most,
            unit,
        };
        let max_of = |keys: &[&str]| -> Option<f64> {
            keys.iter()
                .map(|k| m(k))
                .collect::<Option<Vec<f64>>>()
                .map(|v| v.into_iter().fold(f64::MIN, f64::max))
        };
        let mut out = vec![
            t(
                "collector",
                "fast-path record, 1 thread",
                m("record_1t"),
                15.0,
                true,
                "ns",
            ),
            t(
                "collector",
                "fast-path record, 2 threads (per thread)",
                m("record_2t"),
                20.0,
                true,
                "ns",
            ),
            t(
                "collector",
                "disabled and filtered-out handle record (worst)",
                max_of(&["disabled_record_1t", "filtered_record_1t"]),
                2.0,
                true,
                "ns",
            ),
            t(
                "collector",
                "ring alone, 1 writer → 1 consuming reader",
                m("ring_alone_1t"),
                40.0,
                false,
                "Mev/s",
            ),
            t(
                "collector",
                "whole pipeline, delivered to a consuming reader",
                m("pipeline_1t"),
                20.0,
                false,
                "Mev/s",
            ),
            t(
                "suite",
                "record_vs_floor_1t",
                r("record_vs_floor_1t"),
                1.3,
                true,
                "×",
            ),
            t(
                "suite",
                "record_vs_floor_paired_1t",
                r("record_vs_floor_paired_1t"),
                1.05,
                true,
                "×",
            ),
            t(
                "suite",
                "record_vs_mutex_staging_2t",
                r("record_vs_mutex_staging_2t"),
                0.2,
                true,
                "×",
            ),
            t(
                "suite",
                "record_vs_metrics_histogram_1t",
                r("record_vs_metrics_histogram_1t"),
                0.5,
                true,
                "×",
            ),
            t(
                "suite",
                "record_vs_metrics_histogram_2t",
                r("record_vs_metrics_histogram_2t"),
                0.25,
                true,
                "×",
            ),
            t(
                "suite",
                "record_2t_vs_1t",
                r("record_2t_vs_1t"),
                1.3,
                true,
                "×",
            ),
        ];
        if let Some(v) = m("flush_plugin_nop_1t") {
            out.push(t(
                "plug-ins",
                "flush path to a no-op plug-in (export_batch)",
                Some(v),
                20.0,
                false,
                "Mev/s",
            ));
        }
        if let Some(v) = m("flush_plugin_prometheus_1t") {
            out.push(t(
                "Prometheus",
                "Prometheus exporter absorbs on the flush thread",
                Some(v),
                5.0,
                false,
                "Mev/s",
            ));
        }
        for row in self.rows.iter().filter(|r| r.unit == Unit::Percent) {
            out.push(t(
                "suite",
                &format!("real loop: {}", row.label),
                Some(row.median),
                1.0,
                true,
                "%",
            ));
        }
        out
    }

    /// The table, for people.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:<52} {:>3} {:>10} {:>10} {:<8} note",
            "benchmark", "thr", "median", "best", "unit"
        );
        let _ = writeln!(s, "{}", "-".repeat(100));
        for r in &self.rows {
            let _ = writeln!(
                s,
                "{:<52} {:>3} {:>10} {:>10} {:<8} {}",
                r.label,
                r.threads,
                fmt_num(r.median),
                fmt_num(r.best),
                r.unit.as_str(),
                r.note
            );
        }
        let _ = writeln!(s, "\nratios of medians (same run):");
        for (name, v) in self.ratios() {
            let _ = writeln!(s, "  {name:<36} {v:>7.3}");
        }
        let _ = writeln!(s, "\ntargets:");
        for t in self.targets() {
            let verdict = match t.met() {
                Some(true) => "met",
                Some(false) => "MISSED",
                None => "not measured",
            };
            let measured = t.measured.map_or("-".to_owned(), fmt_num);
            let op = if t.at_most { "<=" } else { ">=" };
            let _ = writeln!(
                s,
                "  {:<62} {:>9} {} {} {:<6} {}",
                t.what,
                measured,
                op,
                fmt_num(t.limit),
                t.unit,
                verdict
            );
        }
        for n in &self.notes {
            let _ = writeln!(s, "note: {n}");
        }
        s
    }

    /// One JSON object: settings, rows, ratios, targets, notes.
    pub fn json(&self) -> Value {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                let mut o = Map::new();
                o.insert("key".into(), json!(r.key()));
                o.insert("id".into(), json!(r.id));
                o.insert("label".into(), json!(r.label));
                o.insert("threads".into(), json!(r.threads));
                o.insert("unit".into(), json!(r.unit.as_str()));
                o.insert("median".into(), json!(r.median));
                o.insert("best".into(), json!(r.best));
                o.insert("repeats".into(), json!(r.repeats));
                o.insert("note".into(), json!(r.note));
                for (k, v) in &r.extra {
                    o.insert(k.clone(), v.clone());
                }
                Value::Object(o)
            })
            .collect();
        let targets: Vec<Value> = self
            .targets()
            .iter()
            .map(|t| {
                json!({
                    "part": t.part,
                    "what": t.what,
                    "measured": t.measured,
                    "limit": t.limit,
                    "at_most": t.at_most,
                    "unit": t.unit,
                    "met": t.met(),
                })
            })
            .collect();
        json!({
            "settings": self.settings,
            "results": rows,
            "ratios": self.ratios(),
            "targets": targets,
            "notes": self.notes,
        })
    }
}

fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        format!("{v}")
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, unit: Unit, median: f64) -> Row {
        Row {
            id: id.to_owned(),
            label: id.to_owned(),
            threads: 1,
            unit,
            median,
            best: median,
            repeats: 1,
            note: String::new(),
            extra: Map::new(),
        }
    }

    #[test]
    fn ratios_divide_medians_and_take_paired_rows_as_measured() {
        let report = Report {
            rows: vec![
                row("record", Unit::NsPerOp, 13.0),
                row("floor", Unit::NsPerOp, 10.0),
                row("record_vs_floor_paired", Unit::Ratio, 1.04),
            ],
            ..Report::default()
        };
        let ratios = report.ratios();
        assert!((ratios["record_vs_floor_1t"] - 1.3).abs() < 1e-12);
        assert_eq!(ratios["record_vs_floor_paired_1t"], 1.04);
        assert!(!ratios.contains_key("record_at_vs_write_paired_1t"));
    }
}
