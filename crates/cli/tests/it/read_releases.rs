//! Rings written by every NIXL release (1.0.0 … 1.5.1, `tests/data/nixl_releases/`)
//! read by both our readers give the events that release's own reader printed
//! for them, in its order, with its names, values, categories and timestamps.
//!
//! NIXL's C++ reader labels lines differently from ours (`Event name:`,
//! `Category: NIXL_TELEMETRY_MEMORY`, `BAD_CATEGORY`, `unknown_event`); ours
//! keep the project's format (NIXL's Python reader's, see docs/readers.md).
//! So the transcript is parsed into events and mapped: `NIXL_TELEMETRY_X` is
//! category `X`, `NIXL_TELEMETRY_MAX` is number 8, `BAD_CATEGORY` any number
//! outside 0..=8, `unknown_event` any `unknown_event_<n>` (in the probe rings
//! the value is the type number, so there `<n>` must equal the value).

use std::path::{Path, PathBuf};

use crate::read_support::*;
use chrono::TimeZone;
use serde_json::Value;

const RELEASES: [&str; 11] = [
    "1.0.0", "1.0.1", "1.1.0", "1.2.0", "1.3.0", "1.3.1", "1.3.2", "1.4.0", "1.4.1", "1.5.0",
    "1.5.1",
];

fn releases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/nixl_releases")
}

/// One event as a release's reader printed it.
#[derive(Debug, Default)]
struct Printed {
    timestamp: Option<String>,
    category: Option<String>,
    name: String,
    value: u64,
}

fn parse_transcript(text: &str) -> Vec<Printed> {
    let mut events = Vec::new();
    let mut current: Option<Printed> = None;
    for line in text.lines() {
        if line == "=== NIXL Telemetry Event ===" {
            current = Some(Printed::default());
        } else if line == "===========================" {
            events.push(current.take().expect("block opened"));
        } else if let Some(event) = current.as_mut() {
            if let Some(ts) = line.strip_prefix("Timestamp: ") {
                event.timestamp = Some(ts.to_owned());
            } else if let Some(c) = line.strip_prefix("Category: ") {
                event.category = Some(c.to_owned());
            } else if let Some(n) = line.strip_prefix("Event name: ") {
                event.name = n.to_owned();
            } else if let Some(v) = line.strip_prefix("Value: ") {
                event.value = v.parse().expect("decimal value");
            } else {
                panic!("unexpected line in a block: {line:?}");
            }
        }
    }
    assert!(current.is_none(), "unterminated block");
    events
}

/// The text our readers print for the category NIXL printed as `printed`
/// (`ours` is the number our reader found, used for `BAD_CATEGORY`).
fn our_category(printed: &str, ours: i64) -> String {
    match printed {
        "NIXL_TELEMETRY_MAX" => {
            assert_eq!(ours, 8, "NIXL_TELEMETRY_MAX is 8");
            "UNKNOWN_CATEGORY_8".to_owned()
        }
        "BAD_CATEGORY" => {
            assert!(
                !(0..=8).contains(&ours),
                "BAD_CATEGORY is outside 0..=8: {ours}"
            );
            format!("UNKNOWN_CATEGORY_{ours}")
        }
        other => other
            .strip_prefix("NIXL_TELEMETRY_")
            .unwrap_or_else(|| panic!("unexpected category {other:?}"))
            .to_owned(),
    }
}

/// Checks our JSON lines against the release's events; returns our text
/// rendering of the release's events (for the text-mode check).
fn check_json(what: &str, json: &str, printed: &[Printed], probe: bool) -> String {
    let ours: Vec<Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(ours.len(), printed.len(), "{what}: number of events");
    let mut text = String::new();
    for (i, (o, p)) in ours.iter().zip(printed).enumerate() {
        let at = format!("{what}: event {i}");
        assert_eq!(o["value"].as_u64(), Some(p.value), "{at}: value");
        let name = o["name"].as_str().unwrap();
        if p.name == "unknown_event" {
            assert!(name.starts_with("unknown_event_"), "{at}: {name}");
            if probe {
                assert_eq!(name, format!("unknown_event_{}", p.value), "{at}");
            }
        } else {
            assert_eq!(name, p.name, "{at}: name");
        }
        text.push_str("\n=== NIXL Telemetry Event ===\n");
        match &p.timestamp {
            Some(ts) => {
                let us = o["timestamp_us"].as_u64().expect("a timestamp");
                let utc = chrono::Utc
                    .timestamp_opt((us / 1_000_000) as i64, 0)
                    .unwrap()
                    .format("%Y-%m-%d %H:%M:%S")
                    .to_string();
                assert_eq!(&format!("{utc}.{:06}", us % 1_000_000), ts, "{at}: time");
                text.push_str(&format!("Timestamp: {ts}\n"));
            }
            None => assert!(o["timestamp_us"].is_null(), "{at}: no timestamp"),
        }
        match &p.category {
            Some(c) => {
                let id = o["category_id"].as_i64().expect("a category");
                let category = our_category(c, id);
                assert_eq!(o["category"].as_str(), Some(category.as_str()), "{at}");
                text.push_str(&format!("Category: {category}\n"));
            }
            None => {
                assert!(o["category"].is_null(), "{at}: no category");
                assert!(o["category_id"].is_null(), "{at}: no category id");
            }
        }
        text.push_str(&format!("Event: {name}\nValue: {}\n", p.value));
        text.push_str("===========================\n");
    }
    text
}

fn ring_files(release: &str) -> Vec<(PathBuf, String)> {
    let dir = releases_dir().join(release);
    ["initiator", "target", "probe.ring"]
        .iter()
        .map(|f| {
            let transcript = std::fs::read_to_string(dir.join(format!("{f}.reader.txt")))
                .unwrap_or_else(|e| panic!("{release}/{f}.reader.txt: {e}"));
            (dir.join(f), transcript)
        })
        .collect()
}

/// Runs `cmd` on a copy of `ring` (a consuming run must not touch the fixture).
fn read_copy(mut cmd: std::process::Command, ring: &Path, args: &[&str]) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join(ring.file_name().unwrap());
    std::fs::copy(ring, &copy).unwrap();
    let out = run(cmd.env("TZ", "UTC").args(args).arg(&copy));
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        ring.display(),
        stderr(&out)
    );
    stdout(&out)
}

fn check_reader(
    name: &str,
    make: impl Fn() -> std::process::Command,
    path_flag: Option<&'static str>,
) {
    let flags = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut v = extra.to_vec();
        v.extend(path_flag);
        v
    };
    for release in RELEASES {
        for (ring, transcript) in ring_files(release) {
            let what = format!(
                "{name} on {release}/{}",
                ring.file_name().unwrap().to_string_lossy()
            );
            let printed = parse_transcript(&transcript);
            assert!(!printed.is_empty(), "{what}: the transcript has events");
            let probe = ring.ends_with("probe.ring");
            let json = read_copy(make(), &ring, &flags(&["--once", "--json"]));
            let want_text = check_json(&what, &json, &printed, probe);
            // Consuming and peeking give the same.
            let text = read_copy(make(), &ring, &flags(&["--once", "--peek"]));
            assert_eq!(text, want_text, "{what}: text output");
        }
    }
}

#[test]
fn the_rust_reader_prints_what_each_release_printed() {
    check_reader("telemetry_reader", reader, None);
}

#[test]
fn the_python_reader_prints_what_each_release_printed() {
    check_reader(
        "telemetry_reader.py",
        python_reader,
        Some("--telemetry_path"),
    );
}

#[test]
fn every_release_fixture_is_present_and_unread() {
    for release in RELEASES {
        for (ring, _) in ring_files(release) {
            let bytes = std::fs::read(&ring).unwrap();
            let pos = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
            assert_eq!(pos(8), 0, "{}: read_pos (consumed?)", ring.display());
            assert!(pos(0) > 0, "{}: holds events", ring.display());
        }
    }
}

#[test]
fn both_readers_summarise_every_release_alike() {
    for release in RELEASES {
        let ring = releases_dir().join(release).join("initiator");
        let rust = read_copy(reader(), &ring, &["--once", "--peek", "--summary"]);
        let python = read_copy(
            python_reader(),
            &ring,
            &["--once", "--peek", "--summary", "--telemetry_path"],
        );
        assert_eq!(rust, python, "{release}");
        assert!(rust.contains("agent_xfer_time"), "{release}: {rust}");
        // Versions without categories put "-" in the CATEGORY column.
        let has_category = ["1.0", "1.1", "1.2"].iter().any(|s| release.starts_with(s));
        assert_eq!(rust.contains("\n-  "), !has_category, "{release}: {rust}");
    }
}
