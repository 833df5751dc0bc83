//! A ring file of any version the readers accept, header and slots: the first
//! input byte picks the read mode, the rest is the file. Selector bits: 0
//! consume (else peek), 1 large batches, 2 and 3 the API (events, records, or
//! slot bytes beside records), 4 a peeking reader that follows the writer
//! ([`RingReader::follow_writer`]), started at the slot bits 5–7 give, behind
//! the consumer's `read_pos` or not. Properties: opening and reading never
//! panic; a failure is a `RingError` with a message; a peeking reader never
//! changes the file; no read returns more events than the ring holds, and
//! reading ends (a bounded number of batches); slot bytes read in place
//! ([`SlotView`]) give the records [`RingReader::peek_records`] gives; a
//! reader following the writer reads or skips (counted) every slot up to
//! `write_pos`, no more.

#![no_main]
#![forbid(unsafe_code)]

use std::fs;
use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use nixl_telemetry::ring::{ReadMode, RingReader, RingRecord, SlotView};
use nixl_telemetry::Event;

fn ring_path() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("nixl-fuzz-ring-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("temporary directory");
        dir.join("agent")
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, file)) = data.split_first() else {
        return;
    };
    let path = ring_path();
    fs::write(path, file).expect("write the ring file");
    let mode = if selector & 1 == 0 {
        ReadMode::Peek
    } else {
        ReadMode::Consume
    };
    let mut reader = match RingReader::open(path, mode) {
        Ok(reader) => reader,
        Err(e) => {
            assert!(!e.to_string().is_empty(), "an error without a message");
            return;
        }
    };
    let capacity = reader.capacity();
    assert!(capacity > 0, "a ring of capacity 0 was accepted");
    let _ = reader.check_size();
    let _ = reader.header();
    if let Some(trailer) = reader.trailer() {
        let _ = trailer.events_lost();
    }
    if let Some(problem) = reader.trailer_problem() {
        assert!(!problem.to_string().is_empty());
    }
    let follow = mode == ReadMode::Peek && selector & 16 != 0;
    if follow {
        reader.follow_writer();
        // A start of its own: before read_pos, its slots were consumed.
        let _ = reader.resume_peek_at(u64::from(selector >> 5) % capacity);
    }
    let waiting = reader.pending().ok();
    let batch = if selector & 2 == 0 { 7 } else { 1024 };
    // Following the writer, a read that copied slots a consumer gave back
    // may hand out nothing until the next read settles them.
    let mut idle = 0;
    let mut ended = |n: usize| {
        idle = if n == 0 { idle + 1 } else { 0 };
        idle > usize::from(follow)
    };
    let mut read = 0u64;
    let mut rounds = 0u64;
    let mut clean_end = false;
    if selector & 4 == 0 {
        let mut events: Vec<Event> = Vec::new();
        loop {
            events.clear();
            match reader.read_batch(&mut events, batch) {
                Ok(n) if ended(n) => {
                    clean_end = true;
                    break;
                }
                Ok(0) => {}
                Ok(n) => {
                    assert_eq!(n, events.len(), "count and events disagree");
                    read += n as u64;
                }
                Err(e) => {
                    assert!(!e.to_string().is_empty());
                    break;
                }
            }
            rounds += 1;
            assert!(
                rounds <= capacity + 2,
                "reading does not end ({rounds} batches)"
            );
        }
    } else if selector & 8 != 0 {
        let layout = reader.layout();
        let mut records: Vec<RingRecord> = Vec::new();
        let mut slots: Vec<u8> = Vec::new();
        loop {
            records.clear();
            let peeked = reader.peek_records(&mut records, batch);
            match reader.read_slot_bytes(&mut slots, batch) {
                Ok(n) if ended(n) => {
                    clean_end = true;
                    break;
                }
                Ok(0) => {}
                Ok(n) => {
                    assert_eq!(
                        slots.len(),
                        n * layout.slot.size,
                        "count and bytes disagree"
                    );
                    let viewed: Vec<RingRecord> =
                        SlotView::all(layout, &slots).map(|s| s.record()).collect();
                    // (Following the writer, the first may hold what the
                    // second then hands out.)
                    if let (Ok(m), false) = (peeked, follow) {
                        assert_eq!(m, n, "peeked records and slot bytes disagree");
                        assert_eq!(viewed, records, "slot views and records disagree");
                    }
                    read += n as u64;
                }
                Err(e) => {
                    assert!(!e.to_string().is_empty());
                    break;
                }
            }
            rounds += 1;
            assert!(
                rounds <= capacity + 2,
                "reading does not end ({rounds} batches)"
            );
        }
    } else {
        let mut records: Vec<RingRecord> = Vec::new();
        loop {
            records.clear();
            match reader.read_records(&mut records, batch) {
                Ok(n) if ended(n) => {
                    clean_end = true;
                    break;
                }
                Ok(0) => {}
                Ok(n) => {
                    for record in &records {
                        let _ = record.name();
                    }
                    read += n as u64;
                }
                Err(e) => {
                    assert!(!e.to_string().is_empty());
                    break;
                }
            }
            rounds += 1;
            assert!(
                rounds <= capacity + 2,
                "reading does not end ({rounds} batches)"
            );
        }
    }
    assert!(
        read <= capacity,
        "{read} events read from a ring of capacity {capacity}"
    );
    if let (true, true, Some(waiting)) = (follow, clean_end, waiting) {
        assert_eq!(
            read + reader.overtaken(),
            waiting,
            "following the writer: slots read and skipped are not those up to write_pos"
        );
    }
    if mode == ReadMode::Consume && clean_end {
        if let Ok(left) = reader.pending() {
            assert_eq!(left, 0, "events left after reading everything");
        }
    } else {
        drop(reader);
        let after = fs::read(path).expect("read the ring file back");
        assert!(after == file, "a peeking reader changed the file");
    }
});
