//! Every ring-file layout NIXL has shipped (ring versions 1–4), and the trailer
//! this project appends after the last slot. This module is the one definition
//! of them: the writer, the readers, the benchmarks and the tests use it.
//!
//! ```text
//! offset 0                    header (40 bytes, the same in every version)
//! offset 40                   capacity × slot_size event slots (the slot depends on the layout)
//! offset 40 + slot·capacity   trailer (this project's; NIXL's readers never map it)
//! ```
//!
//! All integers are little-endian. Positions are slot indices in `[0, capacity)`;
//! the ring is empty when `read_pos == write_pos` and full when
//! `(write_pos + 1) & mask == read_pos`, so it holds at most `capacity − 1` events.
//!
//! | layout | version | slot | fields | written by |
//! | --- | --- | --- | --- | --- |
//! | [`V1`] | 1 | 56 | timestamp, category, name, value | NIXL 1.0.x |
//! | [`V2_NAMED`] | 2 | 48 | category, name, value | NIXL 1.1.x |
//! | [`V2_TYPED`] | 2 | 16 | category, event type (20 types), value | NIXL 1.2.x |
//! | [`V3`] | 3 | 16 | event type (20 types), value | NIXL 1.3.x |
//! | [`V4`] | 4 | 16 | event type (21 types), value | NIXL 1.4.x, 1.5.x |
//!
//! These are the layouts the releases published on PyPI write (checked on
//! files the real releases wrote and read); NIXL's public source tags differ.
//! The two layouts of version 2 are told apart by the file size (see [`detect`]).

use core::mem::offset_of;

use crate::event::{Event, EVENT_NAME_CAPACITY};
use crate::names;

/// The ring version of the layout this crate writes by default ([`V1`]).
pub const RING_VERSION: i32 = 1;

/// Size of the header in bytes (every version).
pub const HEADER_SIZE: usize = 40;
/// Size of one version-1 event slot in bytes.
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

/// Which field identifies the event in a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKey {
    /// A NUL-terminated name of [`EVENT_NAME_CAPACITY`] bytes at this offset.
    Name(usize),
    /// A u32 event type at this offset, a number into [`RingLayout::event_types`].
    Type(usize),
}

/// Where each field of an event sits in one slot (offsets from the slot's start).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotLayout {
    /// Bytes per slot.
    pub size: usize,
    /// `timestamp_us` (u64), in versions that carry one.
    pub timestamp: Option<usize>,
    /// `category` (i32), in versions that carry one.
    pub category: Option<usize>,
    /// The name or the event type.
    pub key: EventKey,
    /// `value` (u64).
    pub value: usize,
}

/// One ring layout: a header version number and the slots that go with it.
#[derive(Debug, PartialEq, Eq)]
pub struct RingLayout {
    /// A short name for messages and docs (`v1`, `v2-named`, `v2`, `v3`, `v4`).
    pub name: &'static str,
    /// The header's `version` (and `expected_version`).
    pub version: i32,
    /// The slot.
    pub slot: SlotLayout,
    /// Event type number → name, for layouts whose slots carry a type; empty
    /// for layouts that store names.
    pub event_types: &'static [&'static str],
    /// The NIXL releases that write this layout.
    pub releases: &'static str,
}

macro_rules! event_types {
    ($($status:literal),*) => {
        [
            names::TX_BYTES,
            names::RX_BYTES,
            names::TX_REQUESTS,
            names::RX_REQUESTS,
            names::MEMORY_REGISTERED,
            names::MEMORY_DEREGISTERED,
            names::XFER_TIME,
            names::XFER_POST_TIME,
            $(concat!("agent_err_", $status),)*
            names::EVENTS_DROPPED,
        ]
    };
}

/// The event names of NIXL's event-type enumeration, by number. Versions 2
/// and 3 know the first 20, version 4 all 21. Built from the built-in names
/// ([`names`]) and NIXL's error statuses ([`names::ERROR_STATUSES`]: types
/// 8–19 are `agent_err_<status>`).
pub const EVENT_TYPES: [&str; 21] = names::with_error_statuses!(event_types);

/// Prefix of the names readers give event types a layout's table lacks:
/// `unknown_event_<n>`.
pub const UNKNOWN_EVENT_PREFIX: &str = "unknown_event_";

/// Version 1 (NIXL 1.0.x): timestamp, category, 32-byte name, value; 56-byte slots.
pub const V1: RingLayout = RingLayout {
    name: "v1",
    version: 1,
    // The version-1 slot is the ABI's Event: its offsets are Event's.
    slot: SlotLayout {
        size: Event::SIZE,
        timestamp: Some(offset_of!(Event, timestamp_us)),
        category: Some(offset_of!(Event, category)),
        key: EventKey::Name(offset_of!(Event, event_name)),
        value: offset_of!(Event, value),
    },
    event_types: &[],
    releases: "NIXL 1.0.x",
};

/// Version 2 with names (NIXL 1.1.x): category, 32-byte name, 4 bytes of
/// padding, value; 48-byte slots.
pub const V2_NAMED: RingLayout = RingLayout {
    name: "v2-named",
    version: 2,
    slot: SlotLayout {
        size: 48,
        timestamp: None,
        category: Some(0),
        key: EventKey::Name(4),
        value: 40,
    },
    event_types: &[],
    releases: "NIXL 1.1.x",
};

/// Version 2 with event types (NIXL 1.2.x): category, u32 type, value;
/// 16-byte slots.
pub const V2_TYPED: RingLayout = RingLayout {
    name: "v2-typed",
    version: 2,
    slot: SlotLayout {
        size: 16,
        timestamp: None,
        category: Some(0),
        key: EventKey::Type(4),
        value: 8,
    },
    event_types: EVENT_TYPES.split_at(20).0,
    releases: "NIXL 1.2.x",
};

/// Version 3 (NIXL 1.3.x): u32 type, 4 bytes of padding (NIXL leaves it
/// uninitialised; readers ignore it), value; 16-byte slots.
pub const V3: RingLayout = RingLayout {
    name: "v3",
    version: 3,
    slot: SlotLayout {
        size: 16,
        timestamp: None,
        category: None,
        key: EventKey::Type(0),
        value: 8,
    },
    event_types: EVENT_TYPES.split_at(20).0,
    releases: "NIXL 1.3.x",
};

/// Version 4 (NIXL 1.4.x, 1.5.x): as version 3, with the event type
/// `agent_telemetry_events_dropped` (20) added.
pub const V4: RingLayout = RingLayout {
    name: "v4",
    version: 4,
    slot: SlotLayout {
        size: 16,
        timestamp: None,
        category: None,
        key: EventKey::Type(0),
        value: 8,
    },
    event_types: &EVENT_TYPES,
    releases: "NIXL 1.4.x, 1.5.x",
};

/// Every layout, in version order. Where one version has two layouts, the
/// one written for the bare version number comes first.
pub const LAYOUTS: [&RingLayout; 5] = [&V1, &V2_NAMED, &V2_TYPED, &V3, &V4];

/// The spellings [`RingLayout::from_selector`] accepts, for messages.
pub const SELECTORS: &str = "1, 2 (= 2-named), 2-named, 2-typed, 3 or 4";

/// The ring versions there are layouts for.
pub const VERSIONS: [i32; 4] = [1, 2, 3, 4];

impl RingLayout {
    /// The layout this project writes for ring version `version`, `None` for a
    /// version without one. Version 2 is [`V2_NAMED`] (NIXL 1.1: names and
    /// categories); [`V2_TYPED`] is chosen by name ([`RingLayout::from_selector`]).
    pub fn for_version(version: i32) -> Option<&'static RingLayout> {
        LAYOUTS.into_iter().find(|l| l.version == version)
    }

    /// The layout a selector names: a version number (`1`…`4`, where `2` is
    /// [`V2_NAMED`]) or a layout name (`v1`, `2-named`, `v2-typed`…; the `v`
    /// is optional, case is ignored). `None` for anything else.
    pub fn from_selector(text: &str) -> Option<&'static RingLayout> {
        let text = text.trim();
        let bare = text
            .strip_prefix(['v', 'V'])
            .unwrap_or(text)
            .to_ascii_lowercase();
        if let Ok(version) = bare.parse::<i32>() {
            return Self::for_version(version);
        }
        LAYOUTS
            .into_iter()
            .find(|l| l.name.strip_prefix('v') == Some(bare.as_str()))
    }

    /// Bytes of header and slots, `None` on overflow. NIXL's readers need this
    /// much; the trailer, when there is one, starts here.
    pub const fn data_size(&self, capacity: u64) -> Option<u64> {
        match capacity.checked_mul(self.slot.size as u64) {
            Some(slots) => slots.checked_add(HEADER_SIZE as u64),
            None => None,
        }
    }

    /// Size of a file written by this project: header, slots and trailer.
    pub const fn file_size_with_trailer(&self, capacity: u64) -> Option<u64> {
        match self.data_size(capacity) {
            Some(t) => t.checked_add(TRAILER_SIZE as u64),
            None => None,
        }
    }

    /// Offset of slot `index`.
    pub const fn slot_offset(&self, index: u64) -> u64 {
        HEADER_SIZE as u64 + index * self.slot.size as u64
    }

    /// Whether slots carry a timestamp.
    pub const fn has_timestamp(&self) -> bool {
        self.slot.timestamp.is_some()
    }

    /// Whether slots carry a category.
    pub const fn has_category(&self) -> bool {
        self.slot.category.is_some()
    }

    /// The name of event type `event_type` in this layout's table.
    pub fn event_type_name(&self, event_type: u32) -> Option<&'static str> {
        self.event_types.get(event_type as usize).copied()
    }

    /// The event type an event called `name` is written as, `None` when this
    /// layout stores names or its table has no such event. A name from the
    /// table maps to its number; an error status name `NIXL_ERR_<X>` (the
    /// name this project records errors under) maps to `agent_err_<x>`.
    pub fn event_type_of(&self, name: &[u8]) -> Option<u32> {
        let table_index = |wanted: &dyn Fn(&str) -> bool| {
            self.event_types
                .iter()
                .position(|entry| wanted(entry))
                .map(|i| i as u32)
        };
        if let Some(t) = table_index(&|entry| entry.as_bytes() == name) {
            return Some(t);
        }
        let status = name.strip_prefix(names::ERROR_PREFIX.as_bytes())?;
        table_index(&|entry| {
            entry
                .as_bytes()
                .strip_prefix(b"agent_err_")
                .is_some_and(|suffix| suffix.eq_ignore_ascii_case(status))
        })
    }
}

/// Why a header and file size match no layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DetectError {
    /// No layout has this version.
    UnknownVersion,
    /// The version's slots do not fit in the file for this capacity (the
    /// smallest size the version's layouts need).
    TooSmall {
        /// Bytes the smallest layout of the version needs.
        needed: u64,
    },
    /// The capacity times the slot size overflows.
    Overflow,
    /// The version has several layouts and the file's size is that of none
    /// of them (neither exactly nor followed by this project's trailer).
    Ambiguous {
        /// The sizes the version's layouts would have, in [`LAYOUTS`] order.
        sizes: [u64; 2],
    },
}

/// The layout of a file whose header says `version` and `capacity` and
/// which is `file_size` bytes long. `trailer_at(offset)` says whether this
/// project's trailer magic sits at `offset` (the caller reads the file).
///
/// A version with one layout is that layout when the file holds its slots
/// (a larger file is fine: NIXL's readers accept one). Version 2 has two
/// (48-byte slots, NIXL 1.1; 16-byte slots, NIXL 1.2), which NIXL itself
/// cannot tell apart: the one whose slots end exactly at the file's end
/// (NIXL's files) or at this project's trailer is the file's layout; any
/// other size is [`DetectError::Ambiguous`].
pub fn detect(
    version: i32,
    capacity: u64,
    file_size: u64,
    trailer_at: impl Fn(u64) -> bool,
) -> Result<&'static RingLayout, DetectError> {
    let mut candidates = LAYOUTS.into_iter().filter(|l| l.version == version);
    let Some(first) = candidates.next() else {
        return Err(DetectError::UnknownVersion);
    };
    let Some(first_end) = first.data_size(capacity) else {
        return Err(DetectError::Overflow);
    };
    let Some(second) = candidates.next() else {
        return if first_end <= file_size {
            Ok(first)
        } else {
            Err(DetectError::TooSmall { needed: first_end })
        };
    };
    let second_end = second.data_size(capacity);
    for (layout, end) in [(first, Some(first_end)), (second, second_end)] {
        if let Some(end) = end {
            if end == file_size || (end < file_size && trailer_at(end)) {
                return Ok(layout);
            }
        }
    }
    let smallest = second_end.map_or(first_end, |e| e.min(first_end));
    if smallest > file_size {
        return Err(DetectError::TooSmall { needed: smallest });
    }
    Err(DetectError::Ambiguous {
        sizes: [first_end, second_end.unwrap_or(u64::MAX)],
    })
}

/// The trailer's first 8 bytes.
pub const TRAILER_MAGIC: [u8; 8] = *b"NXTLTRL\0";
/// The trailer version this crate writes (2 added `dropped_format`).
pub const TRAILER_VERSION: u32 = 2;
/// The oldest trailer version readers accept.
pub const TRAILER_VERSION_MIN: u32 = 1;
/// Size of the trailer this crate writes, in bytes.
pub const TRAILER_SIZE: usize = 72;
/// Size of a version-1 trailer (no `dropped_format`), the smallest accepted.
pub const TRAILER_SIZE_MIN: usize = 64;

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
    /// `dropped_format` (u64, trailer version ≥ 2): events lost because the
    /// ring's version has no event type for them.
    pub const DROPPED_FORMAT: usize = 64;
    /// Flag bit: the producer shut down cleanly; nothing more will be written.
    pub const FLAG_CLOSED: u32 = 1;
    /// Flag bit: the ring is stale: its producer stopped with events unread and
    /// a new producer of the same agent, unable to continue this ring (another
    /// layout or capacity), moved it aside (`<agent>.stale-<µs>`); nothing more
    /// will be written to it.
    pub const FLAG_STALE: u32 = 2;
}

/// Offset of the trailer in a version-1 ring of `capacity` slots, `None` on overflow.
pub const fn trailer_offset(capacity: u64) -> Option<u64> {
    V1.data_size(capacity)
}

/// Bytes a version-1 reader needs: header and slots.
pub const fn v1_size(capacity: u64) -> Option<u64> {
    V1.data_size(capacity)
}

/// Size of a version-1 file written by this project: header, slots and trailer.
pub const fn file_size_with_trailer(capacity: u64) -> Option<u64> {
    V1.file_size_with_trailer(capacity)
}

/// Offset of version-1 slot `index`.
pub const fn slot_offset(index: u64) -> u64 {
    V1.slot_offset(index)
}

const _: () = {
    // Every field of every slot lies inside the slot, naturally aligned.
    let mut i = 0;
    while i < LAYOUTS.len() {
        let s = LAYOUTS[i].slot;
        assert!(s.size.is_multiple_of(8) && s.value.is_multiple_of(8) && s.value + 8 <= s.size);
        if let Some(t) = s.timestamp {
            assert!(t.is_multiple_of(8) && t + 8 <= s.size);
        }
        if let Some(c) = s.category {
            assert!(c.is_multiple_of(4) && c + 4 <= s.size);
        }
        match s.key {
            EventKey::Name(n) => assert!(n + EVENT_NAME_CAPACITY <= s.size),
            EventKey::Type(t) => assert!(t.is_multiple_of(4) && t + 4 <= s.size),
        }
        i += 1;
    }
    assert!(TRAILER_SIZE >= trailer::DROPPED_FORMAT + 8);
    assert!(TRAILER_SIZE_MIN == trailer::LAST_FLUSH_US + 8);
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_match_the_fixture_files() {
        assert_eq!(v1_size(8), Some(488));
        assert_eq!(v1_size(4), Some(264));
        assert_eq!(v1_size(16), Some(936));
        assert_eq!(file_size_with_trailer(4), Some(40 + 4 * 56 + 72));
        assert_eq!(v1_size(u64::MAX), None);
        assert_eq!(trailer_offset(8).unwrap() % 8, 0);
        assert_eq!(V4.data_size(8), Some(40 + 128));
    }

    #[test]
    fn versions_have_their_writers_layout() {
        for v in VERSIONS {
            assert_eq!(RingLayout::for_version(v).unwrap().version, v);
        }
        assert_eq!(RingLayout::for_version(2), Some(&V2_NAMED));
        assert_eq!(RingLayout::for_version(5), None);
        assert_eq!(RingLayout::for_version(0), None);
        for (text, want) in [
            ("1", &V1),
            (" 2 ", &V2_NAMED),
            ("2-named", &V2_NAMED),
            ("v2-typed", &V2_TYPED),
            ("2-TYPED", &V2_TYPED),
            ("3", &V3),
            ("v4", &V4),
        ] {
            assert_eq!(RingLayout::from_selector(text), Some(want), "{text}");
        }
        for bad in ["", "0", "5", "2-", "typed", "v", "1.5", "-1"] {
            assert_eq!(RingLayout::from_selector(bad), None, "{bad}");
        }
    }

    #[test]
    fn event_types_map_both_ways() {
        assert_eq!(V4.event_type_of(b"agent_tx_bytes"), Some(0));
        assert_eq!(
            V4.event_type_of(b"agent_telemetry_events_dropped"),
            Some(20)
        );
        assert_eq!(V3.event_type_of(b"agent_telemetry_events_dropped"), None);
        assert_eq!(V2_TYPED.event_type_of(b"NIXL_ERR_BACKEND"), Some(10));
        assert_eq!(V2_TYPED.event_type_of(b"NIXL_ERR_NO_TELEMETRY"), Some(19));
        assert_eq!(V2_TYPED.event_type_of(b"NIXL_ERR_"), None);
        assert_eq!(V2_TYPED.event_type_of(b"ucx_rdma_writes"), None);
        assert_eq!(V1.event_type_of(b"agent_tx_bytes"), None);
        assert_eq!(V3.event_type_name(19), Some("agent_err_no_telemetry"));
        assert_eq!(V3.event_type_name(20), None);
    }

    #[test]
    fn detection_uses_version_and_size() {
        let no = |_| false;
        assert_eq!(detect(1, 8, 488, no), Ok(&V1));
        assert_eq!(detect(4, 8, 40 + 128, no), Ok(&V4));
        assert_eq!(detect(3, 8, 40 + 128 + 72, |at| at == 168), Ok(&V3));
        // Version 2: the size says which slot.
        assert_eq!(detect(2, 8, 40 + 8 * 16, no), Ok(&V2_TYPED));
        assert_eq!(detect(2, 8, 40 + 8 * 48, no), Ok(&V2_NAMED));
        assert_eq!(
            detect(2, 8, 40 + 8 * 16 + 72, |at| at == 168),
            Ok(&V2_TYPED)
        );
        // Capacity 2: 40 + 2·16 + 72 > 40 + 2·48; the trailer decides.
        assert_eq!(detect(2, 2, 40 + 32 + 72, |at| at == 72), Ok(&V2_TYPED));
        assert_eq!(detect(2, 2, 40 + 96 + 72, |at| at == 136), Ok(&V2_NAMED));
        assert_eq!(
            detect(2, 8, 100, no),
            Err(DetectError::TooSmall { needed: 168 })
        );
        assert_eq!(
            detect(2, 8, 200, no),
            Err(DetectError::Ambiguous {
                sizes: [40 + 8 * 48, 40 + 8 * 16]
            })
        );
        assert_eq!(detect(5, 8, 1000, no), Err(DetectError::UnknownVersion));
        assert_eq!(detect(4, u64::MAX, 1000, no), Err(DetectError::Overflow));
    }
}
