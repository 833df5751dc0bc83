//! Every NIXL-written fixture decodes to exactly its `.json` events, and the
//! text output equals the event blocks of its `.reader.txt` (made with TZ=UTC).

use std::path::{Path, PathBuf};

use crate::read_support::*;
use serde_json::Value;

fn fixture_rings() -> Vec<PathBuf> {
    let mut rings: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .expect("tests/data/nixl_v1 in the repository")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ring"))
        .collect();
    rings.sort();
    assert_eq!(rings.len(), 5, "expected the five nixl_v1 fixtures");
    // The shared files must still hold their recorded positions (a consuming
    // reader run on them by mistake would have moved read_pos).
    for ring in &rings {
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(companion(ring, ".json")).unwrap())
                .unwrap();
        let header = &expected["header"];
        assert_eq!(
            positions(ring),
            (
                header["read_pos"].as_u64().unwrap(),
                header["write_pos"].as_u64().unwrap()
            ),
            "{} was modified: restore it from shared/",
            ring.display()
        );
    }
    rings
}

fn companion(ring: &Path, suffix: &str) -> PathBuf {
    let stem = ring.file_stem().unwrap().to_string_lossy().into_owned();
    ring.with_file_name(format!("{stem}{suffix}"))
}

/// The slice of a NIXL transcript holding the event blocks: from the blank line
/// before the first block through the newline of the last closing line.
fn event_blocks(transcript: &str) -> &str {
    let Some(start) = transcript.find("\n=== NIXL Telemetry Event ===\n") else {
        return "";
    };
    let close = "===========================\n";
    let end = transcript.rfind(close).unwrap() + close.len();
    &transcript[start..end]
}

fn writable_copy(ring: &Path, dir: &Path) -> PathBuf {
    let dest = dir.join(ring.file_name().unwrap());
    std::fs::write(&dest, std::fs::read(ring).unwrap()).unwrap();
    dest
}

#[test]
fn json_output_is_exactly_the_fixture_events() {
    let tmp = tempfile::tempdir().unwrap();
    for ring in fixture_rings() {
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(companion(&ring, ".json")).unwrap())
                .unwrap();
        let want = expected["events"].as_array().unwrap();
        // --peek works on the read-only fixture itself.
        let out = ok(&run(reader()
            .args(["--once", "--peek", "--json"])
            .arg(&ring)));
        let got: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(got.len(), want.len(), "{}", ring.display());
        // The exact bytes: compact, keys in order (fixture names need no escaping).
        let exact: String = want
            .iter()
            .map(|w| {
                format!(
                    "{{\"timestamp_us\":{},\"category\":\"{}\",\"category_id\":{},\"name\":\"{}\",\"value\":{}}}\n",
                    w["timestamp_us"],
                    w["category_str"].as_str().unwrap(),
                    w["category"],
                    w["name"].as_str().unwrap(),
                    w["value"]
                )
            })
            .collect();
        assert_eq!(out, exact, "{}", ring.display());
        for (g, w) in got.iter().zip(want) {
            assert_eq!(g.as_object().unwrap().len(), 5);
            assert_eq!(g["timestamp_us"], w["timestamp_us"]);
            assert_eq!(g["category_id"], w["category"]);
            assert_eq!(g["category"], w["category_str"]);
            assert_eq!(g["name"], w["name"]);
            assert_eq!(g["value"], w["value"]);
        }
        // nixl-telemetry read prints the same bytes.
        let copy = writable_copy(&ring, tmp.path());
        let cli_out = ok(&run(cli().args(["read", "--once", "--json"]).arg(&copy)));
        assert_eq!(cli_out, out, "{}", ring.display());
    }
}

#[test]
fn text_output_equals_the_nixl_transcript_blocks() {
    let tmp = tempfile::tempdir().unwrap();
    for ring in fixture_rings() {
        let transcript = std::fs::read_to_string(companion(&ring, ".reader.txt")).unwrap();
        let want = event_blocks(&transcript);
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(companion(&ring, ".json")).unwrap())
                .unwrap();
        // Consuming, like NIXL's reader, on a copy; both spellings of the path.
        for spelling in ["positional", "--telemetry_path"] {
            let copy = writable_copy(&ring, tmp.path());
            let mut cmd = reader();
            cmd.arg("--once");
            if spelling == "--telemetry_path" {
                cmd.arg("--telemetry_path");
            }
            let out = run(cmd.arg(&copy));
            assert_eq!(ok(&out), want, "{} ({spelling})", ring.display());
            let (read_pos, write_pos) = positions(&copy);
            let after = &expected["reader"]["header_after_reader"];
            assert_eq!(read_pos, after["read_pos"].as_u64().unwrap());
            assert_eq!(write_pos, after["write_pos"].as_u64().unwrap());
            let err = stderr(&out);
            let n = expected["events"].as_array().unwrap().len();
            assert!(err.contains(&format!("Total events read: {n}\n")), "{err}");
        }
    }
}

#[test]
fn reader_timestamps_match_the_fixture_utc_strings() {
    for ring in fixture_rings() {
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(companion(&ring, ".json")).unwrap())
                .unwrap();
        let out = ok(&run(reader().args(["--once", "--peek"]).arg(&ring)));
        let stamps: Vec<&str> = out
            .lines()
            .filter_map(|l| l.strip_prefix("Timestamp: "))
            .collect();
        let want: Vec<&str> = expected["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["reader_timestamp_utc"].as_str().unwrap())
            .collect();
        assert_eq!(stamps, want, "{}", ring.display());
    }
}
