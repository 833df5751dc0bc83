//! A version-aware event as read from a ring: every field a ring version may
//! lack is an `Option`, never an invented value.

use std::borrow::Cow;
use std::mem::offset_of;

use nixl_telemetry_abi::ring::{EventKey, RingLayout, UNKNOWN_EVENT_PREFIX};
use nixl_telemetry_abi::{Event, EVENT_NAME_CAPACITY};

/// One event read from a ring of any version.
///
/// Versions 2–4 carry no timestamp (and 3–4 no category): those fields are
/// `None`. In versions that store an event type instead of a name, `name`
/// holds the name the layout's table gives the type, or
/// `unknown_event_<n>` for a number the table lacks, NUL-terminated like a
/// stored name; `event_type` keeps the number.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct RingRecord {
    /// Microseconds since the Unix epoch, in versions that carry it (1).
    pub timestamp_us: Option<u64>,
    /// The category number, in versions that carry it (1, 2).
    pub category: Option<i32>,
    /// The event type number, in versions that carry one (2–4).
    pub event_type: Option<u32>,
    /// The name field: as stored (versions 1 and 2-named; a malformed slot
    /// may lack the NUL), or the type's name.
    pub name: [u8; EVENT_NAME_CAPACITY],
    /// The per-operation reading.
    pub value: u64,
}

impl RingRecord {
    /// The record of a version-1 event.
    pub fn from_event(event: &Event) -> RingRecord {
        RingRecord {
            timestamp_us: Some(event.timestamp_us),
            category: Some(event.category),
            event_type: None,
            name: event.event_name,
            value: event.value,
        }
    }

    /// Decodes one version-1 slot (the fixed offsets of [`Event`]; the
    /// padding is ignored).
    #[inline]
    pub fn from_v1_slot(slot: &[u8; Event::SIZE]) -> RingRecord {
        const TIMESTAMP: usize = offset_of!(Event, timestamp_us);
        const CATEGORY: usize = offset_of!(Event, category);
        const NAME: usize = offset_of!(Event, event_name);
        const VALUE: usize = offset_of!(Event, value);
        let u64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&slot[at..at + 8]);
            u64::from_le_bytes(b)
        };
        let mut category = [0u8; 4];
        category.copy_from_slice(&slot[CATEGORY..CATEGORY + 4]);
        let mut name = [0u8; EVENT_NAME_CAPACITY];
        name.copy_from_slice(&slot[NAME..NAME + EVENT_NAME_CAPACITY]);
        RingRecord {
            timestamp_us: Some(u64_at(TIMESTAMP)),
            category: Some(i32::from_le_bytes(category)),
            event_type: None,
            name,
            value: u64_at(VALUE),
        }
    }

    /// A record with no fields set (for [`RingRecord::fill_from_v1_slot`]).
    pub const EMPTY: RingRecord = RingRecord {
        timestamp_us: None,
        category: None,
        event_type: None,
        name: [0; EVENT_NAME_CAPACITY],
        value: 0,
    };

    /// Sets `self` to the record of one version-1 slot, as
    /// [`RingRecord::from_v1_slot`] returns it, writing each field in place.
    #[inline]
    pub fn fill_from_v1_slot(&mut self, slot: &[u8; Event::SIZE]) {
        const TIMESTAMP: usize = offset_of!(Event, timestamp_us);
        const CATEGORY: usize = offset_of!(Event, category);
        const NAME: usize = offset_of!(Event, event_name);
        const VALUE: usize = offset_of!(Event, value);
        let u64_at = |at: usize| u64::from_le_bytes(slot[at..at + 8].try_into().expect("8 bytes"));
        self.timestamp_us = Some(u64_at(TIMESTAMP));
        self.category = Some(i32::from_le_bytes(
            slot[CATEGORY..CATEGORY + 4].try_into().expect("4 bytes"),
        ));
        self.event_type = None;
        self.name
            .copy_from_slice(&slot[NAME..NAME + EVENT_NAME_CAPACITY]);
        self.value = u64_at(VALUE);
    }

    /// Decodes one slot of `layout` (`slot.len() == layout.slot.size`).
    pub fn decode(layout: &RingLayout, slot: &[u8]) -> RingRecord {
        let s = &layout.slot;
        let u64_at = |at: usize| u64::from_le_bytes(slot[at..at + 8].try_into().expect("8 bytes"));
        let u32_at = |at: usize| u32::from_le_bytes(slot[at..at + 4].try_into().expect("4 bytes"));
        let (name, event_type) = match s.key {
            EventKey::Name(at) => {
                let mut name = [0u8; EVENT_NAME_CAPACITY];
                name.copy_from_slice(&slot[at..at + EVENT_NAME_CAPACITY]);
                (name, None)
            }
            EventKey::Type(at) => {
                let t = u32_at(at);
                (event_type_name_field(layout, t), Some(t))
            }
        };
        RingRecord {
            timestamp_us: s.timestamp.map(u64_at),
            category: s.category.map(|at| u32_at(at) as i32),
            event_type,
            name,
            value: u64_at(s.value),
        }
    }

    /// Whether the name field holds a NUL terminator, as every well-formed slot does.
    pub fn name_is_terminated(&self) -> bool {
        self.name.contains(&0)
    }

    /// The name's bytes up to the first NUL (all 32 if there is none).
    pub fn name_bytes(&self) -> &[u8] {
        let end = self
            .name
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(EVENT_NAME_CAPACITY);
        &self.name[..end]
    }

    /// The name as text; invalid UTF-8 is replaced with U+FFFD.
    pub fn name(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(self.name_bytes())
    }
}

/// What identifies a slot's event, as stored: its name field (versions 1 and
/// 2-named) or its event type (2-typed, 3, 4).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SlotKey<'a> {
    /// The stored name field (a malformed slot may lack the NUL).
    Name(&'a [u8; EVENT_NAME_CAPACITY]),
    /// The stored event type number.
    Type(u32),
}

/// One slot's fields read in place, from slot bytes as
/// [`RingReader::peek_slot_bytes`](super::RingReader::peek_slot_bytes) gives
/// them: the fields of [`RingRecord::decode`] without copying the slot.
#[derive(Clone, Copy, Debug)]
pub struct SlotView<'a> {
    layout: &'a RingLayout,
    slot: &'a [u8],
}

impl<'a> SlotView<'a> {
    /// The view of one slot of `layout`. Panics unless `slot` is one slot
    /// (`layout.slot.size` bytes).
    #[inline]
    pub fn new(layout: &'a RingLayout, slot: &'a [u8]) -> SlotView<'a> {
        assert_eq!(slot.len(), layout.slot.size, "one slot of {}", layout.name);
        SlotView { layout, slot }
    }

    /// The views of the whole slots of `bytes`, in order.
    #[inline]
    pub fn all(
        layout: &'a RingLayout,
        bytes: &'a [u8],
    ) -> impl ExactSizeIterator<Item = SlotView<'a>> + 'a {
        bytes
            .chunks_exact(layout.slot.size)
            .map(move |slot| SlotView { layout, slot })
    }

    #[inline]
    fn u64_at(&self, at: usize) -> u64 {
        u64::from_le_bytes(self.slot[at..at + 8].try_into().expect("8 bytes"))
    }

    #[inline]
    fn u32_at(&self, at: usize) -> u32 {
        u32::from_le_bytes(self.slot[at..at + 4].try_into().expect("4 bytes"))
    }

    /// Microseconds since the Unix epoch, in versions that carry it (1).
    #[inline]
    pub fn timestamp_us(&self) -> Option<u64> {
        self.layout.slot.timestamp.map(|at| self.u64_at(at))
    }

    /// The category number, in versions that carry it (1, 2).
    #[inline]
    pub fn category(&self) -> Option<i32> {
        self.layout.slot.category.map(|at| self.u32_at(at) as i32)
    }

    /// The stored name field or event type.
    #[inline]
    pub fn key(&self) -> SlotKey<'a> {
        match self.layout.slot.key {
            EventKey::Name(at) => SlotKey::Name(
                self.slot[at..at + EVENT_NAME_CAPACITY]
                    .try_into()
                    .expect("32 bytes"),
            ),
            EventKey::Type(at) => SlotKey::Type(self.u32_at(at)),
        }
    }

    /// The per-operation reading.
    #[inline]
    pub fn value(&self) -> u64 {
        self.u64_at(self.layout.slot.value)
    }

    /// The slot as a record ([`RingRecord::decode`]).
    pub fn record(&self) -> RingRecord {
        RingRecord::decode(self.layout, self.slot)
    }
}

/// The name field [`RingRecord`] gives event type `t` of `layout`: the
/// table's name, or `unknown_event_<t>`, NUL-terminated.
pub fn event_type_name_field(layout: &RingLayout, t: u32) -> [u8; EVENT_NAME_CAPACITY] {
    let mut out = [0u8; EVENT_NAME_CAPACITY];
    match layout.event_type_name(t) {
        Some(name) => out[..name.len()].copy_from_slice(name.as_bytes()),
        None => {
            // "unknown_event_" + at most 10 digits: 24 bytes, always fits.
            let mut digits = [0u8; 10];
            let mut n = t;
            let mut len = 0;
            loop {
                digits[len] = b'0' + (n % 10) as u8;
                len += 1;
                n /= 10;
                if n == 0 {
                    break;
                }
            }
            let prefix = UNKNOWN_EVENT_PREFIX.len();
            out[..prefix].copy_from_slice(UNKNOWN_EVENT_PREFIX.as_bytes());
            for i in 0..len {
                out[prefix + i] = digits[len - 1 - i];
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use nixl_telemetry_abi::ring::{V1, V2_NAMED, V2_TYPED, V3, V4};
    use nixl_telemetry_abi::Category;

    #[test]
    fn every_layout_decodes_its_fields() {
        let e = Event::new(7, Category::TRANSFER, "agent_tx_bytes", 99);
        let r = RingRecord::decode(&V1, &e.to_bytes());
        assert_eq!(r, RingRecord::from_event(&e));
        assert_eq!(r, RingRecord::from_v1_slot(&e.to_bytes()));
        let mut filled = RingRecord::decode(&V4, &[0xFF; 16]);
        filled.fill_from_v1_slot(&e.to_bytes());
        assert_eq!(filled, r, "filled in place over another record");
        let mut raw = [0u8; Event::SIZE];
        for (i, b) in raw.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37).wrapping_add(11);
        }
        let mut filled = RingRecord::EMPTY;
        filled.fill_from_v1_slot(&raw);
        assert_eq!(
            filled,
            RingRecord::from_v1_slot(&raw),
            "every byte where it belongs"
        );

        let mut named = [0u8; 48];
        named[0..4].copy_from_slice(&3i32.to_le_bytes());
        named[4..9].copy_from_slice(b"ucx_x");
        named[40..48].copy_from_slice(&5u64.to_le_bytes());
        let r = RingRecord::decode(&V2_NAMED, &named);
        assert_eq!(
            (r.timestamp_us, r.category, r.event_type, r.value),
            (None, Some(3), None, 5)
        );
        assert_eq!(r.name(), "ucx_x");

        let mut typed = [0u8; 16];
        typed[0..4].copy_from_slice(&(-2i32).to_le_bytes());
        typed[4..8].copy_from_slice(&6u32.to_le_bytes());
        typed[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        let r = RingRecord::decode(&V2_TYPED, &typed);
        assert_eq!(
            (r.category, r.event_type, r.value),
            (Some(-2), Some(6), u64::MAX)
        );
        assert_eq!(r.name(), "agent_xfer_time");

        let mut v4 = [0u8; 16];
        v4[0..4].copy_from_slice(&20u32.to_le_bytes());
        v4[4..8].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]); // padding, ignored
        let r = RingRecord::decode(&V4, &v4);
        assert_eq!((r.timestamp_us, r.category), (None, None));
        assert_eq!(r.name(), "agent_telemetry_events_dropped");
        assert_eq!(RingRecord::decode(&V3, &v4).name(), "unknown_event_20");
        v4[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            RingRecord::decode(&V4, &v4).name(),
            "unknown_event_4294967295"
        );
        v4[0..4].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(RingRecord::decode(&V3, &v4).name(), "agent_tx_bytes");
    }

    /// A slot of `layout` whose every byte differs.
    fn patterned_slot(layout: &RingLayout, seed: u8) -> Vec<u8> {
        (0..layout.slot.size)
            .map(|i| (i as u8).wrapping_mul(37).wrapping_add(seed))
            .collect()
    }

    #[test]
    fn slot_views_read_what_records_decode() {
        for layout in nixl_telemetry_abi::ring::LAYOUTS {
            let mut bytes = Vec::new();
            for seed in 0..4u8 {
                bytes.extend(patterned_slot(layout, seed));
            }
            // A type-keyed slot naming a known type too.
            if let EventKey::Type(at) = layout.slot.key {
                bytes[at..at + 4].copy_from_slice(&1u32.to_le_bytes());
            }
            let views: Vec<SlotView<'_>> = SlotView::all(layout, &bytes).collect();
            assert_eq!(views.len(), 4, "{}", layout.name);
            for (view, slot) in views.iter().zip(bytes.chunks_exact(layout.slot.size)) {
                let record = RingRecord::decode(layout, slot);
                assert_eq!(view.record(), record, "{}", layout.name);
                assert_eq!(view.timestamp_us(), record.timestamp_us, "{}", layout.name);
                assert_eq!(view.category(), record.category, "{}", layout.name);
                assert_eq!(view.value(), record.value, "{}", layout.name);
                match view.key() {
                    SlotKey::Name(name) => {
                        assert_eq!(*name, record.name, "{}", layout.name);
                        assert_eq!(record.event_type, None);
                    }
                    SlotKey::Type(t) => {
                        assert_eq!(Some(t), record.event_type, "{}", layout.name);
                        assert_eq!(
                            event_type_name_field(layout, t),
                            record.name,
                            "{}",
                            layout.name
                        );
                    }
                }
                assert_eq!(SlotView::new(layout, slot).record(), record);
            }
        }
    }

    #[test]
    #[should_panic(expected = "one slot of v1")]
    fn a_slot_view_of_the_wrong_size_is_refused() {
        SlotView::new(&V1, &[0; 16]);
    }
}
