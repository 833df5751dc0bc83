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

/// `tests/data/nixl_releases/<release>/`: rings every NIXL release wrote, with
/// what the release's own reader printed for them (see its README).
fn release_dirs() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/nixl_releases");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("tests/data/nixl_releases")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 11, "releases 1.0.0 … 1.5.1");
    dirs
}

/// (category line, name, value) of each block a release's reader printed.
fn printed_events(transcript: &str) -> Vec<(Option<String>, String, u64)> {
    let mut out = Vec::new();
    let (mut category, mut name) = (None, String::new());
    for line in transcript.lines() {
        if let Some(c) = line.strip_prefix("Category: ") {
            category = Some(c.to_owned());
        } else if let Some(n) = line.strip_prefix("Event name: ") {
            name = n.to_owned();
        } else if let Some(v) = line.strip_prefix("Value: ") {
            out.push((
                category.take(),
                std::mem::take(&mut name),
                v.parse().unwrap(),
            ));
        }
    }
    out
}

#[test]
fn every_release_ring_decodes_to_what_its_own_reader_printed() {
    use nixl_telemetry::ring::layout;
    let want_layout = |release: &str| match &release[..3] {
        "1.0" => &layout::V1,
        "1.1" => &layout::V2_NAMED,
        "1.2" => &layout::V2_TYPED,
        "1.3" => &layout::V3,
        _ => &layout::V4,
    };
    for dir in release_dirs() {
        let release = dir.file_name().unwrap().to_str().unwrap().to_owned();
        for file in ["initiator", "target", "probe.ring"] {
            let path = dir.join(file);
            let transcript =
                std::fs::read_to_string(dir.join(format!("{file}.reader.txt"))).unwrap();
            let printed = printed_events(&transcript);
            let mut reader = RingReader::open(&path, ReadMode::Peek).unwrap();
            assert_eq!(reader.layout(), want_layout(&release), "{release}/{file}");
            assert!(reader.trailer().is_none(), "NIXL's files carry no trailer");
            let mut records = Vec::new();
            reader.peek_records(&mut records, usize::MAX).unwrap();
            assert_eq!(records.len(), printed.len(), "{release}/{file}");
            for (i, (got, (category, name, value))) in records.iter().zip(&printed).enumerate() {
                let at = format!("{release}/{file} event {i}");
                assert_eq!(got.value, *value, "{at}");
                if name == "unknown_event" {
                    assert!(got.name().starts_with("unknown_event_"), "{at}");
                } else {
                    assert_eq!(got.name(), name.as_str(), "{at}");
                }
                assert_eq!(
                    got.timestamp_us.is_some(),
                    release.starts_with("1.0"),
                    "{at}"
                );
                match (got.category, category.as_deref()) {
                    (None, None) => {}
                    (Some(8), Some("NIXL_TELEMETRY_MAX")) => {}
                    (Some(c), Some("BAD_CATEGORY")) => assert!(!(0..=8).contains(&c), "{at}"),
                    (Some(c), Some(text)) => assert_eq!(
                        format!("NIXL_TELEMETRY_{}", nixl_telemetry::Category(c)),
                        text,
                        "{at}"
                    ),
                    (got, want) => panic!("{at}: category {got:?}, NIXL printed {want:?}"),
                }
            }
        }
    }
}
