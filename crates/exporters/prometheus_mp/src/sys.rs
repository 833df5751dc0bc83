//! The crate's only unsafe code: the writer's shared mapping of its store.
//!
//! Readers never map stores: they copy them with `pread`, so a file that
//! another process truncates cannot fault the reader.

#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicU32, AtomicU64};

use memmap2::MmapMut;

/// A store file mapped shared and writable by the process that owns it.
///
/// Numbers are written through atomics (the owner reads them from another
/// process at any time); texts are written with plain copies, only where no
/// reader looks yet (before the store has a name, or before the series count
/// that makes an entry visible is raised).
#[derive(Debug)]
pub(crate) struct StoreMapping {
    map: MmapMut,
}

impl StoreMapping {
    /// Maps the first `len` bytes of `file` (already that long).
    pub(crate) fn new(file: &File, len: usize) -> io::Result<StoreMapping> {
        // SAFETY: the file is this process's own store: created by it, 0600,
        // locked for the process's life, never truncated or written through
        // any other path. Other processes only read it.
        let map = unsafe { memmap2::MmapOptions::new().len(len).map_mut(file) }?;
        Ok(StoreMapping { map })
    }

    fn checked(&self, offset: usize, size: usize) -> *mut u8 {
        assert!(
            offset.is_multiple_of(size) && offset + size <= self.map.len(),
            "store offset {offset} (size {size}) out of bounds or unaligned"
        );
        // The mapping is page-aligned, so an aligned offset is an aligned address.
        self.map.as_ptr().wrapping_add(offset).cast_mut()
    }

    /// The u64 at `offset` as an atomic.
    pub(crate) fn u64_at(&self, offset: usize) -> &AtomicU64 {
        let ptr = self.checked(offset, 8);
        // SAFETY: in bounds and 8-aligned (checked); the mapping lives as long
        // as `self`; every access to this word from this process is atomic
        // (texts never overlap numeric fields: see layout.rs).
        unsafe { AtomicU64::from_ptr(ptr.cast()) }
    }

    /// The `n` consecutive u64 from `offset` as atomics.
    pub(crate) fn u64_slice(&self, offset: usize, n: usize) -> &[AtomicU64] {
        let ptr = self.checked(offset, 8);
        assert!(
            offset + 8 * n <= self.map.len(),
            "store words {offset}..+{n} out of bounds"
        );
        // SAFETY: in bounds and 8-aligned (checked); AtomicU64 has the size
        // and alignment of u64; the mapping lives as long as `self`; every
        // access to these words from this process is atomic.
        unsafe { std::slice::from_raw_parts(ptr.cast::<AtomicU64>(), n) }
    }

    /// The u32 at `offset` as an atomic.
    pub(crate) fn u32_at(&self, offset: usize) -> &AtomicU32 {
        let ptr = self.checked(offset, 4);
        // SAFETY: as for `u64_at`, with 4-byte alignment.
        unsafe { AtomicU32::from_ptr(ptr.cast()) }
    }

    /// Copies `bytes` to `offset`.
    pub(crate) fn write_bytes(&self, offset: usize, bytes: &[u8]) {
        assert!(
            offset + bytes.len() <= self.map.len(),
            "store text at {offset} (length {}) out of bounds",
            bytes.len()
        );
        let dst = self.map.as_ptr().wrapping_add(offset).cast_mut();
        // SAFETY: in bounds (checked); texts are only written into text fields,
        // which this process never accesses as atomics, and only by the one
        // thread that owns the store writer (`&self` methods are not called
        // concurrently: the writer is not `Sync`-shared).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn atomics_and_texts_land_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap();
        file.set_len(64).unwrap();
        let map = StoreMapping::new(&file, 64).unwrap();
        map.u64_at(8)
            .store(0x0102_0304_0506_0708, Ordering::Release);
        map.u32_at(4).store(7, Ordering::Release);
        map.u64_slice(24, 2)[1].store(9, Ordering::Release);
        map.write_bytes(16, b"abc");
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes[8..16], 0x0102_0304_0506_0708u64.to_ne_bytes());
        assert_eq!(bytes[4..8], 7u32.to_ne_bytes());
        assert_eq!(bytes[32..40], 9u64.to_ne_bytes());
        assert_eq!(&bytes[16..19], b"abc");
    }

    #[test]
    #[should_panic(expected = "out of bounds or unaligned")]
    fn unaligned_offsets_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = tempfile::tempfile_in(dir.path()).unwrap();
        file.set_len(64).unwrap();
        let map = StoreMapping::new(&file, 64).unwrap();
        map.u64_at(4);
    }
}
