//! Files we write decode identically with an independent decoder written here
//! from the layout table of the design (not from the crate's own code).

use nixl_telemetry::ring::{ReadMode, RingReader, RingWriter, TrailerCounts};
use nixl_telemetry::{Category, Event};

fn u64le(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}
fn i32le(b: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// (timestamp, category, name, value) of the unread events, from raw bytes.
fn independent_decode(bytes: &[u8]) -> Vec<(u64, i32, String, u64)> {
    let (write, read, capacity, mask) = (
        u64le(bytes, 0),
        u64le(bytes, 8),
        u64le(bytes, 24),
        u64le(bytes, 32),
    );
    assert_eq!(i32le(bytes, 16), 1, "version");
    assert_eq!(i32le(bytes, 20), 1, "expected_version");
    assert_eq!(mask, capacity - 1);
    assert!(bytes.len() as u64 >= 40 + 56 * capacity);
    let mut out = Vec::new();
    let mut pos = read;
    while pos != write {
        let s = 40 + 56 * pos as usize;
        let slot = &bytes[s..s + 56];
        let name_field = &slot[12..44];
        let end = name_field
            .iter()
            .position(|&c| c == 0)
            .expect("NUL-terminated name");
        assert_eq!(&slot[44..48], &[0, 0, 0, 0], "padding is zero");
        out.push((
            u64le(slot, 0),
            i32le(slot, 8),
            String::from_utf8(name_field[..end].to_vec()).unwrap(),
            u64le(slot, 48),
        ));
        pos = (pos + 1) & mask;
    }
    out
}

#[test]
fn our_files_decode_independently_and_carry_the_trailer() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = RingWriter::create(dir.path(), "agent-a", 8).unwrap();
    let events: Vec<Event> = (0..5u64)
        .map(|i| {
            Event::new(
                1_700_000_000_000_000 + i,
                Category(i as i32 * 3),
                &format!("event_{i}"),
                i * 1000,
            )
        })
        .collect();
    assert_eq!(w.push_batch(&events), 5);
    w.update_trailer(&TrailerCounts {
        dropped_staging_full: 7,
    });
    let bytes = std::fs::read(dir.path().join("agent-a")).unwrap();
    assert_eq!(bytes.len(), 40 + 56 * 8 + 72);
    let decoded = independent_decode(&bytes);
    let want: Vec<_> = events
        .iter()
        .map(|e| (e.timestamp_us, e.category, e.name().into_owned(), e.value))
        .collect();
    assert_eq!(decoded, want);
    // Unknown category 6·… survive: 12 is not a known category.
    assert_eq!(decoded[4].1, 12);
    // Trailer, from the layout table.
    let t = 40 + 56 * 8;
    assert_eq!(&bytes[t..t + 8], b"NXTLTRL\0");
    assert_eq!(
        u32::from_le_bytes(bytes[t + 8..t + 12].try_into().unwrap()),
        2,
        "trailer version"
    );
    assert_eq!(
        u32::from_le_bytes(bytes[t + 12..t + 16].try_into().unwrap()),
        72,
        "trailer size"
    );
    assert_eq!(
        u32::from_le_bytes(bytes[t + 16..t + 20].try_into().unwrap()),
        std::process::id()
    );
    assert_eq!(u64le(&bytes, t + 32), 5, "events_written");
    assert_eq!(u64le(&bytes, t + 40), 7, "dropped_staging_full");
    assert_eq!(u64le(&bytes, t + 48), 0, "dropped_ring_full");
    assert_eq!(u64le(&bytes, t + 64), 0, "dropped_format");
    drop(w);
    let bytes = std::fs::read(dir.path().join("agent-a")).unwrap();
    assert_eq!(
        u32::from_le_bytes(bytes[t + 20..t + 24].try_into().unwrap()) & 1,
        1,
        "closed flag"
    );
}

#[test]
fn ring_empty_wrap_full_and_drop_counting() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = RingWriter::create(dir.path(), "r", 4).unwrap();
    let mut r = RingReader::open(&dir.path().join("r"), ReadMode::Consume).unwrap();
    let ev = |v: u64| Event::new(v, Category::TRANSFER, "agent_tx_bytes", v);
    let mut out = Vec::new();
    assert_eq!(r.read_batch(&mut out, usize::MAX).unwrap(), 0, "empty");
    // Capacity 4 holds 3.
    assert_eq!(w.push_batch(&[ev(1), ev(2), ev(3), ev(4)]), 3);
    assert_eq!(w.dropped_ring_full(), 1);
    assert_eq!(r.pending().unwrap(), 3);
    assert_eq!(r.read_batch(&mut out, 2).unwrap(), 2);
    // Wrap: write_pos goes 3 → 0 → 1.
    assert_eq!(w.push_batch(&[ev(5), ev(6), ev(7)]), 2);
    assert_eq!(w.dropped_ring_full(), 2);
    assert_eq!(r.read_batch(&mut out, usize::MAX).unwrap(), 3);
    let values: Vec<u64> = out.iter().map(|e| e.value).collect();
    assert_eq!(values, vec![1, 2, 3, 5, 6]);
    let h = r.header().unwrap();
    assert_eq!((h.write_pos, h.read_pos), (1, 1));
    let bytes = std::fs::read(dir.path().join("r")).unwrap();
    assert!(independent_decode(&bytes).is_empty());
}

#[test]
fn peek_never_writes() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = RingWriter::create(dir.path(), "p", 8).unwrap();
    w.push_batch(&[
        Event::new(1, Category::MEMORY, "m", 1),
        Event::new(2, Category::MEMORY, "m", 2),
    ]);
    let path = dir.path().join("p");
    let before = std::fs::read(&path).unwrap();
    let mut r = RingReader::open(&path, ReadMode::Peek).unwrap();
    let mut out = Vec::new();
    assert_eq!(r.read_batch(&mut out, usize::MAX).unwrap(), 2);
    assert_eq!(
        r.read_batch(&mut out, usize::MAX).unwrap(),
        0,
        "peek keeps its own position"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    let mut again = RingReader::open(&path, ReadMode::Peek).unwrap();
    assert_eq!(again.read_batch(&mut out, usize::MAX).unwrap(), 2);
}

#[test]
fn uncommitted_reads_are_read_again_and_peek_follows_an_overtaking_consumer() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = RingWriter::create(dir.path(), "c", 8).unwrap();
    let ev = |v: u64| Event::new(v, Category::CUSTOM, "e", v);
    w.push_batch(&[ev(1), ev(2), ev(3), ev(4)]);
    let path = dir.path().join("c");
    let mut consumer = RingReader::open(&path, ReadMode::Consume).unwrap();
    let mut peeker = RingReader::open(&path, ReadMode::Peek).unwrap();
    let mut out = Vec::new();
    // Peek without commit: the same events come again.
    assert_eq!(consumer.peek_batch(&mut out, 10).unwrap(), 4);
    out.clear();
    assert_eq!(consumer.peek_batch(&mut out, 10).unwrap(), 4);
    consumer.commit(3).unwrap();
    assert_eq!(consumer.header().unwrap().read_pos, 3);
    // The peeking reader is now behind read_pos: it moves forward, counting.
    out.clear();
    assert_eq!(peeker.read_batch(&mut out, 10).unwrap(), 1);
    assert_eq!(out[0].value, 4);
    assert_eq!(peeker.overtaken(), 3);
    // Committing more than was handed out commits what was handed out.
    consumer.commit(100).unwrap();
    assert_eq!(consumer.header().unwrap().read_pos, 4);
}

#[test]
fn a_file_truncated_between_reading_and_committing_is_an_error_not_a_fault() {
    // A consuming reader prints a batch (which may block on its output for
    // seconds) and then stores read_pos into the mapped header: if the file
    // was truncated meanwhile, that store must not touch the mapping.
    let dir = tempfile::tempdir().unwrap();
    let mut w = RingWriter::create(dir.path(), "agent", 8).unwrap();
    w.push_batch(&[
        Event::new(1, Category::CUSTOM, "a", 1),
        Event::new(2, Category::CUSTOM, "b", 2),
    ]);
    // The producer is gone (its file stays): only the reader's mapping is at
    // stake here.
    drop(w);
    let path = dir.path().join("agent");
    let mut consumer = RingReader::open(&path, ReadMode::Consume).unwrap();
    let mut out = Vec::new();
    assert_eq!(consumer.peek_batch(&mut out, 10).unwrap(), 2);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(0)
        .unwrap();
    let err = consumer.commit(2).unwrap_err();
    assert!(err.to_string().contains("truncated"), "{err}");
    assert!(consumer.header().is_err());
}

#[test]
fn opening_a_fifo_is_refused_at_once() {
    // Opening a FIFO for reading would wait for a writer: the reader opens
    // without blocking and refuses what is not a regular file.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("agent");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    for mode in [ReadMode::Peek, ReadMode::Consume] {
        let err = RingReader::open(&fifo, mode)
            .err()
            .expect("a FIFO is refused");
        assert!(err.to_string().contains("not a regular file"), "{err}");
    }
}
