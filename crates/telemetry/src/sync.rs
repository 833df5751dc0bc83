//! The synchronisation primitives of the staging queue, from `std` in every
//! build and from the `loom` model checker when compiled with `--cfg loom`
//! (`RUSTFLAGS="--cfg loom" cargo test -p nixl-telemetry --release --lib loom`),
//! so the loom models check the very queue code that ships.
//!
//! [`SlotCell`] is the one difference in shape: loom tracks every access to a
//! slot (and reports two threads touching one slot without ordering between
//! them), which needs its closure-based cell; the `std` build is a plain
//! `UnsafeCell` whose accessors inline to the same single load or store.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::Arc;

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::Arc;

use std::mem::MaybeUninit;

/// One slot of a queue: written by the producer, read by the consumer, each
/// access ordered by the queue's release/acquire positions (which is what the
/// loom build checks).
#[repr(transparent)]
pub(crate) struct SlotCell<T> {
    #[cfg(not(loom))]
    cell: std::cell::UnsafeCell<MaybeUninit<T>>,
    #[cfg(loom)]
    cell: loom::cell::UnsafeCell<MaybeUninit<T>>,
}

#[cfg(not(loom))]
impl<T> SlotCell<T> {
    /// An empty (uninitialised) slot.
    pub(crate) fn new() -> SlotCell<T> {
        SlotCell {
            cell: std::cell::UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// Stores `value` in the slot.
    ///
    /// # Safety
    /// No other thread accesses the slot during the call, and no reference
    /// to its contents is alive.
    #[inline(always)]
    pub(crate) unsafe fn write(&self, value: T) {
        // SAFETY: exclusive access, as the caller promises; the pointer comes
        // from the cell and is valid and aligned for a T.
        unsafe { self.cell.get().cast::<T>().write(value) }
    }

    /// Hands the slot's value to `read`.
    ///
    /// # Safety
    /// The slot holds a value written by [`SlotCell::write`] whose store
    /// happens before this call, and no thread writes the slot during it.
    #[inline(always)]
    pub(crate) unsafe fn read<R>(&self, read: impl FnOnce(&T) -> R) -> R {
        // SAFETY: initialised and not written concurrently, as the caller promises.
        read(unsafe { (*self.cell.get()).assume_init_ref() })
    }
}

#[cfg(loom)]
impl<T> SlotCell<T> {
    /// An empty (uninitialised) slot.
    pub(crate) fn new() -> SlotCell<T> {
        SlotCell {
            cell: loom::cell::UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// Stores `value` in the slot (loom checks that no other thread may
    /// access it meanwhile).
    ///
    /// # Safety
    /// As the `std` build's.
    pub(crate) unsafe fn write(&self, value: T) {
        self.cell.with_mut(|slot| {
            // SAFETY: exclusive access, as the caller promises and loom checks.
            unsafe { slot.cast::<T>().write(value) }
        })
    }

    /// Hands the slot's value to `read` (loom checks that its write happens
    /// before).
    ///
    /// # Safety
    /// As the `std` build's.
    pub(crate) unsafe fn read<R>(&self, read: impl FnOnce(&T) -> R) -> R {
        self.cell.with(|slot| {
            // SAFETY: initialised and ordered after its write, as the caller
            // promises and loom checks.
            read(unsafe { (*slot).assume_init_ref() })
        })
    }
}
