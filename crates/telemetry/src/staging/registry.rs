//! The instance registry: one [`Staging`] per telemetry instance, where
//! recording threads register their queues and the flush side collects them.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use nixl_telemetry_abi::{Category, EVENT_NAME_CAPACITY};

use super::local::{self, SlotProducer, CACHE_WAYS};
use super::queue;
use super::slot::{StagedSlot, When, TRANSFER_EXTRA_EVENTS};
use super::Consumer;
use crate::telemetry::Direction;

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
    /// A staging area whose queues hold `capacity` slots each.
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

    /// Records one event into the calling thread's queue for this instance,
    /// stamped as `when` says. `name` runs only when the event is kept (a
    /// full queue neither encodes a name nor reads the clock); the event is
    /// built in its slot, with no copy through the stack.
    #[inline(always)]
    pub(crate) fn push_event(
        &self,
        when: When,
        category: Category,
        name: impl FnOnce() -> [u8; EVENT_NAME_CAPACITY],
        value: u64,
    ) {
        self.push_slot(0, move || {
            StagedSlot::event_named_after_stamp(when, category, name, value)
        });
    }

    /// Records one completed transfer in one slot that stands for its three
    /// events (kept or dropped, and counted, together).
    #[inline(always)]
    pub(crate) fn push_transfer(
        &self,
        when: When,
        duration_us: u64,
        direction: Direction,
        bytes: u64,
    ) {
        self.push_slot(TRANSFER_EXTRA_EVENTS, move || {
            StagedSlot::transfer(when, duration_us, direction, bytes)
        });
    }

    #[inline(always)]
    fn push_slot(&self, extra: u32, make: impl FnOnce() -> StagedSlot) {
        if !local::push(self.id, self.way, extra, make, || self.register()) {
            // This thread's storage is already torn down, or the instance shut
            // down, or there was no memory for a queue.
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

    /// Events lost because they were recorded during thread teardown, after
    /// the shutdown, or without memory for a queue.
    pub(crate) fn late_drops(&self) -> u64 {
        self.late_drops.load(Ordering::Relaxed)
    }

    /// A new queue for the calling thread, or `None` once the instance has
    /// shut down or when there is no memory for one.
    #[cold]
    #[inline(never)]
    fn register(&self) -> Option<SlotProducer> {
        let mut reg = self
            .registered
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if self.shut.load(Ordering::Acquire) {
            return None;
        }
        let Some((producer, consumer)) = queue::channel(self.capacity) else {
            if !self.warned_no_memory.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    events = self.capacity,
                    "no memory for a staging queue: this thread's events are dropped (counted as late)"
                );
            }
            return None;
        };
        reg.push(Consumer::new(consumer));
        Some(producer)
    }

    /// This instance's id (tests check which queues a thread keeps).
    #[cfg(test)]
    pub(super) fn id(&self) -> u64 {
        self.id
    }
}
