//! The slot protocol: what a recording thread writes into its staging queue
//! ([`StagedSlot`]) and how the flush side turns slots into [`Event`]s.
//!
//! A staged slot is not an [`Event`]: it has its own type, so it can reach an
//! exporter only through [`StagedSlot::append_events`]. Two things it carries
//! that an event does not:
//!
//! * **a raw timestamp**: a push that takes its own timestamp ([`When::Now`])
//!   stores [`clock::stamp`]'s reading, the raw time-stamp-counter reading
//!   where the clock uses the TSC, and says that the clock took it; the drain
//!   converts it to µs with one calibration snapshot per drain, so the
//!   recording thread pays for the RDTSC instruction and nothing else. The
//!   flag is a constant of the push (whether the reading is ticks or µs is
//!   the clock's, fixed for the process once it is calibrated), so a push
//!   keeps no clock state across the read;
//! * **a completed transfer**: [`Telemetry::transfer_completed`](crate::Telemetry::transfer_completed)
//!   stands for three events with one timestamp (`agent_xfer_time`,
//!   `agent_{tx|rx}_bytes`, `agent_{tx|rx}_requests_num` = 1). Its duration,
//!   direction and bytes fit one 56-byte slot, so the recording thread writes
//!   one slot instead of three and the drain appends the three events, in order.
//!
//! A slot stands for `1 + extra_events()` events; the staging queue counts
//! them as accepted or dropped together, so the collector's books stay exact.

use nixl_telemetry_abi::event::encode_name;
use nixl_telemetry_abi::names::{RX_BYTES, RX_REQUESTS, TX_BYTES, TX_REQUESTS, XFER_TIME};
use nixl_telemetry_abi::{Category, Event, EVENT_NAME_CAPACITY};

use crate::clock::{self, TscToUs};
use crate::telemetry::Direction;

/// The events a transfer slot stands for beyond the first.
pub(crate) const TRANSFER_EXTRA_EVENTS: u32 = 2;

/// Where a push's timestamp comes from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum When {
    /// Read now, inside the push, and only when the slot is kept.
    Now,
    /// Taken by the caller: µs since the epoch.
    At(u64),
}

impl When {
    /// The timestamp to store: [`clock::stamp`]'s reading (flagged) for
    /// [`When::Now`], else the caller's µs.
    #[inline(always)]
    fn stamp(self) -> Stamp {
        match self {
            When::Now => Stamp {
                value: clock::stamp(),
                raw: true,
            },
            When::At(us) => Stamp {
                value: us,
                raw: false,
            },
        }
    }
}

/// A stored timestamp: µs since the epoch, or [`clock::stamp`]'s reading
/// (`raw`: ticks where the clock uses the TSC, else µs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    value: u64,
    raw: bool,
}

/// What a slot holds besides its timestamp and value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    /// One ordinary event.
    Event {
        category: Category,
        name: [u8; EVENT_NAME_CAPACITY],
        raw_stamp: bool,
    },
    /// One completed transfer: three events (the value is its bytes).
    Transfer {
        duration_us: u64,
        direction: Direction,
        raw_stamp: bool,
    },
}

/// One slot of a staging queue (56 bytes, as an [`Event`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StagedSlot {
    /// µs since the epoch, or raw ticks when the body says so.
    stamp: u64,
    value: u64,
    body: Body,
}

const _: () = assert!(core::mem::size_of::<StagedSlot>() == Event::SIZE);

const XFER_TIME_NAME: [u8; EVENT_NAME_CAPACITY] = encode_name(XFER_TIME);
/// (bytes, requests) names, indexed by direction.
const DIRECTION_NAMES: [[[u8; EVENT_NAME_CAPACITY]; 2]; 2] = [
    [encode_name(TX_BYTES), encode_name(TX_REQUESTS)],
    [encode_name(RX_BYTES), encode_name(RX_REQUESTS)],
];

impl StagedSlot {
    /// An ordinary event, stamped as `when` says.
    #[cfg(test)]
    pub(crate) fn event(
        when: When,
        category: Category,
        name: [u8; EVENT_NAME_CAPACITY],
        value: u64,
    ) -> StagedSlot {
        StagedSlot::event_named_after_stamp(when, category, || name, value)
    }

    /// An ordinary event, stamped as `when` says; `name` runs after the clock
    /// is read. On the record path the name is then loaded straight into the
    /// slot: loaded before, it had to live through the system-clock fallback's
    /// call and went through the stack (8 more instructions per record).
    #[inline(always)]
    pub(crate) fn event_named_after_stamp(
        when: When,
        category: Category,
        name: impl FnOnce() -> [u8; EVENT_NAME_CAPACITY],
        value: u64,
    ) -> StagedSlot {
        let stamp = when.stamp();
        let name = name();
        StagedSlot {
            stamp: stamp.value,
            value,
            body: Body::Event {
                category,
                name,
                raw_stamp: stamp.raw,
            },
        }
    }

    /// A completed transfer, stamped as `when` says.
    #[inline(always)]
    pub(crate) fn transfer(
        when: When,
        duration_us: u64,
        direction: Direction,
        bytes: u64,
    ) -> StagedSlot {
        let stamp = when.stamp();
        StagedSlot {
            stamp: stamp.value,
            value: bytes,
            body: Body::Transfer {
                duration_us,
                direction,
                raw_stamp: stamp.raw,
            },
        }
    }

    /// The events this slot stands for beyond one (what
    /// [`StagedSlot::append_events`] returns).
    #[cfg(test)]
    fn extra_events(&self) -> u32 {
        match self.body {
            Body::Event { .. } => 0,
            Body::Transfer { .. } => TRANSFER_EXTRA_EVENTS,
        }
    }

    /// Appends the events this slot stands for to `out`, in order, with the
    /// timestamp in µs (a raw one converted with `calibration`, taken once
    /// per drain on first need, where the clock uses the TSC). Returns
    /// [`StagedSlot::extra_events`].
    #[inline]
    pub(crate) fn append_events(
        &self,
        calibration: &mut Option<TscToUs>,
        out: &mut Vec<Event>,
    ) -> u32 {
        let us = |raw: bool, calibration: &mut Option<TscToUs>| {
            if raw && clock::uses_tsc() {
                calibration
                    .get_or_insert_with(TscToUs::current)
                    .us(self.stamp)
            } else {
                self.stamp
            }
        };
        match self.body {
            Body::Event {
                category,
                name,
                raw_stamp,
            } => {
                out.push(Event::with_encoded_name(
                    us(raw_stamp, calibration),
                    category,
                    name,
                    self.value,
                ));
                0
            }
            Body::Transfer {
                duration_us,
                direction,
                raw_stamp,
            } => {
                let ts = us(raw_stamp, calibration);
                let [bytes_name, requests_name] = DIRECTION_NAMES[match direction {
                    Direction::Write => 0,
                    Direction::Read => 1,
                }];
                out.extend_from_slice(&[
                    Event::with_encoded_name(
                        ts,
                        Category::PERFORMANCE,
                        XFER_TIME_NAME,
                        duration_us,
                    ),
                    Event::with_encoded_name(ts, Category::TRANSFER, bytes_name, self.value),
                    Event::with_encoded_name(ts, Category::TRANSFER, requests_name, 1),
                ]);
                TRANSFER_EXTRA_EVENTS
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(v: u64) -> StagedSlot {
        StagedSlot::event(When::At(v), Category::CUSTOM, encode_name("e"), v)
    }

    fn events(slots: &[StagedSlot]) -> Vec<Event> {
        let mut out = Vec::new();
        let mut calibration = None;
        for slot in slots {
            let extra = slot.append_events(&mut calibration, &mut out);
            assert_eq!(extra, slot.extra_events());
        }
        out
    }

    #[test]
    fn a_transfer_becomes_the_three_events() {
        for (direction, bytes_name, requests_name) in [
            (Direction::Write, TX_BYTES, TX_REQUESTS),
            (Direction::Read, RX_BYTES, RX_REQUESTS),
        ] {
            let slot = StagedSlot::transfer(
                When::At(1_700_000_000_123_456),
                u64::MAX - 7,
                direction,
                4096,
            );
            assert_eq!(slot.extra_events(), 2);
            assert_eq!(
                events(&[slot]),
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
    fn slots_keep_their_order_and_ordinary_events_stay_as_they_are() {
        let got: Vec<(u64, String, u64)> = events(&[
            plain(1),
            StagedSlot::transfer(When::At(2), 20, Direction::Write, 200),
            StagedSlot::transfer(When::At(3), 30, Direction::Read, 300),
            plain(4),
        ])
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
        assert!(events(&[plain(9)]).iter().all(|e| e.reserved == 0));
    }

    #[test]
    fn a_slot_stamped_now_arrives_in_microseconds() {
        clock::init();
        let before = clock::now_us();
        let slots = [
            StagedSlot::event(When::Now, Category::CUSTOM, encode_name("now"), 1),
            StagedSlot::transfer(When::Now, 5, Direction::Read, 2),
        ];
        let after = clock::now_us();
        let out = events(&slots);
        assert_eq!(out.len(), 4);
        for e in &out {
            assert!(
                (before..=after).contains(&e.timestamp_us),
                "{before} {} {after}",
                e.timestamp_us
            );
            assert_eq!(e.reserved, 0);
        }
    }
}
