//! Slots of any ring layout as the events an exporter plug-in receives: the
//! 56-byte `Event` of the plug-in ABI, with every field filled the way NIXL's
//! own exporters see the event.
//!
//! * Version 1 slots are events already (their timestamp, category, name).
//! * Versions 2–4 carry no timestamp: the event is stamped when it is read.
//! * Typed layouts (2-typed, 3, 4) carry a type number: the name is the
//!   type's, the category the one NIXL 1.2 writes beside it (versions 3 and 4
//!   have none; 2-typed keeps its own), and an error type `agent_err_<x>` is
//!   the error status `NIXL_ERR_<X>`, category ERROR — the event this
//!   project's collector records for an error, so every exporter counts it
//!   under the status NIXL's Prometheus plug-in uses.
//! * A type the layout's table lacks is `unknown_event_<n>` with category 8
//!   (`NIXL_TELEMETRY_MAX`, no category): exporters count it as an event they
//!   cannot map (`agent_telemetry_unmapped_events_total`) instead of making a
//!   series of a number a hostile file may invent.

use super::layout::{EventKey, RingLayout, EVENT_TYPES};
use super::{event_type_name_field, SlotKey, SlotView};
use crate::{Category, Event};

/// The category of events whose type the ring's table lacks.
pub const UNKNOWN_TYPE_CATEGORY: Category = Category(8);

/// The category NIXL 1.2 writes beside each event type (the typed layouts
/// of versions 3 and 4 drop it).
fn category_of_type(event_type: usize) -> Category {
    match event_type {
        0..=3 => Category::TRANSFER,
        4 | 5 => Category::MEMORY,
        6 | 7 => Category::PERFORMANCE,
        8..=19 => Category::ERROR,
        _ => Category::SYSTEM,
    }
}

/// The event a known type (an index of [`EVENT_TYPES`]) becomes, timestamp
/// and value left to fill (also for the lines of a capture of a typed ring).
pub fn event_of_type(event_type: usize) -> Event {
    let name = EVENT_TYPES[event_type];
    match name.strip_prefix("agent_err_") {
        Some(status) => Event::new(
            0,
            Category::ERROR,
            &format!("NIXL_ERR_{}", status.to_ascii_uppercase()),
            0,
        ),
        None => Event::new(0, category_of_type(event_type), name, 0),
    }
}

/// Turns the slots of one ring layout into events.
#[derive(Debug)]
pub struct SlotConverter {
    layout: &'static RingLayout,
    /// Typed layouts: the event of each type the layout knows.
    known: Vec<Event>,
}

/// What one conversion gave.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Converted {
    /// Events appended.
    pub events: usize,
    /// Slots whose name field has no NUL terminator (skipped).
    pub malformed: usize,
    /// The first malformed slot's index among the slots given.
    pub first_malformed: Option<usize>,
}

impl SlotConverter {
    /// A converter for `layout`.
    pub fn new(layout: &'static RingLayout) -> SlotConverter {
        let known = match layout.slot.key {
            EventKey::Type(_) => (0..layout.event_types.len()).map(event_of_type).collect(),
            EventKey::Name(_) => Vec::new(),
        };
        SlotConverter { layout, known }
    }

    /// The layout converted.
    pub fn layout(&self) -> &'static RingLayout {
        self.layout
    }

    /// Appends the events of `slots` (whole slots of the layout) to `out`;
    /// events of layouts without timestamps get `read_at_us`.
    pub fn convert(&self, slots: &[u8], read_at_us: u64, out: &mut Vec<Event>) -> Converted {
        let mut done = Converted::default();
        out.reserve(slots.len() / self.layout.slot.size);
        for (index, view) in SlotView::all(self.layout, slots).enumerate() {
            let timestamp_us = view.timestamp_us().unwrap_or(read_at_us);
            let event = match view.key() {
                SlotKey::Name(name) => {
                    if !name.contains(&0) {
                        done.malformed += 1;
                        done.first_malformed.get_or_insert(index);
                        continue;
                    }
                    Event::with_encoded_name(
                        timestamp_us,
                        Category(view.category().unwrap_or(Category::CUSTOM.0)),
                        *name,
                        view.value(),
                    )
                }
                SlotKey::Type(t) => match self.known.get(t as usize) {
                    Some(template) => Event {
                        timestamp_us,
                        // 2-typed keeps the category it carries.
                        category: view.category().unwrap_or(template.category),
                        value: view.value(),
                        ..*template
                    },
                    None => Event::with_encoded_name(
                        timestamp_us,
                        UNKNOWN_TYPE_CATEGORY,
                        event_type_name_field(self.layout, t),
                        view.value(),
                    ),
                },
            };
            out.push(event);
            done.events += 1;
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ring::layout::{V1, V2_NAMED, V2_TYPED, V3, V4};

    fn typed_slot(t: u32, value: u64) -> [u8; 16] {
        let mut slot = [0u8; 16];
        slot[0..4].copy_from_slice(&t.to_le_bytes());
        slot[4..8].copy_from_slice(&[0xb4, 0x7f, 0, 0]); // NIXL's uninitialised padding
        slot[8..16].copy_from_slice(&value.to_le_bytes());
        slot
    }

    #[test]
    fn version_one_slots_are_events_as_they_are() {
        let e = Event::new(1_750_000_000_000_000, Category::BACKEND, "ucx_x", 7);
        let mut out = Vec::new();
        let done = SlotConverter::new(&V1).convert(&e.to_bytes(), 99, &mut out);
        assert_eq!(done.events, 1);
        assert_eq!(out, [e]);
    }

    #[test]
    fn typed_events_get_names_categories_and_the_read_time() {
        let mut slots = Vec::new();
        for (t, v) in [
            (0u32, 4096u64),
            (6, 120),
            (11, 1),
            (20, 36),
            (4, 65536),
            (25, 9),
        ] {
            slots.extend(typed_slot(t, v));
        }
        let mut out = Vec::new();
        let done = SlotConverter::new(&V4).convert(&slots, 1234, &mut out);
        assert_eq!(done.events, 6);
        let got: Vec<(u64, i32, String, u64)> = out
            .iter()
            .map(|e| {
                (
                    e.timestamp_us,
                    e.category,
                    String::from_utf8_lossy(e.name_bytes()).into_owned(),
                    e.value,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (1234, 1, "agent_tx_bytes".to_owned(), 4096),
                (1234, 5, "agent_xfer_time".to_owned(), 120),
                (1234, 4, "NIXL_ERR_NOT_FOUND".to_owned(), 1),
                (1234, 6, "agent_telemetry_events_dropped".to_owned(), 36),
                (1234, 0, "agent_memory_registered".to_owned(), 65536),
                (1234, 8, "unknown_event_25".to_owned(), 9),
            ]
        );
        // Version 3 does not know type 20.
        out.clear();
        SlotConverter::new(&V3).convert(&typed_slot(20, 1), 5, &mut out);
        assert_eq!(out[0].name_bytes(), b"unknown_event_20");
        assert_eq!(out[0].category, 8);
    }

    #[test]
    fn two_typed_keeps_its_category_and_two_named_its_name() {
        let mut slot = [0u8; 16];
        slot[0..4].copy_from_slice(&4u32.to_le_bytes());
        slot[4..8].copy_from_slice(&11u32.to_le_bytes());
        slot[8..16].copy_from_slice(&1u64.to_le_bytes());
        let mut out = Vec::new();
        SlotConverter::new(&V2_TYPED).convert(&slot, 7, &mut out);
        assert_eq!(out[0].category, 4);
        assert_eq!(out[0].name_bytes(), b"NIXL_ERR_NOT_FOUND");

        let mut named = [0u8; 48];
        named[0..4].copy_from_slice(&4i32.to_le_bytes());
        named[4..22].copy_from_slice(b"NIXL_ERR_NOT_FOUND");
        named[40..48].copy_from_slice(&1u64.to_le_bytes());
        let mut bad = [b'x'; 48];
        bad[0..4].copy_from_slice(&0i32.to_le_bytes());
        let mut slots = named.to_vec();
        slots.extend(bad);
        out.clear();
        let done = SlotConverter::new(&V2_NAMED).convert(&slots, 7, &mut out);
        assert_eq!(
            (done.events, done.malformed, done.first_malformed),
            (1, 1, Some(1))
        );
        assert_eq!(
            (out[0].timestamp_us, out[0].category, out[0].name_bytes()),
            (7, 4, &b"NIXL_ERR_NOT_FOUND"[..])
        );
    }
}
