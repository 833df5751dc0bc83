//! A loom model of the ring's publish/consume protocol (compiled only with
//! `--cfg loom`: `RUSTFLAGS="--cfg loom" cargo test -p nixl-telemetry
//! --release --lib loom`).
//!
//! The real writer and reader share a file mapping with other processes:
//! the positions are atomics reached through raw pointers into the mapping
//! (`mapping.rs`) and the reader copies slots with `pread`, neither of which
//! loom can instrument. So this model restates the protocol step by step,
//! with loom's atomics for `write_pos`/`read_pos` and loom's tracked cells
//! for the slots; each step names the line of `writer.rs` or `reader.rs` it
//! stands for, and a change to either must be mirrored here.
//!
//! What it checks, in every interleaving within the preemption bound: a
//! slot is never read while the writer writes it, nor overwritten before
//! the consuming reader released it (loom reports either as a data race);
//! events arrive once, in order; written + dropped(ring full) = pushed.

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::Arc;

/// The shared part: the header's two positions and the slots.
struct Ring {
    write_pos: AtomicU64,
    read_pos: AtomicU64,
    slots: Vec<UnsafeCell<u64>>,
    capacity: u64,
    mask: u64,
}

impl Ring {
    fn new(capacity: u64) -> Ring {
        Ring {
            write_pos: AtomicU64::new(0),
            read_pos: AtomicU64::new(0),
            slots: (0..capacity).map(|_| UnsafeCell::new(0)).collect(),
            capacity,
            mask: capacity - 1,
        }
    }
}

/// `RingWriter`'s positions and counters.
struct Writer {
    ring: Arc<Ring>,
    write_pos: u64,
    cached_read: u64,
    written: u64,
    dropped_ring_full: u64,
}

impl Writer {
    /// `RingWriter::free_slots`.
    fn free_slots(&self) -> u64 {
        self.cached_read
            .wrapping_sub(self.write_pos)
            .wrapping_sub(1)
            & self.ring.mask
    }

    /// `RingWriter::push` for a version-1 ring.
    fn push(&mut self, events: &[u64]) -> usize {
        let slots = events.len();
        if (self.free_slots() as usize) < slots {
            // writer.rs: `u64_at(READ_POS_OFFSET).load(Acquire) & mask`.
            self.cached_read = self.ring.read_pos.load(Ordering::Acquire) & self.ring.mask;
        }
        let n = slots.min(self.free_slots() as usize);
        let start = self.write_pos as usize;
        let first = n.min(self.ring.capacity as usize - start);
        // writer.rs: `write_events(first_at, ..first)` then the wrapped part
        // from slot 0.
        for (i, &event) in events[..first].iter().enumerate() {
            self.ring.slots[start + i].with_mut(|slot| {
                // SAFETY: loom's cell; loom checks the access.
                unsafe { *slot = event }
            });
        }
        for (i, &event) in events[first..n].iter().enumerate() {
            self.ring.slots[i].with_mut(|slot| {
                // SAFETY: loom's cell; loom checks the access.
                unsafe { *slot = event }
            });
        }
        self.write_pos = (self.write_pos + n as u64) & self.ring.mask;
        // writer.rs: `u64_at(WRITE_POS_OFFSET).store(write_pos, Release)`.
        self.ring.write_pos.store(self.write_pos, Ordering::Release);
        self.written += n as u64;
        self.dropped_ring_full += (slots - n) as u64;
        n
    }
}

/// A consuming `RingReader`'s `read_batch`: `peek_slots` then `commit`.
fn read_batch(ring: &Ring, out: &mut Vec<u64>, max: usize) -> usize {
    // reader.rs `peek_slots`: `position(WRITE_POS_OFFSET)` (Acquire), then
    // `read_position` = `position(READ_POS_OFFSET)` (Acquire).
    let write = ring.write_pos.load(Ordering::Acquire);
    let read = ring.read_pos.load(Ordering::Acquire);
    assert!(write < ring.capacity && read < ring.capacity);
    let n = ((write.wrapping_sub(read) & ring.mask) as usize).min(max);
    if n == 0 {
        return 0;
    }
    let first = n.min((ring.capacity - read) as usize);
    for (from, count) in [(read, first), (0, n - first)] {
        for slot in &ring.slots[from as usize..from as usize + count] {
            // reader.rs `read_slots`: a copy of the slots.
            // SAFETY: loom's cell; loom checks the access.
            out.push(slot.with(|value| unsafe { *value }));
        }
    }
    // reader.rs `commit`: `u64_at(READ_POS_OFFSET).store(next, Release)`.
    ring.read_pos
        .store((read + n as u64) & ring.mask, Ordering::Release);
    n
}

/// A writer has pushed two events into a ring of four slots (three
/// usable) when a consuming reader starts on another thread and makes two
/// reads of up to two events, while the writer pushes three more batches
/// that need the slots the reader frees; what the reader leaves is read
/// after both threads are done. The reader gets exactly what was written,
/// in order; the writer counts the rest as dropped because the ring was
/// full; and a slot is written again only after the reader's release of
/// `read_pos` said it was read. (The reader makes a fixed number of reads
/// rather than spinning: loom explores every placement of a bounded thread,
/// while one that spins and yields is scheduled only when the others cannot
/// run.)
#[test]
fn loom_ring_publish_and_consume() {
    loom::model(|| {
        let ring = Arc::new(Ring::new(4));
        let mut writer = Writer {
            ring: Arc::clone(&ring),
            write_pos: 0,
            cached_read: 0,
            written: 0,
            dropped_ring_full: 0,
        };
        let mut kept = Vec::new();
        let mut push = |writer: &mut Writer, batch: &[u64]| {
            let n = writer.push(batch);
            kept.extend_from_slice(&batch[..n]);
        };
        push(&mut writer, &[1, 2]);
        let reader = loom::thread::spawn(move || {
            let mut got = Vec::new();
            for _ in 0..2 {
                read_batch(&ring, &mut got, 2);
            }
            got
        });
        for batch in [&[3u64, 4][..], &[5], &[6]] {
            push(&mut writer, batch);
        }
        let mut got = reader.join().unwrap();
        while read_batch(&writer.ring, &mut got, 2) > 0 {}
        assert_eq!(writer.written + writer.dropped_ring_full, 6);
        assert_eq!(got, kept);
    });
}
