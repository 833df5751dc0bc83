//! A completed transfer staged as one slot.
//!
//! [`Telemetry::transfer_completed`](crate::Telemetry::transfer_completed)
//! stands for three events with one timestamp: `agent_xfer_time`,
//! `agent_{tx|rx}_bytes` and `agent_{tx|rx}_requests_num` (= 1). Everything
//! that tells them apart fits one 56-byte slot, so the recording thread writes
//! one slot instead of three, and the flush side expands it back, in place and
//! in order, before the exporter sees the batch:
//!
//! | slot field | holds |
//! | --- | --- |
//! | `timestamp_us` | the completion timestamp (of all three events) |
//! | `category` | the direction: 0 = write (`tx`), 1 = read (`rx`) |
//! | `event_name[0..8]` | the duration in µs, little-endian |
//! | `reserved` | 2, the further events the slot stands for (set by the staging queue) |
//! | `value` | the bytes moved |
//!
//! A packed slot never leaves the collector: exporters, rings and plug-ins
//! receive the three ordinary events.

use nixl_telemetry_abi::{Category, Event, EVENT_NAME_CAPACITY};

use crate::telemetry::{Direction, RX_BYTES, RX_REQUESTS, TX_BYTES, TX_REQUESTS, XFER_TIME};

/// The events a packed transfer slot stands for beyond the first.
pub(crate) const EXTRA_EVENTS: u32 = 2;

/// A name known at compile time, encoded as an event's name field.
const fn encoded(name: &str) -> [u8; EVENT_NAME_CAPACITY] {
    let bytes = name.as_bytes();
    assert!(bytes.len() < EVENT_NAME_CAPACITY);
    let mut out = [0u8; EVENT_NAME_CAPACITY];
    let mut i = 0;
    while i < bytes.len() {
        out[i] = bytes[i];
        i += 1;
    }
    out
}

const XFER_TIME_NAME: [u8; EVENT_NAME_CAPACITY] = encoded(XFER_TIME);
/// (bytes, requests) names, indexed by the packed direction.
const DIRECTION_NAMES: [[[u8; EVENT_NAME_CAPACITY]; 2]; 2] = [
    [encoded(TX_BYTES), encoded(TX_REQUESTS)],
    [encoded(RX_BYTES), encoded(RX_REQUESTS)],
];

/// The slot for one completed transfer (its `reserved` field is the staging
/// queue's to set: push it with `EXTRA_EVENTS`; the queue also converts its
/// timestamp to µs when it was a raw clock reading, before [`expand`]).
#[inline(always)]
pub(crate) fn pack(timestamp_us: u64, duration_us: u64, direction: Direction, bytes: u64) -> Event {
    let mut name = [0u8; EVENT_NAME_CAPACITY];
    let duration = duration_us.to_le_bytes();
    let mut i = 0;
    while i < duration.len() {
        name[i] = duration[i];
        i += 1;
    }
    let direction = match direction {
        Direction::Write => 0,
        Direction::Read => 1,
    };
    Event::with_encoded_name(timestamp_us, Category(direction), name, bytes)
}

/// The three events a packed slot stands for, in the order
/// `agent_xfer_time`, bytes, requests.
fn unpack(slot: &Event) -> [Event; 3] {
    let mut duration = [0u8; 8];
    duration.copy_from_slice(&slot.event_name[..8]);
    let [bytes_name, requests_name] = DIRECTION_NAMES[usize::from(slot.category != 0)];
    let ts = slot.timestamp_us;
    [
        Event::with_encoded_name(
            ts,
            Category::PERFORMANCE,
            XFER_TIME_NAME,
            u64::from_le_bytes(duration),
        ),
        Event::with_encoded_name(ts, Category::TRANSFER, bytes_name, slot.value),
        Event::with_encoded_name(ts, Category::TRANSFER, requests_name, 1),
    ]
}

/// Expands, in place and in order, the packed slots among `batch[from..]`,
/// which stand for `extra` events beyond one per slot (what the staging queue's
/// drain reported). Ordinary events are left as they are; every event's
/// `reserved` field is 0 afterwards.
pub(crate) fn expand(batch: &mut Vec<Event>, from: usize, extra: usize) {
    if extra == 0 {
        return;
    }
    let mut src = batch.len();
    batch.resize(
        src + extra,
        Event::with_encoded_name(0, Category(0), [0; 32], 0),
    );
    let mut dst = batch.len();
    // Walk back from the end, moving each slot to its final place; once no room
    // is left to make (dst == src), nothing earlier is packed.
    while dst > src {
        src -= 1;
        let slot = batch[src];
        if slot.reserved == 0 {
            dst -= 1;
            batch[dst] = slot;
        } else {
            debug_assert_eq!(slot.reserved, EXTRA_EVENTS);
            dst -= 3;
            batch[dst..dst + 3].copy_from_slice(&unpack(&slot));
        }
    }
    debug_assert!(src >= from);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn staged(mut slot: Event) -> Event {
        slot.reserved = EXTRA_EVENTS;
        slot
    }

    fn plain(v: u64) -> Event {
        Event::new(v, Category::CUSTOM, "e", v)
    }

    #[test]
    fn a_packed_transfer_expands_to_the_three_events() {
        for (direction, bytes_name, requests_name) in [
            (Direction::Write, TX_BYTES, TX_REQUESTS),
            (Direction::Read, RX_BYTES, RX_REQUESTS),
        ] {
            let mut batch = vec![staged(pack(
                1_700_000_000_123_456,
                u64::MAX - 7,
                direction,
                4096,
            ))];
            expand(&mut batch, 0, 2);
            assert_eq!(
                batch,
                vec![
                    Event::new(
                        1_700_000_000_123_456,
                        Category::PERFORMANCE,
                        XFER_TIME,
                        u64::MAX - 7
                    ),
                    Event::new(1_700_000_000_123_456, Category::TRANSFER, bytes_name, 4096),
                    Event::new(1_700_000_000_123_456, Category::TRANSFER, requests_name, 1),
                ]
            );
        }
    }

    #[test]
    fn expansion_keeps_order_and_leaves_the_prefix_alone() {
        let prefix = [plain(100), staged(pack(5, 6, Direction::Read, 7))];
        let mut batch = prefix.to_vec();
        let from = batch.len();
        batch.extend([
            plain(1),
            staged(pack(2, 20, Direction::Write, 200)),
            staged(pack(3, 30, Direction::Read, 300)),
            plain(4),
        ]);
        expand(&mut batch, from, 4);
        // The prefix (already expanded or not, it is not this drain's) is untouched.
        assert_eq!(&batch[..from], &prefix);
        let got: Vec<(u64, String, u64)> = batch[from..]
            .iter()
            .map(|e| (e.timestamp_us, e.name().into_owned(), e.value))
            .collect();
        let want: Vec<(u64, String, u64)> = [
            (1, "e", 1),
            (2, XFER_TIME, 20),
            (2, TX_BYTES, 200),
            (2, TX_REQUESTS, 1),
            (3, XFER_TIME, 30),
            (3, RX_BYTES, 300),
            (3, RX_REQUESTS, 1),
            (4, "e", 4),
        ]
        .iter()
        .map(|(t, n, v)| (*t, n.to_string(), *v))
        .collect();
        assert_eq!(got, want);
        assert!(batch[from..].iter().all(|e| e.reserved == 0));
    }

    #[test]
    fn nothing_packed_is_nothing_to_do() {
        let mut batch = vec![plain(1), plain(2)];
        expand(&mut batch, 0, 0);
        assert_eq!(batch, vec![plain(1), plain(2)]);
    }
}
