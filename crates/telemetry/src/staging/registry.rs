//! The instance registry: one [`Staging`] per telemetry instance, where
//! recording threads register their queues and the flush side collects them.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use nixl_telemetry_abi::{Category, EVENT_NAME_CAPACITY};

use super::local::{self, SlotProducer};
use super::queue;
use super::slot::{StagedSlot, When, TRANSFER_EXTRA_EVENTS};
use super::Consumer;
use crate::telemetry::Direction;

/// Instance ids start at 1; 0 means "no cached instance".
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// What a recording call needs to find its thread's queue of one instance:
/// the instance's id. A handle keeps a copy, so its record reads the id from
/// the handle itself instead of through the instance (one dependent load
/// less ahead of the queue lookup).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct QueueKey(u64);

impl QueueKey {
    /// The key of no instance (a disabled handle's): ids start at 1.
    pub(crate) const NONE: QueueKey = QueueKey(0);
}

/// One telemetry instance's side of the staging: where recording threads
/// register their queues.
pub(crate) struct Staging {
    id: u64,
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
    /// Calibrates the clock first (once per process): a slot stamped by
    /// the clock is then ticks or µs as the drain expects.
    pub(crate) fn new(capacity: usize) -> Staging {
        crate::clock::init();
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        Staging {
            id,
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

    /// The key of this instance's queues ([`Staging::push_event_keyed`]).
    pub(crate) fn key(&self) -> QueueKey {
        QueueKey(self.id)
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
        self.push_event_keyed(self.key(), when, category, name, value);
    }

    /// [`Staging::push_event`] with this instance's key as the caller keeps it
    /// (`key` must be this instance's [`Staging::key`]).
    #[inline(always)]
    pub(crate) fn push_event_keyed(
        &self,
        key: QueueKey,
        when: When,
        category: Category,
        name: impl FnOnce() -> [u8; EVENT_NAME_CAPACITY],
        value: u64,
    ) {
        debug_assert_eq!(key, self.key(), "a key of another instance");
        self.push_slot(key, 0, move || {
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
        self.push_slot(self.key(), TRANSFER_EXTRA_EVENTS, move || {
            StagedSlot::transfer(when, duration_us, direction, bytes)
        });
    }

    #[inline(always)]
    fn push_slot(&self, key: QueueKey, extra: u32, make: impl FnOnce() -> StagedSlot) {
        if !local::push(key.0, extra, make, || self.register()) {
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
