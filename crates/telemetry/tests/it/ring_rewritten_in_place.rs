//! A ring file rewritten in place in another layout (a producer of another
//! release or buffer size creating its ring over the old one, as NIXL does)
//! is reported on the next read, never read in the layout it had at open.

use std::os::unix::fs::FileExt;

use nixl_telemetry::ring::{layout, ReadMode, RingError, RingReader};
use nixl_telemetry::{Category, Event};
use nixl_telemetry_testsupport::nixl_ring::ring_bytes;

#[test]
fn a_ring_rewritten_in_another_layout_is_reported_and_reopened_in_the_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent");
    let tx = Event::new(1, Category::TRANSFER, "agent_tx_bytes", 254);
    std::fs::write(&path, ring_bytes(&layout::V4, 64, &[tx])).unwrap();
    for mode in [ReadMode::Consume, ReadMode::Peek] {
        let mut reader = RingReader::open(&path, mode).unwrap();
        assert_eq!(reader.layout(), &layout::V4);
        assert_eq!(reader.pending().unwrap(), 1);
    }
    let mut reader = RingReader::open(&path, ReadMode::Consume).unwrap();
    let mut peek = RingReader::open(&path, ReadMode::Peek).unwrap();
    let mut slots = Vec::new();
    assert_eq!(reader.read_slot_bytes(&mut slots, 64).unwrap(), 1);

    // Rewritten in place (the same file) as version 1.
    let rx: Vec<Event> = (0..10)
        .map(|i| Event::new(100 + i, Category::TRANSFER, "agent_rx_bytes", 112))
        .collect();
    let v1 = ring_bytes(&layout::V1, 64, &rx);
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(v1.len() as u64).unwrap();
    file.write_all_at(&v1, 0).unwrap();

    for r in [&mut reader, &mut peek] {
        for result in [
            r.pending().map(drop),
            r.peek_slot_bytes(&mut slots, 64).map(drop),
            r.header().map(drop),
        ] {
            match result {
                Err(RingError::LayoutChanged { was, now, .. }) => {
                    assert!(was.contains("version 4"), "{was}");
                    assert!(now.contains("version 1"), "{now}");
                }
                other => panic!("expected LayoutChanged, got {other:?}"),
            }
        }
    }
    let mut reopened = RingReader::open(&path, ReadMode::Consume).unwrap();
    assert_eq!(reopened.layout(), &layout::V1);
    let mut events = Vec::new();
    assert_eq!(reopened.read_batch(&mut events, 64).unwrap(), 10);
    assert_eq!(events.iter().map(|e| e.value).sum::<u64>(), 1120);
}

#[test]
fn a_ring_rewritten_with_another_capacity_in_the_same_version_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent");
    let tx = Event::new(1, Category::TRANSFER, "agent_tx_bytes", 254);
    let mut bytes = ring_bytes(&layout::V1, 64, &[tx]);
    std::fs::write(&path, &bytes).unwrap();
    let mut reader = RingReader::open(&path, ReadMode::Consume).unwrap();
    assert_eq!(reader.pending().unwrap(), 1);
    // Half the capacity, the same file size: only the header changed.
    bytes[24..32].copy_from_slice(&32u64.to_le_bytes());
    bytes[32..40].copy_from_slice(&31u64.to_le_bytes());
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .write_all_at(&bytes[..40], 0)
        .unwrap();
    assert!(
        matches!(reader.pending(), Err(RingError::LayoutChanged { .. })),
        "{:?}",
        reader.pending()
    );
}

#[test]
fn a_file_grown_past_its_ring_is_no_change() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent");
    let tx = Event::new(1, Category::TRANSFER, "agent_tx_bytes", 254);
    std::fs::write(&path, ring_bytes(&layout::V4, 64, &[tx])).unwrap();
    let mut reader = RingReader::open(&path, ReadMode::Consume).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    assert_eq!(reader.pending().unwrap(), 1);
}
