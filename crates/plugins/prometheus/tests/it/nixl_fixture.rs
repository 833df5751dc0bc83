//! Parity with NIXL 1.5.1's own plug-in, against its exposition kept in the
//! repository (`tests/data/nixl_prometheus/1.5.1/`, see its README): the same
//! agents fed the events NIXL recorded for the same workload, on one
//! endpoint, scraped once. Every family NIXL exposes must be ours with the
//! same `# TYPE` and `# HELP`; every NIXL sample ours with the same name and
//! the same labels in the same order (host name aside), and no other sample
//! in those families; values equal except the measured times.
//!
//! `scripts/nixl-releases.sh matrix --only c 1.5.1` checks the same against
//! the live release.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use common::scrape;
use nixl_telemetry_abi::{Category, Event};
use nixl_telemetry_prometheus::{PrometheusExporter, Settings};

/// The fixture's host name label value.
const FIXTURE_HOST: &str = "vm";

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../tests/data/nixl_prometheus/1.5.1")
}

/// The events of `<agent>.events.jsonl`: `{"category", "name", "value"}`, or
/// `{"error": "NIXL_ERR_…"}` as an agent records an error.
fn events(agent: &str) -> Vec<Event> {
    let path = fixture_dir().join(format!("{agent}.events.jsonl"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(status) = v["error"].as_str() {
                return Event::new(1, Category::ERROR, status, 1);
            }
            let category = match v["category"].as_str().unwrap() {
                "TRANSFER" => Category::TRANSFER,
                "PERFORMANCE" => Category::PERFORMANCE,
                "MEMORY" => Category::MEMORY,
                "SYSTEM" => Category::SYSTEM,
                other => panic!("unexpected category {other} in {path:?}"),
            };
            Event::new(
                1,
                category,
                v["name"].as_str().unwrap(),
                v["value"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[derive(Debug, Default)]
struct Exposition {
    /// family → (type, help)
    families: BTreeMap<String, (String, String)>,
    /// (sample name, labels in order) → value
    samples: BTreeMap<(String, Vec<(String, String)>), String>,
}

fn parse(text: &str, host: &str) -> Exposition {
    let mut out = Exposition::default();
    let mut helps = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap();
            helps.insert(name.to_owned(), help.to_owned());
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            let help = helps.get(name).cloned().unwrap_or_default();
            out.families
                .insert(name.to_owned(), (kind.to_owned(), help));
        } else if !line.is_empty() && !line.starts_with('#') {
            let (series, value) = line.rsplit_once(' ').unwrap();
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => (name, rest.strip_suffix('}').unwrap()),
                None => (series, ""),
            };
            let labels = labels
                .split(',')
                .filter(|l| !l.is_empty())
                .map(|l| {
                    let (k, v) = l.split_once('=').unwrap();
                    let v = v.trim_matches('"');
                    let v = if k == "hostname" && v == host {
                        FIXTURE_HOST
                    } else {
                        v
                    };
                    (k.to_owned(), v.to_owned())
                })
                .collect();
            out.samples
                .insert((name.to_owned(), labels), value.to_owned());
        }
    }
    out
}

/// The family a sample belongs to in `families`.
fn family_of<'a>(
    sample: &str,
    families: &'a BTreeMap<String, (String, String)>,
) -> Option<&'a str> {
    if let Some((name, _)) = families.get_key_value(sample) {
        return Some(name);
    }
    for suffix in ["_bucket", "_sum", "_count"] {
        if let Some(base) = sample.strip_suffix(suffix) {
            if let Some((name, (kind, _))) = families.get_key_value(base) {
                if kind == "histogram" || kind == "summary" {
                    return Some(name);
                }
            }
        }
    }
    None
}

/// Whether a sample's value is a measured time (differs between two runs).
fn measured(name: &str, labels: &[(String, String)]) -> bool {
    let time = name.starts_with("agent_xfer_time") || name.starts_with("agent_xfer_post_time");
    let observation_count = name.ends_with("_us_count")
        || (name.ends_with("_us_bucket") && labels.iter().any(|(k, v)| k == "le" && v == "+Inf"));
    time && !observation_count
}

fn same_value(a: &str, b: &str) -> bool {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x == y || (x.is_nan() && y.is_nan()),
        _ => a == b,
    }
}

#[test]
fn the_first_scrape_matches_nixl_1_5_1_family_by_family() {
    let nixl_text = std::fs::read_to_string(fixture_dir().join("metrics.txt")).unwrap();
    let nixl = parse(&nixl_text, FIXTURE_HOST);

    let mut initiator = PrometheusExporter::with_settings(
        "initiator",
        &Settings::new("127.0.0.1:0".parse().unwrap()),
    )
    .unwrap();
    let mut target =
        PrometheusExporter::with_settings("target", &Settings::new(initiator.local_addr()))
            .unwrap();
    initiator.record(&events("initiator"));
    target.record(&events("target"));
    let ours_text = scrape(initiator.local_addr(), None).text();
    let host = nixl_telemetry_metrics::hostname();
    let ours = parse(&ours_text, host);

    let mut problems = Vec::new();
    for (family, (kind, help)) in &nixl.families {
        match ours.families.get(family) {
            None => problems.push(format!("family {family} missing")),
            Some((our_kind, our_help)) => {
                if our_kind != kind {
                    problems.push(format!("{family}: type {our_kind}, NIXL {kind}"));
                }
                if our_help != help {
                    problems.push(format!("{family}: HELP {our_help:?}, NIXL {help:?}"));
                }
            }
        }
    }
    let mut compared = 0;
    for ((name, labels), value) in &nixl.samples {
        match ours.samples.get(&(name.clone(), labels.clone())) {
            None => problems.push(format!("sample {name}{labels:?} missing")),
            Some(ours_value) => {
                if !measured(name, labels) && !same_value(ours_value, value) {
                    problems.push(format!("{name}{labels:?}: {ours_value}, NIXL {value}"));
                }
                compared += 1;
            }
        }
    }
    let nixl_keys: BTreeSet<_> = nixl.samples.keys().collect();
    for key in ours.samples.keys() {
        if family_of(&key.0, &nixl.families).is_some() && !nixl_keys.contains(key) {
            problems.push(format!("sample {}{:?} only ours", key.0, key.1));
        }
    }
    assert!(
        problems.is_empty(),
        "{} differences from NIXL 1.5.1:\n{}\n\nours:\n{ours_text}",
        problems.len(),
        problems.join("\n")
    );
    // 21 families; per agent 15 scalars, 12 error statuses and two
    // histograms of 19 buckets, _sum and _count; 7 exposer samples: all compared.
    assert_eq!(nixl.families.len(), 21);
    assert_eq!(nixl.samples.len(), 2 * (15 + 12 + 2 * 21) + 7);
    assert_eq!(compared, nixl.samples.len());
    // Our extras are families NIXL lacks, nothing else.
    let extra: Vec<_> = ours
        .families
        .keys()
        .filter(|f| !nixl.families.contains_key(*f))
        .collect();
    assert_eq!(
        extra,
        [
            "agent_memory_registered_bytes",
            "agent_telemetry_unmapped_events_total"
        ]
    );
    drop(target);
}
