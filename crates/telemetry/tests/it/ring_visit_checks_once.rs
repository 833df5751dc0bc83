//! A reader that visits many rings checks each file once a visit:
//! `pending_and_peek_slot_bytes` is `pending` then `peek_slot_bytes` on one
//! check, and `removed_at_last_check` answers from that check.

use nixl_telemetry::ring::{layout, ReadMode, RingError, RingReader};
use nixl_telemetry::{Category, Event};
use nixl_telemetry_testsupport::nixl_ring::ring_bytes;

fn events(n: u64) -> Vec<Event> {
    (0..n)
        .map(|i| Event::new(i + 1, Category::TRANSFER, "agent_tx_bytes", 100 + i))
        .collect()
}

#[test]
fn one_check_gives_what_pending_then_peek_give() {
    for ring_layout in [&layout::V1, &layout::V4] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent");
        std::fs::write(&path, ring_bytes(ring_layout, 64, &events(10))).unwrap();
        let mut apart = RingReader::open(&path, ReadMode::Peek).unwrap();
        let mut together = RingReader::open(&path, ReadMode::Peek).unwrap();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for max in [4, 4, 4, 4] {
            let pending = apart.pending().unwrap();
            let n = apart.peek_slot_bytes(&mut a, max).unwrap();
            assert_eq!(
                together.pending_and_peek_slot_bytes(&mut b, max).unwrap(),
                (pending, n),
                "{}",
                ring_layout.name
            );
            assert_eq!(a, b, "{}: the same slots", ring_layout.name);
            apart.commit(n).unwrap();
            together.commit(n).unwrap();
        }
        // 4 + 4 + 2 read; nothing left.
        assert_eq!(
            together.pending_and_peek_slot_bytes(&mut b, 4).unwrap(),
            (0, 0)
        );
    }
}

#[test]
fn at_most_what_was_waiting_is_peeked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent");
    std::fs::write(&path, ring_bytes(&layout::V1, 64, &events(3))).unwrap();
    let mut reader = RingReader::open(&path, ReadMode::Consume).unwrap();
    let mut slots = Vec::new();
    assert_eq!(
        reader.pending_and_peek_slot_bytes(&mut slots, 64).unwrap(),
        (3, 3)
    );
    assert_eq!(slots.len(), 3 * layout::V1.slot.size);
    reader.commit(3).unwrap();
    assert_eq!(reader.pending().unwrap(), 0);
}

#[test]
fn a_removed_file_is_seen_at_the_next_check() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent");
    std::fs::write(&path, ring_bytes(&layout::V4, 64, &events(2))).unwrap();
    let mut reader = RingReader::open(&path, ReadMode::Consume).unwrap();
    let mut slots = Vec::new();
    reader.pending_and_peek_slot_bytes(&mut slots, 1).unwrap();
    assert!(!reader.removed_at_last_check());
    std::fs::remove_file(&path).unwrap();
    // Not checked since: the answer is the last check's.
    assert!(!reader.removed_at_last_check());
    assert!(reader.is_removed());
    // The commit checks the file (it stores read_pos), then a visit does.
    reader.commit(1).unwrap();
    assert!(reader.removed_at_last_check());
    assert_eq!(
        reader.pending_and_peek_slot_bytes(&mut slots, 64).unwrap(),
        (1, 1),
        "a removed ring is still read to its end"
    );
    assert!(reader.removed_at_last_check());
}

#[test]
fn a_ring_rewritten_in_another_layout_fails_the_visit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent");
    std::fs::write(&path, ring_bytes(&layout::V4, 64, &events(1))).unwrap();
    let mut reader = RingReader::open(&path, ReadMode::Consume).unwrap();
    std::fs::write(&path, ring_bytes(&layout::V1, 64, &events(5))).unwrap();
    let mut slots = Vec::new();
    match reader.pending_and_peek_slot_bytes(&mut slots, 64) {
        Err(RingError::LayoutChanged { was, now, .. }) => {
            assert!(was.contains("version 4"), "{was}");
            assert!(now.contains("version 1"), "{now}");
        }
        other => panic!("expected LayoutChanged, got {other:?}"),
    }
}
