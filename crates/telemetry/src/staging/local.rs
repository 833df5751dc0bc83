//! The per-thread side of the staging: each recording thread's table of its
//! producers (one per telemetry instance it recorded into) and the fast-path
//! cache in front of it.
//!
//! The cache is direct-mapped by instance: a record whose instance is cached
//! reaches its producer with one thread-local address computation and one
//! compare. Everything else (first record into an instance, a thread that
//! alternates between more instances than the cache has ways, forgetting the
//! queues of instances that shut down) takes the slow path through the table.

use std::cell::{Cell, UnsafeCell};

use super::queue::{Cursor, Producer};
use super::slot::StagedSlot;

/// A recording thread's end of one staging queue.
pub(super) type SlotProducer = Producer<StagedSlot>;

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
    /// The cursor of the cached instance's queue, whose producer TABLE owns.
    cursors: [UnsafeCell<Cursor<StagedSlot>>; CACHE_WAYS],
}

impl LocalCache {
    fn reset(&self) {
        for (id, cursor) in self.ids.iter().zip(&self.cursors) {
            id.set(0);
            // SAFETY: only this thread touches its cache, and no reference
            // into a cursor is alive outside `push`, which does not get here.
            unsafe { *cursor.get() = Cursor::NONE };
        }
    }
}

/// The calling thread's producers, one per telemetry instance it recorded into.
struct LocalTable {
    entries: UnsafeCell<Vec<(u64, Box<SlotProducer>)>>,
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
            cursors: [const { UnsafeCell::new(Cursor::NONE) }; CACHE_WAYS],
        }
    };
    static TABLE: LocalTable = const {
        LocalTable {
            entries: UnsafeCell::new(Vec::new()),
        }
    };
}

/// Pushes the slot `make` builds (standing for `1 + extra` events) into the
/// calling thread's queue of instance `id` (ids start at 1; the instance's
/// cache way is `id % CACHE_WAYS`). When this thread has no queue for the instance
/// yet, `register` is asked for one (`None`: the instance shut down, or no
/// memory). Returns `false` when there is no queue to push into (that, or the
/// thread's storage is already torn down): the caller counts the events lost.
///
/// `make` and `register` must not record into telemetry themselves (they build
/// a slot and register a queue): the producer is borrowed while `make` runs.
#[inline(always)]
pub(super) fn push(
    id: u64,
    extra: u32,
    make: impl FnOnce() -> StagedSlot,
    register: impl FnOnce() -> Option<SlotProducer>,
) -> bool {
    // The address only (a closure this small always inlines; the whole push
    // inside `with` did not, costing a call per record).
    let cache = CACHE.with(|cache| cache as *const LocalCache);
    // SAFETY: CACHE is this thread's const-initialised thread-local without a
    // destructor: its storage stays valid until the thread exits, which
    // cannot happen during this call.
    let cache = unsafe { &*cache };
    // Masked, the index needs no bounds check.
    let way = id as usize & (CACHE_WAYS - 1);
    // The slow path takes neither `make` nor its captures: nothing of the
    // fast path waits on it.
    if cache.ids[way].get() != id && !find_or_register(cache, id, way, register) {
        return false;
    }
    // SAFETY: `cursors[way]` was made by the producer of instance `id`'s queue,
    // which this thread's TABLE owns, when `ids[way]` was set to `id`; both are
    // reset whenever an entry is removed or TABLE is torn down, so the producer
    // is alive. A queue's cursor is made only into its instance's one way and
    // only when that way held another instance, so it is the only one pushed
    // through. Only this thread touches the cache, and nothing reached from
    // push_with re-enters it (`make` only builds a slot, see above), so this is
    // the only reference.
    unsafe { (*cache.cursors[way].get()).push_with(extra, make) };
    true
}

/// Finds or registers the calling thread's queue for instance `id` and makes
/// it the cached one in `way`; `false` when there is none to be had.
#[cold]
#[inline(never)]
fn find_or_register(
    cache: &LocalCache,
    id: u64,
    way: usize,
    register: impl FnOnce() -> Option<SlotProducer>,
) -> bool {
    TABLE
        .try_with(|table| {
            // SAFETY: only this thread accesses the table and no reference into
            // it is alive here (this is not reachable from a push_with, and
            // `register` does not record).
            let entries = unsafe { &mut *table.entries.get() };
            // Forget queues of instances that have shut down.
            let before = entries.len();
            entries.retain(|(_, p)| !p.is_closed());
            if entries.len() != before {
                cache.reset();
            }
            let index = match entries.iter().position(|(entry, _)| *entry == id) {
                Some(i) => i,
                None => {
                    entries.push((id, Box::new(register()?)));
                    entries.len() - 1
                }
            };
            // SAFETY: as in `reset`: no reference into the cursor is alive.
            unsafe { *cache.cursors[way].get() = entries[index].1.cursor() };
            cache.ids[way].set(id);
            Some(())
        })
        .ok()
        .flatten()
        .is_some()
}

/// The instance ids this thread holds queues for (tests inspect the purge).
#[cfg(test)]
pub(super) fn registered_ids() -> Vec<u64> {
    TABLE.with(|t| {
        // SAFETY: the test inspects this thread's table; no push is in progress.
        let entries = unsafe { &*t.entries.get() };
        entries.iter().map(|(id, _)| *id).collect()
    })
}
