//! Per-thread staging: one bounded single-producer single-consumer queue per
//! (recording thread, telemetry instance).
//!
//! The recording thread owns the [`Producer`] through a thread-local table; the
//! flush side owns the matching [`Consumer`]. A push is: compare the cached
//! instance id, check for room against a cached copy of the consumer's position,
//! write the 56-byte event, publish the new head with a release store. No lock,
//! no allocation, no system call, no read-modify-write instruction, and the only
//! cache line shared with the flusher is read by it once per flush.
//!
//! A slot may stand for more than one event: a caller that can describe several
//! events in one 56-byte slot (a completed transfer, see `transfer_record`)
//! pushes it with [`Staging::push_packed`], and the queue stores the number
//! of further events the slot stands for in the slot's `reserved` field (0 for a
//! plain event, as every [`Event`] constructor writes it). The counters the
//! collector reads count events, not slots, so its books stay exact.
//!
//! A push that takes its own timestamp ([`When::Now`]) stores the raw
//! time-stamp-counter reading ([`clock::stamp`]) and flags it in `reserved`;
//! the drain converts it to µs with one calibration snapshot per drain, so the
//! recording thread pays for the RDTSC instruction and nothing else.
//!
//! All `unsafe` of the collector's staging lives in this module.

use std::cell::{Cell, UnsafeCell};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use nixl_telemetry_abi::Event;

use crate::clock::{self, TscToUs};

/// `reserved` bits of a staged slot: how many further events it stands for.
const EXTRA_MASK: u32 = 0xff;
/// `reserved` bit of a staged slot: `timestamp_us` holds raw TSC ticks.
const RAW_TIMESTAMP: u32 = 1 << 31;

/// Where a push's timestamp comes from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum When {
    /// Read now, inside the push, and only when the event is kept.
    Now,
    /// Taken by the caller: µs since the epoch.
    At(u64),
}

/// Keeps a value on its own cache line (128 bytes covers adjacent-line prefetch).
#[repr(align(128))]
struct CachePadded<T>(T);

/// What the producer publishes, on one line.
struct Published {
    /// Slots published so far (free-running).
    head: AtomicU64,
    /// Events beyond one per slot published so far (packed slots' extras).
    extra: AtomicU64,
}

/// The state one producer and one consumer share.
struct Shared {
    /// Producer side: slots (and the extra events they stand for) published so far.
    published: CachePadded<Published>,
    /// Producer side: events dropped because the queue was full.
    dropped: CachePadded<AtomicU64>,
    /// Consumer side: slots consumed so far (free-running).
    tail: CachePadded<AtomicU64>,
    /// Set by the producer's thread when it exits; its last events stay drainable.
    detached: AtomicBool,
    /// Set by the collector when it shuts down; the producer entry is then purged.
    closed: AtomicBool,
    mask: u64,
    slots: Box<[UnsafeCell<MaybeUninit<Event>>]>,
}

// SAFETY: slots are written only by the single Producer at indices in
// [tail, tail + capacity) not yet published, and read only by the single
// Consumer at indices in [tail, head) after an acquire load of `head`; the
// release/acquire pair on head and tail orders those accesses. Everything
// else is atomic.
unsafe impl Sync for Shared {}
// SAFETY: as above; nothing in Shared is tied to a thread.
unsafe impl Send for Shared {}

/// Creates a queue of `capacity` events (a power of two ≥ 2); `None` if the
/// memory for its slots cannot be had (a failed allocation must not abort the
/// host: with the largest buffer size a queue is 3.5 GiB).
fn try_channel(capacity: usize) -> Option<(Producer, Consumer)> {
    assert!(capacity.is_power_of_two() && capacity >= 2);
    let mut slots = Vec::new();
    slots.try_reserve_exact(capacity).ok()?;
    slots.extend((0..capacity).map(|_| UnsafeCell::new(MaybeUninit::uninit())));
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
        slots: shared.slots.as_ptr() as *mut Event,
        shared: Arc::clone(&shared),
        head: 0,
        extra: 0,
        cached_tail: 0,
        dropped: 0,
        capacity: capacity as u64,
        mask: capacity as u64 - 1,
    };
    Some((
        producer,
        Consumer {
            shared,
            consumed_extra: 0,
        },
    ))
}

/// The recording thread's end of one queue. Not `Send`: it lives in the
/// thread-local table of the thread that created it. Aligned to its own cache
/// lines so that two threads' producers never share one.
#[repr(align(128))]
struct Producer {
    shared: Arc<Shared>,
    slots: *mut Event,
    head: u64,
    extra: u64,
    cached_tail: u64,
    dropped: u64,
    capacity: u64,
    mask: u64,
}

impl Producer {
    #[cfg(test)]
    fn push(&mut self, event: Event) {
        self.push_with(0, When::At(event.timestamp_us), |_| event)
    }

    /// Writes the event `make` builds straight into the next slot; `make` runs
    /// only when there is room (a full queue neither builds nor timestamps),
    /// with the timestamp `when` gives (raw ticks for [`When::Now`] on a TSC
    /// machine, flagged for the drain to convert). The slot stands for
    /// `1 + extra` events: they are counted as accepted or dropped together,
    /// and `extra` is stored in the slot's `reserved` field. Callers pass
    /// constants, so a plain push pays nothing for either.
    #[inline(always)]
    fn push_with(&mut self, extra: u32, when: When, make: impl FnOnce(u64) -> Event) {
        if self.head.wrapping_sub(self.cached_tail) >= self.capacity {
            self.cached_tail = self.shared.tail.0.load(Ordering::Acquire);
            if self.head.wrapping_sub(self.cached_tail) >= self.capacity {
                self.dropped += 1 + u64::from(extra);
                self.shared.dropped.0.store(self.dropped, Ordering::Relaxed);
                return;
            }
        }
        let (timestamp, raw) = match when {
            When::Now => clock::stamp(),
            When::At(us) => (us, false),
        };
        let mut event = make(timestamp);
        event.reserved = extra | if raw { RAW_TIMESTAMP } else { 0 };
        // SAFETY: head & mask < capacity = slots.len(); the slot is outside the
        // consumer's window [tail, head) because head - tail < capacity, so no one
        // reads it until the release store below publishes it.
        unsafe {
            self.slots
                .add((self.head & self.mask) as usize)
                .write(event)
        };
        if extra != 0 {
            self.extra += u64::from(extra);
            // Before the head: whoever sees the slot also sees its extras.
            self.shared
                .published
                .0
                .extra
                .store(self.extra, Ordering::Relaxed);
        }
        self.head += 1;
        self.shared
            .published
            .0
            .head
            .store(self.head, Ordering::Release);
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        self.shared.detached.store(true, Ordering::Release);
    }
}

/// The flush side's end of one queue; exactly one exists per queue.
pub(crate) struct Consumer {
    shared: Arc<Shared>,
    /// Extra events of the slots drained so far.
    consumed_extra: u64,
}

/// What one [`Consumer::drain_into`] moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Drained {
    /// Slots moved (as many `Event`s were appended).
    pub slots: usize,
    /// Events beyond one per slot that the moved slots stand for: the appended
    /// packed slots still to be expanded (see `transfer_record::expand`).
    pub extra: usize,
}

/// Counters of one queue, read by the flush side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct QueueCounts {
    /// Events accepted into the queue, in total.
    pub accepted: u64,
    /// Events dropped because the queue was full, in total.
    pub dropped: u64,
}

impl Consumer {
    /// Moves every published slot into `out`, oldest first, up to `max` slots:
    /// raw timestamps converted to µs, and a packed slot as one `Event` whose
    /// `reserved` field says how many further events it stands for.
    pub(crate) fn drain_into(&mut self, out: &mut Vec<Event>, max: usize) -> Drained {
        let tail = self.shared.tail.0.load(Ordering::Relaxed);
        let head = self.shared.published.0.head.load(Ordering::Acquire);
        let n = (head.wrapping_sub(tail) as usize).min(max);
        if n == 0 {
            return Drained::default();
        }
        let from = out.len();
        let cap = self.shared.slots.len();
        let start = (tail & self.shared.mask) as usize;
        let first = n.min(cap - start);
        out.reserve(n);
        let base = self.shared.slots.as_ptr() as *const Event;
        // SAFETY: indices [tail, tail + n) were published by the producer's release
        // store of head (acquired above) and are initialised; the producer does
        // not touch them until the release store of tail below. Both segments lie
        // inside the slot array, and `out` has room for n more events.
        unsafe {
            let dst = out.as_mut_ptr().add(out.len());
            std::ptr::copy_nonoverlapping(base.add(start), dst, first);
            std::ptr::copy_nonoverlapping(base, dst.add(first), n - first);
            out.set_len(out.len() + n);
        }
        self.shared
            .tail
            .0
            .store(tail.wrapping_add(n as u64), Ordering::Release);
        let extra = settle(&mut out[from..]);
        self.consumed_extra += extra;
        Drained {
            slots: n,
            extra: extra as usize,
        }
    }

    /// Slots published and not yet drained.
    pub(crate) fn pending(&self) -> u64 {
        let head = self.shared.published.0.head.load(Ordering::Acquire);
        head.wrapping_sub(self.shared.tail.0.load(Ordering::Relaxed))
    }

    /// Events published and not yet drained (a packed slot counts for all of its).
    pub(crate) fn pending_events(&self) -> u64 {
        let head = self.shared.published.0.head.load(Ordering::Acquire);
        let extra = self.shared.published.0.extra.load(Ordering::Relaxed);
        let tail = self.shared.tail.0.load(Ordering::Relaxed);
        head.wrapping_sub(tail) + extra.wrapping_sub(self.consumed_extra)
    }

    /// Whether the producing thread has exited (its queue can be retired once empty).
    pub(crate) fn is_detached(&self) -> bool {
        self.shared.detached.load(Ordering::Acquire)
    }

    /// The queue's counters, in events.
    pub(crate) fn counts(&self) -> QueueCounts {
        let head = self.shared.published.0.head.load(Ordering::Acquire);
        QueueCounts {
            accepted: head + self.shared.published.0.extra.load(Ordering::Relaxed),
            dropped: self.shared.dropped.0.load(Ordering::Relaxed),
        }
    }

    /// Marks the queue closed so the producing thread forgets it.
    pub(crate) fn close(&self) {
        self.shared.closed.store(true, Ordering::Release);
    }
}

/// Converts the raw timestamps among freshly drained slots to µs (one
/// calibration snapshot for all) and clears their flag; returns the extra
/// events the slots stand for, which stay in `reserved` for the expansion.
fn settle(slots: &mut [Event]) -> u64 {
    let mut extra = 0u64;
    let mut calibration: Option<TscToUs> = None;
    for slot in slots {
        let tag = slot.reserved;
        if tag & RAW_TIMESTAMP != 0 {
            let cal = *calibration.get_or_insert_with(TscToUs::current);
            slot.timestamp_us = cal.us(slot.timestamp_us);
            slot.reserved = tag & !RAW_TIMESTAMP;
        }
        extra += u64::from(tag & EXTRA_MASK);
    }
    extra
}

/// Instance ids start at 1; 0 means "no cached instance".
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// One telemetry instance's side of the staging: where recording threads
/// register their queues.
pub(crate) struct Staging {
    id: u64,
    /// `id % CACHE_WAYS`: this instance's way in each thread's fast-path cache.
    way: usize,
    capacity: usize,
    registered: Mutex<Vec<Consumer>>,
    /// Set (under the `registered` lock) when the instance shuts down: no
    /// queue is registered after that, so a handle that outlives its
    /// telemetry costs no memory on the threads it is used on.
    shut: AtomicBool,
    /// Events recorded on a thread whose thread-local storage was already torn
    /// down, or that found no queue because the instance had shut down or the
    /// memory for one could not be had.
    late_drops: AtomicU64,
    /// A failed queue allocation was logged.
    warned_no_memory: AtomicBool,
}

impl Staging {
    /// A staging area whose queues hold `capacity` events each.
    pub(crate) fn new(capacity: usize) -> Staging {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        Staging {
            id,
            way: id as usize % CACHE_WAYS,
            capacity,
            registered: Mutex::new(Vec::new()),
            shut: AtomicBool::new(false),
            late_drops: AtomicU64::new(0),
            warned_no_memory: AtomicBool::new(false),
        }
    }

    /// Stops registering queues; what was registered until now is handed over
    /// to `into` (to be closed by the caller).
    pub(crate) fn shut_down(&self, into: &mut Vec<Consumer>) {
        let mut reg = self
            .registered
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.shut.store(true, Ordering::Release);
        into.append(&mut reg);
    }

    /// Records one event into the calling thread's queue for this instance.
    #[cfg(test)]
    pub(crate) fn push_event(&self, event: Event) {
        self.push(When::At(event.timestamp_us), |_| event)
    }

    /// Records the event `make` builds, given its timestamp, into the calling
    /// thread's queue for this instance. The event is built in its slot (no
    /// copy through the stack), and only when it will be kept: a full queue
    /// reads no clock.
    #[inline(always)]
    pub(crate) fn push(&self, when: When, make: impl FnOnce(u64) -> Event) {
        self.push_slot_with(0, when, make)
    }

    /// Records one slot that stands for `1 + extra` events (kept or dropped, and
    /// counted, together); the queue stores `extra` in its `reserved` field and
    /// whoever drains it expands it (`transfer_record` is the one packer).
    #[inline(always)]
    pub(crate) fn push_packed(&self, extra: u32, when: When, make: impl FnOnce(u64) -> Event) {
        debug_assert!(extra <= EXTRA_MASK);
        self.push_slot_with(extra, when, make)
    }

    #[inline(always)]
    fn push_slot_with(&self, extra: u32, when: When, make: impl FnOnce(u64) -> Event) {
        // The address only (a closure this small always inlines; the whole push
        // inside `with` did not, costing a call per record).
        let cache = CACHE.with(|cache| cache as *const LocalCache);
        // SAFETY: CACHE is this thread's const-initialised thread-local without a
        // destructor: its storage stays valid until the thread exits, which
        // cannot happen during this call.
        let cache = unsafe { &*cache };
        // The mask is a no-op (`way < CACHE_WAYS`) that spares a bounds check.
        let way = self.way & (CACHE_WAYS - 1);
        if cache.ids[way].get() == self.id {
            // SAFETY: `producers[way]` points into a Box owned by this thread's
            // TABLE, set together with `ids[way]`, and reset whenever an entry
            // is removed or TABLE is torn down; only this thread touches them,
            // and nothing reached from Producer::push_with re-enters them
            // (`make` only builds an event, `clock::stamp` only reads the
            // clock), so this is the only reference.
            unsafe { (*cache.producers[way].get()).push_with(extra, when, make) }
        } else {
            self.push_slow(cache, extra, when, make);
        }
    }

    /// Finds or registers the calling thread's queue for this instance, makes it
    /// the cached one, and records `event` into it.
    #[cold]
    #[inline(never)]
    fn push_slow(
        &self,
        cache: &LocalCache,
        extra: u32,
        when: When,
        make: impl FnOnce(u64) -> Event,
    ) {
        let pushed = TABLE.try_with(|table| {
            // SAFETY: only this thread accesses the table and no reference into it
            // is alive here (push_slow is not reachable from a Producer::push_with).
            let entries = unsafe { &mut *table.entries.get() };
            // Forget queues of instances that have shut down.
            let before = entries.len();
            entries.retain(|(_, p)| !p.shared.closed.load(Ordering::Acquire));
            if entries.len() != before {
                cache.reset();
            }
            let index = match entries.iter().position(|(id, _)| *id == self.id) {
                Some(i) => i,
                None => match self.register() {
                    Some(producer) => {
                        entries.push((self.id, Box::new(producer)));
                        entries.len() - 1
                    }
                    None => return false,
                },
            };
            let producer: *mut Producer = &mut *entries[index].1;
            let way = self.way;
            cache.ids[way].set(self.id);
            cache.producers[way].set(producer);
            // SAFETY: as in `push_slot_with`: the pointer is into a live Box of TABLE.
            unsafe { (*producer).push_with(extra, when, make) };
            true
        });
        if pushed != Ok(true) {
            // This thread's TABLE is already torn down, or the instance shut down.
            self.late_drops
                .fetch_add(1 + u64::from(extra), Ordering::Relaxed);
        }
    }

    /// Hands over the consumers of queues registered since the last call.
    pub(crate) fn take_registered(&self, into: &mut Vec<Consumer>) {
        let mut reg = self
            .registered
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        into.append(&mut reg);
    }

    /// Events lost because they were recorded during thread teardown.
    pub(crate) fn late_drops(&self) -> u64 {
        self.late_drops.load(Ordering::Relaxed)
    }

    /// A new queue for the calling thread, or `None` once the instance has
    /// shut down or when there is no memory for one.
    #[cold]
    #[inline(never)]
    fn register(&self) -> Option<Producer> {
        let mut reg = self
            .registered
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if self.shut.load(Ordering::Acquire) {
            return None;
        }
        let Some((producer, consumer)) = try_channel(self.capacity) else {
            if !self.warned_no_memory.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    events = self.capacity,
                    "no memory for a staging queue: this thread's events are dropped (counted as late)"
                );
            }
            return None;
        };
        reg.push(consumer);
        Some(producer)
    }
}

/// Ways of the fast-path cache: a thread recording into up to this many
/// telemetry instances with consecutive ids (agents created one after the
/// other) never takes the slow path after the first record into each.
const CACHE_WAYS: usize = 4;
const _: () = assert!(CACHE_WAYS.is_power_of_two());

/// The calling thread's fast-path cache: the producers it recorded into last,
/// direct-mapped by instance id. It has no destructor, so reaching it costs no
/// lazy-registration check on the hot path; TABLE, which owns the producers,
/// resets it when torn down.
struct LocalCache {
    ids: [Cell<u64>; CACHE_WAYS],
    producers: [Cell<*mut Producer>; CACHE_WAYS],
}

impl LocalCache {
    fn reset(&self) {
        for (id, producer) in self.ids.iter().zip(&self.producers) {
            id.set(0);
            producer.set(std::ptr::null_mut());
        }
    }
}

/// The calling thread's producers, one per telemetry instance it recorded into.
struct LocalTable {
    entries: UnsafeCell<Vec<(u64, Box<Producer>)>>,
}

impl Drop for LocalTable {
    fn drop(&mut self) {
        // The producers go with the table: forget the cached pointer first, so a
        // record from a later thread-local destructor takes the slow path and is
        // counted as a late drop.
        let _ = CACHE.try_with(LocalCache::reset);
    }
}

thread_local! {
    static CACHE: LocalCache = const {
        LocalCache {
            ids: [const { Cell::new(0) }; CACHE_WAYS],
            producers: [const { Cell::new(std::ptr::null_mut()) }; CACHE_WAYS],
        }
    };
    static TABLE: LocalTable = const {
        LocalTable {
            entries: UnsafeCell::new(Vec::new()),
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(v: u64) -> Event {
        Event::new(v, nixl_telemetry_abi::Category::CUSTOM, "e", v)
    }

    #[test]
    fn queue_keeps_order_wraps_and_counts_drops() {
        let (mut p, mut c) = try_channel(4).unwrap();
        for v in 0..6 {
            p.push(ev(v));
        }
        assert_eq!(
            c.counts(),
            QueueCounts {
                accepted: 4,
                dropped: 2
            }
        );
        let mut out = Vec::new();
        assert_eq!(c.drain_into(&mut out, 3).slots, 3);
        for v in 6..9 {
            p.push(ev(v));
        }
        assert_eq!(c.drain_into(&mut out, usize::MAX).slots, 4);
        let values: Vec<u64> = out.iter().map(|e| e.value).collect();
        assert_eq!(values, vec![0, 1, 2, 3, 6, 7, 8]);
        assert_eq!(c.pending(), 0);
        assert!(!c.is_detached());
        drop(p);
        assert!(c.is_detached());
    }

    #[test]
    fn a_packed_slot_counts_as_its_events_whole_or_dropped_whole() {
        let (mut p, mut c) = try_channel(4).unwrap();
        p.push(ev(1));
        p.push_with(2, When::At(0), |_| ev(2));
        p.push(ev(3));
        assert_eq!(c.pending(), 3);
        assert_eq!(c.pending_events(), 5);
        let mut out = Vec::new();
        assert_eq!(c.drain_into(&mut out, 2), Drained { slots: 2, extra: 2 });
        assert_eq!(out[1].reserved, 2);
        assert_eq!(out[0].reserved, 0);
        assert_eq!(c.pending_events(), 1);
        // Room for 3 more slots: the fourth push and the packed fifth are
        // dropped, the packed one as all of its events.
        p.push_with(2, When::At(0), |_| ev(4));
        p.push(ev(5));
        p.push_with(2, When::At(0), |_| ev(6));
        p.push(ev(7));
        p.push_with(2, When::At(0), |_| ev(8));
        assert_eq!(
            c.counts(),
            QueueCounts {
                accepted: (1 + 3 + 1) + (3 + 1 + 3),
                dropped: 1 + 3
            }
        );
        assert_eq!(
            c.drain_into(&mut out, usize::MAX),
            Drained { slots: 4, extra: 4 }
        );
        assert_eq!(c.pending_events(), 0);
        let values: Vec<u64> = out.iter().map(|e| e.value).collect();
        assert_eq!(values, vec![1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn a_push_that_reads_the_clock_arrives_in_microseconds() {
        clock::init();
        let staging = Staging::new(8);
        let before = clock::now_us();
        staging.push(When::Now, |ts| {
            Event::new(ts, nixl_telemetry_abi::Category::CUSTOM, "now", 1)
        });
        staging.push_packed(2, When::Now, |ts| {
            Event::new(ts, nixl_telemetry_abi::Category::CUSTOM, "packed", 2)
        });
        let after = clock::now_us();
        let mut consumers = Vec::new();
        staging.take_registered(&mut consumers);
        let mut out = Vec::new();
        assert_eq!(
            consumers[0].drain_into(&mut out, usize::MAX),
            Drained { slots: 2, extra: 2 }
        );
        for e in &out {
            assert!(
                (before..=after).contains(&e.timestamp_us),
                "{before} {} {after}",
                e.timestamp_us
            );
        }
        // The raw-timestamp flag is gone; the packed slot's count stays.
        assert_eq!((out[0].reserved, out[1].reserved), (0, 2));
    }

    #[test]
    fn threads_get_their_own_queues_and_keep_their_order() {
        let staging = Arc::new(Staging::new(1 << 16));
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let s = Arc::clone(&staging);
                std::thread::spawn(move || {
                    for i in 0..10_000u64 {
                        s.push_event(ev(t << 32 | i));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let mut consumers = Vec::new();
        staging.take_registered(&mut consumers);
        assert_eq!(consumers.len(), 4);
        for mut c in consumers {
            assert!(c.is_detached());
            let mut out = Vec::new();
            c.drain_into(&mut out, usize::MAX);
            assert_eq!(out.len(), 10_000);
            let t = out[0].value >> 32;
            for (i, e) in out.iter().enumerate() {
                assert_eq!(e.value, t << 32 | i as u64);
            }
        }
    }

    #[test]
    fn concurrent_drain_loses_nothing() {
        let staging = Arc::new(Staging::new(64));
        let s = Arc::clone(&staging);
        let n = if cfg!(miri) { 500 } else { 200_000u64 };
        let producer = std::thread::spawn(move || {
            for i in 0..n {
                s.push_event(ev(i));
            }
        });
        let mut consumers = Vec::new();
        let mut out = Vec::new();
        loop {
            staging.take_registered(&mut consumers);
            let mut done = false;
            for c in &mut consumers {
                let detached = c.is_detached();
                c.drain_into(&mut out, usize::MAX);
                done = detached && c.pending() == 0;
            }
            if done {
                break;
            }
            std::thread::yield_now();
        }
        producer.join().unwrap();
        let counts = consumers[0].counts();
        assert_eq!(counts.accepted + counts.dropped, n);
        assert_eq!(out.len() as u64, counts.accepted);
        // Accepted events are a strictly increasing subsequence.
        assert!(out.windows(2).all(|w| w[0].value < w[1].value));
    }

    #[test]
    fn two_instances_on_one_thread_and_closed_ones_are_forgotten() {
        let a = Staging::new(8);
        let b = Staging::new(8);
        for i in 0..3 {
            a.push_event(ev(i));
            b.push_event(ev(100 + i));
        }
        let (mut ca, mut cb) = (Vec::new(), Vec::new());
        a.take_registered(&mut ca);
        b.take_registered(&mut cb);
        assert_eq!((ca.len(), cb.len()), (1, 1));
        assert_eq!(ca[0].counts().accepted, 3);
        assert_eq!(cb[0].counts().accepted, 3);
        ca[0].close();
        let c = Staging::new(8);
        // The slow path purges a's queue from this thread's table.
        c.push_event(ev(7));
        let live = TABLE.with(|t| {
            // SAFETY: the test inspects this thread's table; no push is in progress.
            let entries = unsafe { &*t.entries.get() };
            entries.iter().map(|(id, _)| *id).collect::<Vec<_>>()
        });
        assert!(!live.contains(&a.id) && live.contains(&b.id) && live.contains(&c.id));
    }

    #[test]
    fn no_queue_is_registered_after_shutdown() {
        let s = Staging::new(8);
        s.push_event(ev(1));
        let mut consumers = Vec::new();
        s.shut_down(&mut consumers);
        assert_eq!(consumers.len(), 1);
        for c in &consumers {
            c.close();
        }
        // Threads that record after the shutdown (a handle that outlived its
        // telemetry) get no queue: their events are counted, nothing is kept.
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    s.push_event(ev(2));
                    s.push_event(ev(3));
                });
            }
        });
        let mut later = Vec::new();
        s.take_registered(&mut later);
        assert!(later.is_empty());
        assert_eq!(s.late_drops(), 8);
    }
}
