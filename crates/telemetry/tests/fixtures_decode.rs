//! Every NIXL version-1 fixture decodes to exactly the events of its `.json`.

use std::path::PathBuf;

use nixl_telemetry::ring::{ReadMode, RingReader};
use serde_json::Value;

fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/nixl_v1")
}

fn fixtures() -> Vec<(PathBuf, Value)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(fixtures_dir()).expect("fixtures directory") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "ring") {
            let json: Value = serde_json::from_str(
                &std::fs::read_to_string(path.with_extension("json")).unwrap(),
            )
            .unwrap();
            out.push((path, json));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(out.len(), 5, "expected the five nixl_v1 fixtures");
    out
}

#[test]
fn fixtures_decode_to_their_json_events() {
    for (path, json) in fixtures() {
        let mut reader = RingReader::open(&path, ReadMode::Peek).unwrap();
        let header = reader.header().unwrap();
        assert_eq!(
            header.write_pos,
            json["header"]["write_pos"].as_u64().unwrap()
        );
        assert_eq!(
            header.read_pos,
            json["header"]["read_pos"].as_u64().unwrap()
        );
        assert_eq!(
            header.capacity,
            json["header"]["capacity"].as_u64().unwrap()
        );
        assert!(reader.trailer().is_none(), "NIXL's files carry no trailer");
        let mut events = Vec::new();
        reader.read_batch(&mut events, usize::MAX).unwrap();
        let expected = json["events"].as_array().unwrap();
        assert_eq!(events.len(), expected.len(), "{}", path.display());
        for (got, want) in events.iter().zip(expected) {
            assert_eq!(got.timestamp_us, want["timestamp_us"].as_u64().unwrap());
            assert_eq!(got.category as i64, want["category"].as_i64().unwrap());
            assert_eq!(
                got.category().to_string(),
                want["category_str"].as_str().unwrap()
            );
            assert_eq!(got.name(), want["name"].as_str().unwrap());
            assert_eq!(got.value, want["value"].as_u64().unwrap());
            assert!(got.name_is_terminated());
        }
    }
}

#[test]
fn consuming_a_fixture_copy_leaves_the_readers_positions() {
    let dir = tempfile::tempdir().unwrap();
    for (path, json) in fixtures() {
        let copy = dir.path().join(path.file_name().unwrap());
        std::fs::copy(&path, &copy).unwrap();
        let mut reader = RingReader::open(&copy, ReadMode::Consume).unwrap();
        let mut events = Vec::new();
        // Read one at a time, as NIXL's reader pops.
        while reader.read_batch(&mut events, 1).unwrap() == 1 {}
        let after = &json["reader"]["header_after_reader"];
        let header = RingReader::open(&copy, ReadMode::Peek)
            .unwrap()
            .header()
            .unwrap();
        assert_eq!(header.write_pos, after["write_pos"].as_u64().unwrap());
        assert_eq!(header.read_pos, after["read_pos"].as_u64().unwrap());
        // Only read_pos changed.
        let (a, b) = (std::fs::read(&path).unwrap(), std::fs::read(&copy).unwrap());
        assert_eq!(a[..8], b[..8]);
        assert_eq!(a[16..], b[16..]);
    }
}
