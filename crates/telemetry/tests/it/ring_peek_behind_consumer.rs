//! A peeking reader that follows the writer (`RingReader::follow_writer`)
//! beside a consumer: it reads the events the consumer took as long as the
//! writer has not come round to them, never an event the writer was writing
//! or had written over. Deterministic cases (a batch written but not yet
//! published, simulated by writing its slots into the file first), then a
//! writer, a consumer and a peeker on three threads, on this project's rings
//! (a batch published at once) and on NIXL's (an event at a time, no
//! trailer).

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nixl_telemetry::ring::{layout, ReadMode, RingReader, RingWriter, TrailerCounts};
use nixl_telemetry::{Category, Event};
use nixl_telemetry_testsupport::nixl_ring::hide_trailer;

/// Event number `seq`: every field says `seq`, so a slot that mixes two
/// events (torn) is seen.
fn event(seq: u64) -> Event {
    Event::new(
        seq,
        Category::TRANSFER,
        &format!("e{seq:016x}"),
        seq ^ 0x5a5a_5a5a_5a5a_5a5a,
    )
}

/// The event's number, after checking that it is whole.
fn seq_of(e: &Event) -> u64 {
    let seq = e.timestamp_us;
    assert_eq!(e.name(), format!("e{seq:016x}"), "torn event: {e:?}");
    assert_eq!(e.value, seq ^ 0x5a5a_5a5a_5a5a_5a5a, "torn event: {e:?}");
    assert_eq!(e.category(), Category::TRANSFER, "torn event: {e:?}");
    seq
}

fn events(from: u64, n: u64) -> Vec<Event> {
    (from..from + n).map(event).collect()
}

/// Reads everything a consumer can take.
fn drain(path: &Path) {
    let mut consumer = RingReader::open(path, ReadMode::Consume).unwrap();
    while consumer.read_batch(&mut Vec::new(), 1 << 12).unwrap() > 0 {}
}

fn follower(path: &Path) -> RingReader {
    let mut r = RingReader::open(path, ReadMode::Peek).unwrap();
    r.follow_writer();
    assert!(r.follows_writer());
    r
}

fn read_seqs(r: &mut RingReader) -> Vec<u64> {
    let mut out = Vec::new();
    r.read_batch(&mut out, 1 << 12).unwrap();
    out.iter().map(seq_of).collect()
}

/// Writes events into the slots from `slot` on without publishing them: a
/// batch the writer is in the middle of.
fn write_unpublished(path: &Path, slot: u64, capacity: u64, seqs: &[u64]) {
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    for (i, &seq) in seqs.iter().enumerate() {
        let at = layout::V1.slot_offset((slot + i as u64) % capacity);
        file.write_all_at(&event(seq).to_bytes(), at).unwrap();
    }
}

/// A copy held while the writer publishes again: `pending` counts the
/// slots held and those written since apart, though together they fill the
/// ring (from the positions alone, modulo the capacity, nothing would be
/// waiting).
#[test]
fn pending_counts_a_held_copy_and_what_was_written_since() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = RingWriter::create(dir.path(), "a", 16).unwrap();
    let path = w.path().to_owned();
    w.push_batch(&events(0, 15));
    drain(&path);
    let mut peeker = follower(&path);
    peeker.resume_peek_at(0).unwrap();
    assert_eq!(peeker.pending().unwrap(), 15);
    // Copied, held: still waiting.
    assert_eq!(read_seqs(&mut peeker), Vec::<u64>::new());
    assert_eq!(peeker.pending().unwrap(), 15);
    // One more published: write_pos is back at the copy's first slot.
    w.push_batch(&events(15, 1));
    assert_eq!(peeker.pending().unwrap(), 16);
    // The writer did not reach the slots held: all read, then the new one.
    assert_eq!(read_seqs(&mut peeker), (0..15).collect::<Vec<_>>());
    assert_eq!(peeker.pending().unwrap(), 1);
    assert_eq!(read_seqs(&mut peeker), [15]);
    assert_eq!(peeker.overtaken(), 0);
    assert_eq!(peeker.pending().unwrap(), 0);
}

#[test]
fn the_events_a_consumer_took_are_read_once_the_writer_moves_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = RingWriter::create(dir.path(), "a", 16).unwrap();
    let path = w.path().to_owned();
    let mut peeker = follower(&path);
    let mut plain = RingReader::open(&path, ReadMode::Peek).unwrap();
    w.push_batch(&events(0, 10));
    drain(&path);
    // The old peek mode jumps to read_pos: all ten missed.
    assert_eq!(read_seqs(&mut plain), Vec::<u64>::new());
    assert_eq!(plain.overtaken(), 10);
    // Following the writer: copied, but held while this project's writer
    // may be amid a batch (it publishes write_pos after the whole batch).
    assert_eq!(peeker.pending().unwrap(), 10);
    assert_eq!(read_seqs(&mut peeker), Vec::<u64>::new());
    // Its heartbeat (a flush) settles the copy.
    std::thread::sleep(Duration::from_millis(2));
    w.update_trailer(&TrailerCounts::default());
    assert_eq!(read_seqs(&mut peeker), (0..10).collect::<Vec<_>>());
    assert_eq!(peeker.overtaken(), 0);
    // What nobody consumed yet is handed out at once.
    w.push_batch(&events(10, 3));
    assert_eq!(read_seqs(&mut peeker), [10, 11, 12]);
    assert_eq!(peeker.pending().unwrap(), 0);
}

#[test]
fn a_batch_being_written_over_consumed_slots_is_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let cap = 8u64;
    let mut w = RingWriter::create(dir.path(), "a", cap as usize).unwrap();
    let path = w.path().to_owned();
    let mut peeker = follower(&path);
    w.push_batch(&events(0, 6));
    drain(&path);
    // The writer is writing events 6, 7, 8 into slots 6, 7, 0 (the consumer
    // gave them back), not yet published: slot 0 no longer holds event 0.
    write_unpublished(&path, 6, cap, &[6, 7, 8]);
    assert_eq!(read_seqs(&mut peeker), Vec::<u64>::new(), "held");
    assert_eq!(read_seqs(&mut peeker), Vec::<u64>::new(), "still held");
    // The batch is published: slot 0 was within its reach, the rest not.
    assert_eq!(w.push_batch(&events(6, 3)), 3);
    assert_eq!(read_seqs(&mut peeker), [1, 2, 3, 4, 5]);
    assert_eq!(peeker.overtaken(), 1);
    assert_eq!(read_seqs(&mut peeker), [6, 7, 8]);
}

#[test]
fn a_closed_writer_is_writing_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = RingWriter::create(dir.path(), "a", 16).unwrap();
    let path = w.path().to_owned();
    let mut peeker = follower(&path);
    w.push_batch(&events(0, 5));
    drain(&path);
    drop(w);
    assert_eq!(read_seqs(&mut peeker), [0, 1, 2, 3, 4]);
}

#[test]
fn a_writer_gone_amid_a_batch_leaves_the_consumed_slots_unread() {
    let dir = tempfile::tempdir().unwrap();
    let cap = 16u64;
    let mut w = RingWriter::create(dir.path(), "a", cap as usize).unwrap();
    let path = w.path().to_owned();
    let mut peeker = follower(&path);
    w.push_batch(&events(0, 6));
    let mut consumer = RingReader::open(&path, ReadMode::Consume).unwrap();
    consumer.read_batch(&mut Vec::new(), 4).unwrap();
    assert_eq!(read_seqs(&mut peeker), Vec::<u64>::new(), "held");
    // The producer dies amid a batch: no closed flag, its lock released.
    // Whatever it wrote into the four slots given back is unknown.
    drop(w);
    let flags = layout::trailer_offset(cap).unwrap() + layout::trailer::FLAGS as u64;
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.write_all_at(&0u32.to_le_bytes(), flags).unwrap();
    assert_eq!(read_seqs(&mut peeker), [4, 5]);
    assert_eq!(peeker.overtaken(), 4);
}

#[test]
fn on_nixls_rings_only_the_slot_at_write_pos_may_be_being_written() {
    let dir = tempfile::tempdir().unwrap();
    let cap = 8u64;
    let mut w = RingWriter::create(dir.path(), "a", cap as usize).unwrap();
    let path = w.path().to_owned();
    hide_trailer(&w);
    let mut peeker = follower(&path);
    for seq in 0..7 {
        w.push_batch(&[event(seq)]);
    }
    drain(&path);
    // NIXL's writer is writing event 7 into slot 7, unpublished: not ours.
    write_unpublished(&path, 7, cap, &[7]);
    assert_eq!(read_seqs(&mut peeker), (0..7).collect::<Vec<_>>());
    assert_eq!(peeker.overtaken(), 0);
}

/// A writer, a consumer and a peeker following the writer, on three
/// threads, for `run`. The writer pushes `per_push` events at a time (1:
/// as NIXL's writer, which publishes each) at about 200 000 events/s; the
/// consumer keeps up; the peeker falls behind it, now and then by most of
/// the ring. Every event the peeker reads within a window in which the
/// writer cannot have gone round the whole ring (the test's own count of
/// events published says so; the reader's documented limit) was written
/// and published, is whole, comes in order and sits in the slot of its
/// number; many of them had been taken by the consumer.
fn three_threads(cap: u64, per_push: u64, nixl: bool, run: Duration) {
    let dir = tempfile::tempdir().unwrap();
    let mut w = RingWriter::create(dir.path(), "a", cap as usize).unwrap();
    let path = w.path().to_owned();
    if nixl {
        hide_trailer(&w);
    }
    // Opened first: it starts at slot 0, with event 0.
    let mut peeker = follower(&path);
    let stop = Arc::new(AtomicBool::new(false));
    let published = Arc::new(AtomicU64::new(0));
    let consumed = Arc::new(AtomicU64::new(0));
    let writer = {
        let (stop, published) = (Arc::clone(&stop), Arc::clone(&published));
        std::thread::spawn(move || {
            let mut next = 0u64;
            let mut pushes = 0u64;
            let started = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                // Only what fits is written (the rest dropped): numbers stay
                // consecutive by counting what was written.
                let n = w.push_batch(&events(next, per_push)) as u64;
                next += n;
                published.store(next, Ordering::Release);
                pushes += 1;
                if pushes.is_multiple_of(16) {
                    w.update_trailer(&TrailerCounts::default());
                }
                let due = started + Duration::from_secs_f64(next as f64 / 200_000.0);
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
            }
            next
        })
    };
    let consumer = {
        let (stop, consumed, path) = (Arc::clone(&stop), Arc::clone(&consumed), path.clone());
        std::thread::spawn(move || {
            let mut r = RingReader::open(&path, ReadMode::Consume).unwrap();
            let mut out = Vec::new();
            let mut expect = 0u64;
            while !stop.load(Ordering::Relaxed) {
                out.clear();
                r.read_batch(&mut out, (cap / 2) as usize).unwrap();
                for e in &out {
                    assert_eq!(seq_of(e), expect, "the consumer lost its place");
                    expect += 1;
                }
                consumed.store(expect, Ordering::Release);
                std::thread::sleep(Duration::from_micros(50));
            }
        })
    };
    let mut out = Vec::new();
    let (mut read, mut checked, mut behind_consumer, mut lap_windows) = (0u64, 0u64, 0u64, 0u64);
    let mut last = None::<u64>;
    // Events published when the copy of the next events handed out may have
    // begun (at the latest, after the last hand-out).
    let mut window_start = 0u64;
    let end = Instant::now() + run;
    for round in 0u64.. {
        if Instant::now() >= end {
            break;
        }
        out.clear();
        let n = peeker.read_batch(&mut out, 64).unwrap() as u64;
        // Slots skipped in a read come before the events it hands out.
        let position = (read + peeker.overtaken()) % cap;
        let consumed_now = consumed.load(Ordering::Acquire);
        let published_now = published.load(Ordering::Acquire);
        read += n;
        if n > 0 {
            // Could the writer have gone round the ring since the copy began
            // (published, plus a push in flight)?
            if published_now + per_push - window_start < cap {
                for (i, e) in out.iter().enumerate() {
                    let seq = seq_of(e);
                    assert!(
                        last.is_none_or(|l| seq > l),
                        "{seq} after {last:?}; read {:?}; published {window_start}..{published_now}",
                        out.iter().map(|e| e.timestamp_us).collect::<Vec<_>>()
                    );
                    assert_eq!(
                        seq % cap,
                        (position + i as u64) % cap,
                        "event {seq} out of its slot"
                    );
                    // (The count is stored after the push that publishes.)
                    assert!(
                        seq < published_now + per_push,
                        "event {seq} read before it was published"
                    );
                    behind_consumer += u64::from(seq < consumed_now);
                    last = Some(seq);
                }
                checked += n;
            } else {
                lap_windows += 1;
                last = None;
            }
            window_start = published_now;
        }
        // Behind the consumer; now and then by most of the ring.
        let pause = if round % 64 == 63 { 4_000 } else { 100 };
        std::thread::sleep(Duration::from_micros(pause));
    }
    stop.store(true, Ordering::Relaxed);
    let written = writer.join().unwrap();
    consumer.join().unwrap();
    eprintln!(
        "cap {cap}, {per_push} per push{}: {written} written; the peeker read {read}, checked {checked} \
         ({behind_consumer} after the consumer took them), skipped {}; {lap_windows} reads in which \
         the writer could have gone round the ring",
        if nixl { ", NIXL's layout" } else { "" },
        peeker.overtaken()
    );
    assert!(
        checked * 2 > read,
        "too few events checked: {checked} of {read}"
    );
    assert!(
        behind_consumer * 10 > checked,
        "of {checked} events checked, only {behind_consumer} had been taken by the consumer"
    );
}

#[test]
fn three_threads_on_this_projects_ring() {
    three_threads(1024, 13, false, Duration::from_secs(3));
}

#[test]
fn three_threads_on_a_ring_as_nixl_writes_it() {
    three_threads(1024, 1, true, Duration::from_secs(3));
}
