//! Version-1 ring-file layout, byte-compatible with NIXL's version-1 readers,
//! and the trailer this project appends after the last slot.
//!
//! ```text
//! offset 0                 header (40 bytes)
//! offset 40                capacity × 56-byte event slots
//! offset 40 + 56·capacity  trailer (64 bytes; v1 readers never map it)
//! ```
//!
//! All integers are little-endian. Positions are slot indices in `[0, capacity)`;
//! the ring is empty when `read_pos == write_pos` and full when
//! `(write_pos + 1) & mask == read_pos`, so it holds at most `capacity − 1` events.

use crate::event::Event;

/// The only ring version this crate reads and writes.
pub const RING_VERSION: i32 = 1;

/// Size of the header in bytes.
pub const HEADER_SIZE: usize = 40;
/// Size of one event slot in bytes.
pub const SLOT_SIZE: usize = Event::SIZE;

/// Offset of `write_pos` (u64): next slot the producer writes.
pub const WRITE_POS_OFFSET: usize = 0;
/// Offset of `read_pos` (u64): next slot the consumer reads.
pub const READ_POS_OFFSET: usize = 8;
/// Offset of `version` (i32).
pub const VERSION_OFFSET: usize = 16;
/// Offset of `expected_version` (i32).
pub const EXPECTED_VERSION_OFFSET: usize = 20;
/// Offset of `capacity` (u64).
pub const CAPACITY_OFFSET: usize = 24;
/// Offset of `mask` (u64) = capacity − 1.
pub const MASK_OFFSET: usize = 32;

/// The trailer's first 8 bytes.
pub const TRAILER_MAGIC: [u8; 8] = *b"NXTLTRL\0";
/// The trailer version this crate writes.
pub const TRAILER_VERSION: u32 = 1;
/// Size of the version-1 trailer in bytes.
pub const TRAILER_SIZE: usize = 64;

/// Trailer field offsets, relative to the trailer's start.
pub mod trailer {
    /// `magic` (8 bytes) = [`super::TRAILER_MAGIC`].
    pub const MAGIC: usize = 0;
    /// `trailer_version` (u32).
    pub const VERSION: usize = 8;
    /// `trailer_size` (u32): bytes of the trailer, magic included.
    pub const SIZE: usize = 12;
    /// `producer_pid` (u32).
    pub const PRODUCER_PID: usize = 16;
    /// `flags` (u32): see [`FLAG_CLOSED`].
    pub const FLAGS: usize = 20;
    /// `created_us` (u64): wall-clock µs when the file was created.
    pub const CREATED_US: usize = 24;
    /// `events_written` (u64): events the producer put into the ring, in total.
    pub const EVENTS_WRITTEN: usize = 32;
    /// `dropped_staging_full` (u64): events lost because a thread's staging buffer was full.
    pub const DROPPED_STAGING_FULL: usize = 40;
    /// `dropped_ring_full` (u64): events lost because the ring was full.
    pub const DROPPED_RING_FULL: usize = 48;
    /// `last_flush_us` (u64): wall-clock µs of the producer's latest flush (a heartbeat).
    pub const LAST_FLUSH_US: usize = 56;
    /// Flag bit: the producer shut down cleanly; nothing more will be written.
    pub const FLAG_CLOSED: u32 = 1;
}

/// Offset of the trailer in a ring of `capacity` slots, `None` on overflow.
pub const fn trailer_offset(capacity: u64) -> Option<u64> {
    match capacity.checked_mul(SLOT_SIZE as u64) {
        Some(slots) => slots.checked_add(HEADER_SIZE as u64),
        None => None,
    }
}

/// Bytes a version-1 reader needs: header and slots.
pub const fn v1_size(capacity: u64) -> Option<u64> {
    trailer_offset(capacity)
}

/// Size of a file written by this project: header, slots and trailer.
pub const fn file_size_with_trailer(capacity: u64) -> Option<u64> {
    match trailer_offset(capacity) {
        Some(t) => t.checked_add(TRAILER_SIZE as u64),
        None => None,
    }
}

/// Offset of slot `index`.
pub const fn slot_offset(index: u64) -> u64 {
    HEADER_SIZE as u64 + index * SLOT_SIZE as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_match_the_fixture_files() {
        assert_eq!(v1_size(8), Some(488));
        assert_eq!(v1_size(4), Some(264));
        assert_eq!(v1_size(16), Some(936));
        assert_eq!(file_size_with_trailer(4), Some(328));
        assert_eq!(v1_size(u64::MAX), None);
        assert_eq!(trailer_offset(8).unwrap() % 8, 0);
    }
}
