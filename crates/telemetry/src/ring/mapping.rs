//! A shared file mapping accessed only through bounds-checked, typed operations,
//! and the one system call the ring needs outside the standard library
//! (`posix_fallocate`): all `unsafe` code of the ring lives here.
//!
//! The mapping is shared with other processes that write it concurrently, so no
//! Rust reference to its bytes is ever created except to atomic integers;
//! events are copied in and out with raw copies. Every accessor checks its range
//! against the mapping's length, so a caller bug panics instead of reading or
//! writing outside the mapping.

use std::fs::File;
use std::io::ErrorKind;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64};

use memmap2::{MmapOptions, MmapRaw};
use nixl_telemetry_abi::Event;

/// A `MAP_SHARED` mapping of the first `len` bytes of a file.
pub(crate) struct Mapping {
    raw: MmapRaw,
}

impl Mapping {
    /// Maps `len` bytes read-write.
    pub(crate) fn read_write(file: &File, len: usize) -> std::io::Result<Mapping> {
        Ok(Mapping {
            raw: MmapOptions::new().len(len).map_raw(file)?,
        })
    }

    /// Maps `len` bytes read-only; writing through it is a bug and is refused.
    pub(crate) fn read_only(file: &File, len: usize) -> std::io::Result<Mapping> {
        Ok(Mapping {
            raw: MmapOptions::new().len(len).map_raw_read_only(file)?,
        })
    }

    fn checked(&self, offset: usize, size: usize, align: usize) -> *mut u8 {
        let end = offset.checked_add(size).expect("mapping range overflows");
        assert!(
            end <= self.raw.len(),
            "range {offset}..{end} outside mapping of {}",
            self.raw.len()
        );
        assert!(
            offset.is_multiple_of(align),
            "offset {offset} not aligned to {align}"
        );
        // SAFETY: offset + size <= len, so the pointer stays inside the mapping.
        unsafe { self.raw.as_mut_ptr().add(offset) }
    }

    /// The 8-byte atomic at `offset` (8-aligned).
    pub(crate) fn u64_at(&self, offset: usize) -> &AtomicU64 {
        let ptr = self.checked(offset, 8, 8);
        // SAFETY: in bounds and 8-aligned (the mapping is page-aligned); the bytes
        // are only ever accessed atomically by this process, and AtomicU64 has the
        // layout of u64. The reference lives no longer than the mapping (&self).
        unsafe { &*ptr.cast::<AtomicU64>() }
    }

    /// The 4-byte atomic at `offset` (4-aligned).
    pub(crate) fn i32_at(&self, offset: usize) -> &AtomicI32 {
        let ptr = self.checked(offset, 4, 4);
        // SAFETY: as for u64_at, for a 4-aligned 4-byte field.
        unsafe { &*ptr.cast::<AtomicI32>() }
    }

    /// The 4-byte atomic at `offset` (4-aligned).
    pub(crate) fn u32_at(&self, offset: usize) -> &AtomicU32 {
        let ptr = self.checked(offset, 4, 4);
        // SAFETY: as for u64_at, for a 4-aligned 4-byte field.
        unsafe { &*ptr.cast::<AtomicU32>() }
    }

    /// Copies `bytes` into the mapping at `offset`.
    pub(crate) fn write_bytes(&self, offset: usize, bytes: &[u8]) {
        let dst = self.checked(offset, bytes.len(), 1);
        // SAFETY: dst is valid for bytes.len() bytes (checked); a private slice
        // cannot overlap a shared file mapping.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len()) };
    }

    /// Copies `out.len()` bytes from the mapping at `offset` into `out`.
    pub(crate) fn read_bytes(&self, offset: usize, out: &mut [u8]) {
        let src = self.checked(offset, out.len(), 1);
        // SAFETY: src is valid for out.len() bytes (checked); no overlap.
        unsafe { std::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) };
    }

    /// Copies `events` into consecutive 56-byte slots starting at byte `offset`.
    pub(crate) fn write_events(&self, offset: usize, events: &[Event]) {
        let size = std::mem::size_of_val(events);
        let dst = self.checked(offset, size, 8);
        // SAFETY: dst is valid for `size` bytes and 8-aligned (checked); Event is
        // plain data with no padding; no overlap with a private slice.
        unsafe { std::ptr::copy_nonoverlapping(events.as_ptr().cast::<u8>(), dst, size) };
    }
}

/// Allocates the blocks of the file's first `size` bytes. A mapping of a
/// sparse file needs a block the first time each page is written, and a write
/// that finds the disk (or tmpfs) full is a SIGBUS that ends the process; with
/// the blocks reserved, a full disk is an error here, at creation.
pub(crate) fn reserve_blocks(file: &File, size: u64) -> std::io::Result<()> {
    let len =
        libc::off_t::try_from(size).map_err(|_| std::io::Error::from(ErrorKind::InvalidInput))?;
    loop {
        // SAFETY: the descriptor is open for the call; posix_fallocate only
        // reads its integer arguments.
        let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) };
        match rc {
            0 => return Ok(()),
            libc::EINTR => continue,
            errno => return Err(std::io::Error::from_raw_os_error(errno)),
        }
    }
}
