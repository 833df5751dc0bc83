//! A bounded single-producer single-consumer queue of `Copy` slots: the one
//! piece of the staging that shares memory between threads, reviewable on its
//! own.
//!
//! [`channel`] returns a [`Producer`] and a [`Consumer`]. A push is: check for
//! room against a limit derived from a cached copy of the consumer's position
//! (one compare), write the slot in place, publish the new head with a
//! release store. No lock, no allocation,
//! no system call, no read-modify-write instruction; the producer's and the
//! consumer's positions sit on separate cache lines.
//!
//! A slot may stand for more than one unit (the staging counts events, and one
//! slot can stand for several): the producer says how many further units each
//! push stands for, the queue counts units accepted and dropped, and the
//! consumer says, for each slot it pops, how many further units it stood for.
//! A slot that does not fit is dropped with all of its units.
//!
//! The producer's thread marks the queue detached when the producer is dropped
//! (its last slots stay poppable); the consumer marks it closed so the
//! producer's owner can forget it.

use crate::sync::{Arc, AtomicBool, AtomicU64, Ordering, SlotCell};

/// Keeps a value on its own cache line (128 bytes covers adjacent-line prefetch).
#[repr(align(128))]
struct CachePadded<T>(T);

/// What the producer publishes, on one line.
struct Published {
    /// Slots published so far (free-running).
    head: AtomicU64,
    /// Units beyond one per slot published so far.
    extra: AtomicU64,
}

/// The state one producer and one consumer share.
struct Shared<T> {
    /// Producer side: slots (and the extra units they stand for) published so far.
    published: CachePadded<Published>,
    /// Producer side: units dropped because the queue was full.
    dropped: CachePadded<AtomicU64>,
    /// Consumer side: slots consumed so far (free-running).
    tail: CachePadded<AtomicU64>,
    /// Set when the producer is dropped; its last slots stay poppable.
    detached: AtomicBool,
    /// Set by the consumer's owner; the producer's owner then forgets it.
    closed: AtomicBool,
    mask: u64,
    slots: Box<[SlotCell<T>]>,
}

// SAFETY: slots are written only through the producer's one cursor in use, on
// the producer's thread, at indices in [tail, tail + capacity) not yet published, and read only by the single
// Consumer at indices in [tail, head) after an acquire load of `head`; the
// release/acquire pair on head and tail orders those accesses. Everything
// else is atomic. Slots are `Copy` values moved between threads, hence `Send`.
unsafe impl<T: Copy + Send> Sync for Shared<T> {}
// SAFETY: as above; nothing in Shared is tied to a thread.
unsafe impl<T: Copy + Send> Send for Shared<T> {}

/// Creates a queue of `capacity` slots (a power of two ≥ 2); `None` if the
/// memory for its slots cannot be had (a failed allocation must not abort the
/// host: with the largest buffer size a queue is 3.5 GiB).
pub(crate) fn channel<T: Copy + Send>(capacity: usize) -> Option<(Producer<T>, Consumer<T>)> {
    assert!(capacity.is_power_of_two() && capacity >= 2);
    let mut slots = Vec::new();
    slots.try_reserve_exact(capacity).ok()?;
    slots.extend((0..capacity).map(|_| SlotCell::new()));
    let slots = slots.into_boxed_slice();
    let shared = Arc::new(Shared {
        published: CachePadded(Published {
            head: AtomicU64::new(0),
            extra: AtomicU64::new(0),
        }),
        dropped: CachePadded(AtomicU64::new(0)),
        tail: CachePadded(AtomicU64::new(0)),
        detached: AtomicBool::new(false),
        closed: AtomicBool::new(false),
        mask: capacity as u64 - 1,
        slots,
    });
    let producer = Producer {
        shared: Arc::clone(&shared),
        on_its_thread: std::marker::PhantomData,
    };
    Some((
        producer,
        Consumer {
            shared,
            consumed_extra: 0,
        },
    ))
}

/// The producing end: it keeps the queue alive for the cursors it makes. Not
/// `Send`: it stays on the thread that created it, as its cursors do.
pub(crate) struct Producer<T> {
    shared: Arc<Shared<T>>,
    on_its_thread: std::marker::PhantomData<*const ()>,
}

/// What a push reads and writes, apart from the queue's memory: the queue's
/// address, its slots, the producer's position and counters. Everything in it
/// is also published in the queue (head, extras, drops) or derived from it, so
/// a cursor can be made afresh from the queue at any time
/// ([`Producer::cursor`]) and dropped without loss: the recording thread keeps
/// one in its fast-path cache, where a push reaches it with one load less than
/// through its producer. At most one cursor of a queue may be pushed through
/// at a time.
pub(crate) struct Cursor<T> {
    shared: *const Shared<T>,
    slots: *const SlotCell<T>,
    /// Slots pushed so far (free-running; 2^64 slots are never reached).
    head: u64,
    extra: u64,
    /// The head up to which there is room: a cached copy of the consumer's
    /// tail plus the capacity (re-read only when `head` reaches it).
    limit: u64,
    dropped: u64,
    capacity: u64,
    mask: u64,
}

impl<T> Cursor<T> {
    /// A cursor of no queue (a fast-path cache's empty way); never pushed through.
    pub(crate) const NONE: Cursor<T> = Cursor {
        shared: std::ptr::null(),
        slots: std::ptr::null(),
        head: 0,
        extra: 0,
        limit: 0,
        dropped: 0,
        capacity: 0,
        mask: 0,
    };

    /// A cursor at the queue's current position. Only the producer's thread
    /// stores the position and counters, so relaxed loads read their latest
    /// values; the limit starts at the head (the first push reads the tail).
    fn at(shared: &Shared<T>) -> Cursor<T> {
        let head = shared.published.0.head.load(Ordering::Relaxed);
        Cursor {
            shared,
            slots: shared.slots.as_ptr(),
            head,
            extra: shared.published.0.extra.load(Ordering::Relaxed),
            limit: head,
            dropped: shared.dropped.0.load(Ordering::Relaxed),
            capacity: shared.mask + 1,
            mask: shared.mask,
        }
    }
}

impl<T: Copy> Cursor<T> {
    /// Writes the slot `make` builds straight into the next free place; `make`
    /// runs only when there is room (a full queue builds nothing). The slot
    /// stands for `1 + extra` units, counted as accepted or dropped together.
    /// Returns whether the slot was kept. Callers pass a constant `extra`, so
    /// a plain push pays nothing for it.
    ///
    /// # Safety
    /// The cursor was made by [`Producer::cursor`] of a producer that is
    /// still alive, on this thread, and no other cursor of its queue was
    /// pushed through since.
    #[inline(always)]
    pub(crate) unsafe fn push_with(&mut self, extra: u32, make: impl FnOnce() -> T) -> bool {
        // SAFETY: the producer, alive as the caller promises, holds the queue.
        let shared = unsafe { &*self.shared };
        if self.head >= self.limit {
            self.limit = shared.tail.0.load(Ordering::Acquire) + self.capacity;
            if self.head >= self.limit {
                self.dropped += 1 + u64::from(extra);
                shared.dropped.0.store(self.dropped, Ordering::Relaxed);
                return false;
            }
        }
        let slot = make();
        // SAFETY: head & mask < capacity = slots.len(); the place is outside the
        // consumer's window [tail, head) because head < limit <= tail + capacity
        // (the consumer's tail only grows), so no one reads it until the release
        // store below publishes it; this cursor is the only producer.
        unsafe { (*self.slots.add((self.head & self.mask) as usize)).write(slot) };
        if extra != 0 {
            self.extra += u64::from(extra);
            // Before the head: whoever sees the slot also sees its extras.
            shared
                .published
                .0
                .extra
                .store(self.extra, Ordering::Relaxed);
        }
        self.head += 1;
        shared.published.0.head.store(self.head, Ordering::Release);
        true
    }
}

impl<T: Copy> Producer<T> {
    /// A cursor at this producer's current position, for its thread to push
    /// through ([`Cursor::push_with`]).
    pub(crate) fn cursor(&self) -> Cursor<T> {
        Cursor::at(&self.shared)
    }

    /// Whether the consumer's owner closed the queue.
    pub(crate) fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }
}

/// A producer with the one cursor made of it, pushed through as a recording
/// thread does (the tests' producing end).
#[cfg(test)]
pub(crate) struct PushingProducer<T> {
    cursor: Cursor<T>,
    producer: Producer<T>,
}

#[cfg(test)]
impl<T: Copy> PushingProducer<T> {
    pub(crate) fn new(producer: Producer<T>) -> PushingProducer<T> {
        PushingProducer {
            cursor: producer.cursor(),
            producer,
        }
    }

    /// [`Cursor::push_with`] through the one cursor.
    pub(crate) fn push_with(&mut self, extra: u32, make: impl FnOnce() -> T) -> bool {
        // SAFETY: the cursor was made by the producer held alongside, which is
        // alive, stays on this thread (it is not `Send`) and makes no other.
        unsafe { self.cursor.push_with(extra, make) }
    }

    /// Whether the consumer's owner closed the queue.
    pub(crate) fn is_closed(&self) -> bool {
        self.producer.is_closed()
    }
}

impl<T> Drop for Producer<T> {
    fn drop(&mut self) {
        self.shared.detached.store(true, Ordering::Release);
    }
}

/// Units accepted and dropped by one queue, in total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct QueueCounts {
    /// Units accepted into the queue.
    pub accepted: u64,
    /// Units dropped because the queue was full.
    pub dropped: u64,
}

/// The consuming end; exactly one exists per queue.
pub(crate) struct Consumer<T> {
    shared: Arc<Shared<T>>,
    /// Extra units of the slots popped so far.
    consumed_extra: u64,
}

impl<T: Copy> Consumer<T> {
    /// Pops up to `max` published slots, oldest first, handing each to `take`,
    /// which returns the units beyond one that the slot stood for. Returns the
    /// slots popped.
    #[inline]
    pub(crate) fn pop_with(&mut self, max: usize, mut take: impl FnMut(&T) -> u32) -> usize {
        let tail = self.shared.tail.0.load(Ordering::Relaxed);
        let head = self.shared.published.0.head.load(Ordering::Acquire);
        let n = (head.wrapping_sub(tail) as usize).min(max);
        let mut extra = 0u64;
        for i in 0..n as u64 {
            let index = (tail.wrapping_add(i) & self.shared.mask) as usize;
            // SAFETY: indices [tail, tail + n) were published by the producer's
            // release store of head (acquired above) and are initialised; the
            // producer does not touch them until the release store of tail below,
            // and `index` is masked into the slot array.
            extra += u64::from(unsafe { self.shared.slots[index].read(&mut take) });
        }
        if n > 0 {
            self.shared
                .tail
                .0
                .store(tail.wrapping_add(n as u64), Ordering::Release);
        }
        self.consumed_extra += extra;
        n
    }

    /// Slots published and not yet popped.
    pub(crate) fn pending(&self) -> u64 {
        let head = self.shared.published.0.head.load(Ordering::Acquire);
        head.wrapping_sub(self.shared.tail.0.load(Ordering::Relaxed))
    }

    /// Units published and not yet popped.
    pub(crate) fn pending_units(&self) -> u64 {
        let head = self.shared.published.0.head.load(Ordering::Acquire);
        let extra = self.shared.published.0.extra.load(Ordering::Relaxed);
        let tail = self.shared.tail.0.load(Ordering::Relaxed);
        head.wrapping_sub(tail) + extra.wrapping_sub(self.consumed_extra)
    }

    /// Whether the producer was dropped (the queue can be retired once empty).
    pub(crate) fn is_detached(&self) -> bool {
        self.shared.detached.load(Ordering::Acquire)
    }

    /// The queue's counters, in units.
    pub(crate) fn counts(&self) -> QueueCounts {
        let head = self.shared.published.0.head.load(Ordering::Acquire);
        QueueCounts {
            accepted: head + self.shared.published.0.extra.load(Ordering::Relaxed),
            dropped: self.shared.dropped.0.load(Ordering::Relaxed),
        }
    }

    /// Marks the queue closed so the producer's owner forgets it.
    pub(crate) fn close(&self) {
        self.shared.closed.store(true, Ordering::Release);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn pop_all(c: &mut Consumer<(u64, u32)>, max: usize, out: &mut Vec<u64>) -> usize {
        c.pop_with(max, |&(v, extra)| {
            out.push(v);
            extra
        })
    }

    #[test]
    fn keeps_order_wraps_and_counts_drops() {
        let (p, mut c) = channel::<(u64, u32)>(4).unwrap();
        let mut p = PushingProducer::new(p);
        for v in 0..6 {
            p.push_with(0, || (v, 0));
        }
        assert_eq!(
            c.counts(),
            QueueCounts {
                accepted: 4,
                dropped: 2
            }
        );
        let mut out = Vec::new();
        assert_eq!(pop_all(&mut c, 3, &mut out), 3);
        for v in 6..9 {
            p.push_with(0, || (v, 0));
        }
        assert_eq!(pop_all(&mut c, usize::MAX, &mut out), 4);
        assert_eq!(out, vec![0, 1, 2, 3, 6, 7, 8]);
        assert_eq!(c.pending(), 0);
        assert!(!c.is_detached());
        assert!(!p.is_closed());
        c.close();
        assert!(p.is_closed());
        drop(p);
        assert!(c.is_detached());
    }

    #[test]
    fn a_full_queue_does_not_build_the_slot() {
        let (p, _c) = channel::<u64>(2).unwrap();
        let mut p = PushingProducer::new(p);
        assert!(p.push_with(0, || 1));
        assert!(p.push_with(0, || 2));
        assert!(!p.push_with(0, || unreachable!("no room, nothing built")));
    }

    #[test]
    fn a_slot_counts_as_its_units_whole_or_dropped_whole() {
        let (p, mut c) = channel::<(u64, u32)>(4).unwrap();
        let mut p = PushingProducer::new(p);
        p.push_with(0, || (1, 0));
        p.push_with(2, || (2, 2));
        p.push_with(0, || (3, 0));
        assert_eq!(c.pending(), 3);
        assert_eq!(c.pending_units(), 5);
        let mut out = Vec::new();
        assert_eq!(pop_all(&mut c, 2, &mut out), 2);
        assert_eq!(c.pending_units(), 1);
        // Room for 3 more slots: the fourth push and the weighted fifth are
        // dropped, the weighted one as all of its units.
        p.push_with(2, || (4, 2));
        p.push_with(0, || (5, 0));
        p.push_with(2, || (6, 2));
        p.push_with(0, || (7, 0));
        p.push_with(2, || (8, 2));
        assert_eq!(
            c.counts(),
            QueueCounts {
                accepted: (1 + 3 + 1) + (3 + 1 + 3),
                dropped: 1 + 3
            }
        );
        assert_eq!(pop_all(&mut c, usize::MAX, &mut out), 4);
        assert_eq!(c.pending_units(), 0);
        assert_eq!(out, vec![1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn concurrent_pops_lose_nothing_and_keep_order() {
        let n = if cfg!(miri) { 500 } else { 200_000u64 };
        // A producer stays on the thread that created it: the consumer moves.
        let (hand_over, receive) = std::sync::mpsc::channel();
        let producer = std::thread::spawn(move || {
            let (p, c) = channel::<u64>(64).unwrap();
            let mut p = PushingProducer::new(p);
            hand_over.send(c).unwrap();
            for i in 0..n {
                p.push_with(0, || i);
            }
        });
        let mut c = receive.recv().unwrap();
        let mut out = Vec::new();
        loop {
            let detached = c.is_detached();
            c.pop_with(usize::MAX, |&v| {
                out.push(v);
                0
            });
            if detached && c.pending() == 0 {
                break;
            }
            std::thread::yield_now();
        }
        producer.join().unwrap();
        let counts = c.counts();
        assert_eq!(counts.accepted + counts.dropped, n);
        assert_eq!(out.len() as u64, counts.accepted);
        assert!(out.windows(2).all(|w| w[0] < w[1]));
    }
}

/// Loom models of the queue's hand-off, checking this very code (its atomics
/// and slot accesses come from [`crate::sync`]): every interleaving of a
/// recording thread and the flush thread, within loom's preemption bound.
///
/// `RUSTFLAGS="--cfg loom" cargo test -p nixl-telemetry --release --lib loom`
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;

    /// What the flush thread does with one queue (as `collector.rs` does),
    /// `passes` times at most: read `detached` first, then drain; the queue
    /// is retired once it was detached before a drain that left nothing
    /// pending. Returns whether it was retired. (A fixed number of passes,
    /// not a spin: loom explores every placement of a bounded thread, while
    /// one that yields is scheduled only when the others cannot run.)
    fn flush_passes(
        c: &mut Consumer<(u64, u32)>,
        passes: usize,
        max: usize,
        got: &mut Vec<u64>,
        units: &mut u64,
    ) -> bool {
        for _ in 0..passes {
            let detached = c.is_detached();
            c.pop_with(max, |&(v, extra)| {
                got.push(v);
                *units += 1 + u64::from(extra);
                extra
            });
            // Never more units pending than published: the extras are
            // published before the head that covers them.
            assert!(c.pending_units() < 1 << 16, "pending units wrapped");
            if detached && c.pending() == 0 {
                return true;
            }
        }
        false
    }

    /// A recording thread pushes `pushes` into a queue of two and exits
    /// while the flush thread makes `passes` passes of up to `max` slots;
    /// the rest is drained after both are done. Every event is delivered or
    /// counted dropped, once, in order; a queue retired by the flush thread
    /// had delivered everything; and no slot is read while written, nor
    /// written again before it was read (loom reports either as a data race
    /// on the slot).
    fn hand_off(pushes: &'static [(u64, u32)], passes: usize, max: usize) {
        loom::model(move || {
            let (p, mut c) = channel::<(u64, u32)>(2).unwrap();
            let mut p = PushingProducer::new(p);
            let flush = loom::thread::spawn(move || {
                let (mut got, mut units) = (Vec::new(), 0);
                let retired = flush_passes(&mut c, passes, max, &mut got, &mut units);
                (c, got, units, retired)
            });
            let mut kept = Vec::new();
            for &(v, extra) in pushes {
                if p.push_with(extra, || (v, extra)) {
                    kept.push(v);
                }
            }
            drop(p);
            let (mut c, mut got, mut units, retired) = flush.join().unwrap();
            if retired {
                assert_eq!(got, kept, "retired before everything was delivered");
            }
            assert!(flush_passes(&mut c, 3, usize::MAX, &mut got, &mut units));
            let counts = c.counts();
            let pushed: u64 = pushes.iter().map(|&(_, extra)| 1 + u64::from(extra)).sum();
            assert_eq!(counts.accepted + counts.dropped, pushed);
            assert_eq!(units, counts.accepted);
            assert_eq!(got, kept);
            assert_eq!(c.pending_units(), 0);
        });
    }

    /// Three slots, one standing for three events, into a queue of two:
    /// drop accounting in units, the retire protocol.
    #[test]
    fn loom_push_drain_and_drop_accounting() {
        hand_off(&[(1, 0), (2, 2), (3, 0)], 2, usize::MAX);
    }

    /// Four slots into a queue of two, popped one at a time: a slot is
    /// written again only after the consumer's release of `tail` said it
    /// was read, and a full queue re-reads `tail` before it drops.
    #[test]
    fn loom_slots_are_reused_only_after_they_were_read() {
        hand_off(&[(1, 0), (2, 0), (3, 0), (4, 0)], 3, 1);
    }
}
