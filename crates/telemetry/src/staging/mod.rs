//! Per-thread staging: one bounded single-producer single-consumer queue per
//! (recording thread, telemetry instance), in four parts:
//!
//! * [`queue`]: the SPSC queue itself, generic over its slot type: no lock, no
//!   allocation, no system call, no read-modify-write instruction on a push;
//! * [`slot`]: the slot protocol, [`StagedSlot`]: what a recording thread
//!   writes (an event, or a completed transfer that stands for three; a raw
//!   clock reading or µs) and how the flush side turns it into [`Event`]s;
//! * [`registry`]: the instance registry, [`Staging`]: where threads register
//!   their queues and the flush side collects the consumers;
//! * [`local`]: each thread's table of producers and the fast-path cache in
//!   front of it.
//!
//! This module's [`Consumer`] is the flush side's end of one queue, in events.
//! All `unsafe` of the collector's staging lives in `queue` and `local`.

#[allow(unsafe_code)] // this thread's staging queue, reached through its thread-local
mod local;
#[allow(unsafe_code)] // the lock-free staging queue
mod queue;
mod registry;
mod slot;

use nixl_telemetry_abi::Event;

pub(crate) use queue::QueueCounts;
pub(crate) use registry::{QueueKey, Staging};
pub(crate) use slot::When;

use slot::StagedSlot;

/// The flush side's end of one staging queue, counted in events (a transfer
/// slot counts for its three).
pub(crate) struct Consumer {
    queue: queue::Consumer<StagedSlot>,
}

impl Consumer {
    fn new(queue: queue::Consumer<StagedSlot>) -> Consumer {
        Consumer { queue }
    }

    /// Moves up to `max` published slots into `out` as the events they stand
    /// for, oldest first, timestamps in µs (one clock calibration per call).
    /// Returns the slots moved.
    pub(crate) fn drain_into(&mut self, out: &mut Vec<Event>, max: usize) -> usize {
        let slots = (self.queue.pending() as usize).min(max);
        if slots == 0 {
            return 0;
        }
        out.reserve(slots);
        let mut calibration = None;
        self.queue
            .pop_with(slots, |slot| slot.append_events(&mut calibration, out))
    }

    /// Slots published and not yet drained.
    pub(crate) fn pending(&self) -> u64 {
        self.queue.pending()
    }

    /// Events published and not yet drained (a transfer slot counts for all of its).
    pub(crate) fn pending_events(&self) -> u64 {
        self.queue.pending_units()
    }

    /// Whether the producing thread has exited (its queue can be retired once empty).
    pub(crate) fn is_detached(&self) -> bool {
        self.queue.is_detached()
    }

    /// The queue's counters, in events.
    pub(crate) fn counts(&self) -> QueueCounts {
        self.queue.counts()
    }

    /// Marks the queue closed so the producing thread forgets it.
    pub(crate) fn close(&self) {
        self.queue.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use nixl_telemetry_abi::event::encode_name;
    use nixl_telemetry_abi::Category;

    use crate::clock;
    use crate::telemetry::Direction;

    fn record(staging: &Staging, v: u64) {
        staging.push_event(When::At(v), Category::CUSTOM, || encode_name("e"), v);
    }

    fn consumers(staging: &Staging) -> Vec<Consumer> {
        let mut out = Vec::new();
        staging.take_registered(&mut out);
        out
    }

    #[test]
    fn a_transfer_counts_as_its_three_events_and_drains_as_them() {
        let staging = Staging::new(4);
        record(&staging, 1);
        staging.push_transfer(When::At(2), 20, Direction::Write, 200);
        record(&staging, 3);
        let mut c = consumers(&staging);
        assert_eq!(c[0].pending(), 3);
        assert_eq!(c[0].pending_events(), 5);
        let mut out = Vec::new();
        assert_eq!(c[0].drain_into(&mut out, 2), 2);
        assert_eq!(c[0].pending_events(), 1);
        let names: Vec<String> = out.iter().map(|e| e.name().into_owned()).collect();
        assert_eq!(
            names,
            [
                "e",
                "agent_xfer_time",
                "agent_tx_bytes",
                "agent_tx_requests_num"
            ]
        );
        // Room for 3 more slots: the transfer that does not fit is dropped
        // as all of its events.
        staging.push_transfer(When::At(4), 1, Direction::Read, 1);
        record(&staging, 5);
        staging.push_transfer(When::At(6), 1, Direction::Read, 1);
        staging.push_transfer(When::At(7), 1, Direction::Read, 1);
        assert_eq!(
            c[0].counts(),
            QueueCounts {
                accepted: 5 + 3 + 1 + 3,
                dropped: 3
            }
        );
        assert_eq!(c[0].drain_into(&mut out, usize::MAX), 4);
        assert_eq!(out.len() as u64, c[0].counts().accepted);
        assert_eq!(c[0].pending_events(), 0);
    }

    #[test]
    fn a_push_that_reads_the_clock_arrives_in_microseconds() {
        clock::init();
        let staging = Staging::new(8);
        let before = clock::now_us();
        staging.push_event(When::Now, Category::CUSTOM, || encode_name("now"), 1);
        staging.push_transfer(When::Now, 5, Direction::Read, 2);
        let after = clock::now_us();
        let mut c = consumers(&staging);
        let mut out = Vec::new();
        assert_eq!(c[0].drain_into(&mut out, usize::MAX), 2);
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

    #[test]
    fn threads_get_their_own_queues_and_keep_their_order() {
        let staging = Arc::new(Staging::new(1 << 16));
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let s = Arc::clone(&staging);
                std::thread::spawn(move || {
                    for i in 0..10_000u64 {
                        record(&s, t << 32 | i);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let all = consumers(&staging);
        assert_eq!(all.len(), 4);
        for mut c in all {
            assert!(c.is_detached());
            let mut out = Vec::new();
            c.drain_into(&mut out, usize::MAX);
            assert_eq!(out.len(), 10_000);
            let t = out[0].value >> 32;
            for (i, e) in out.iter().enumerate() {
                assert_eq!(e.value, t << 32 | i as u64);
            }
        }
    }

    #[test]
    fn concurrent_drain_loses_nothing() {
        let staging = Arc::new(Staging::new(64));
        let s = Arc::clone(&staging);
        let n = if cfg!(miri) { 500 } else { 200_000u64 };
        let producer = std::thread::spawn(move || {
            for i in 0..n {
                record(&s, i);
            }
        });
        let mut all = Vec::new();
        let mut out = Vec::new();
        loop {
            staging.take_registered(&mut all);
            let mut done = false;
            for c in &mut all {
                let detached = c.is_detached();
                c.drain_into(&mut out, usize::MAX);
                done = detached && c.pending() == 0;
            }
            if done {
                break;
            }
            std::thread::yield_now();
        }
        producer.join().unwrap();
        let counts = all[0].counts();
        assert_eq!(counts.accepted + counts.dropped, n);
        assert_eq!(out.len() as u64, counts.accepted);
        // Accepted events are a strictly increasing subsequence.
        assert!(out.windows(2).all(|w| w[0].value < w[1].value));
    }

    #[test]
    fn two_instances_on_one_thread_and_closed_ones_are_forgotten() {
        let a = Staging::new(8);
        let b = Staging::new(8);
        for i in 0..3 {
            record(&a, i);
            record(&b, 100 + i);
        }
        let (ca, cb) = (consumers(&a), consumers(&b));
        assert_eq!((ca.len(), cb.len()), (1, 1));
        assert_eq!(ca[0].counts().accepted, 3);
        assert_eq!(cb[0].counts().accepted, 3);
        ca[0].close();
        let c = Staging::new(8);
        // The slow path purges a's queue from this thread's table.
        record(&c, 7);
        let live = local::registered_ids();
        assert!(!live.contains(&a.id()) && live.contains(&b.id()) && live.contains(&c.id()));
    }

    #[test]
    fn instances_sharing_a_cache_way_take_turns_without_losing_count() {
        // Two instances whose queues this thread caches in the same way: each
        // record into one evicts the other's cursor, and the next record into
        // the other makes a new cursor from what its queue published.
        let a = Staging::new(4);
        let b = (0..256)
            .map(|_| Staging::new(4))
            .find(|b| b.id() % 4 == a.id() % 4)
            .expect("an instance in a's way");
        let (mut ca, mut cb) = (None::<Consumer>, None::<Consumer>);
        let (mut got_a, mut got_b) = (Vec::new(), Vec::new());
        // What a queue of 4 slots keeps: each instance's slots pending, and
        // its units accepted and dropped.
        let mut model = [(0u64, 0u64, 0u64); 2];
        for round in 0..40u64 {
            for (which, staging) in [(0, &a), (1, &b)] {
                let transfer = round % 3 == 0;
                if transfer {
                    staging.push_transfer(When::At(round), 5, Direction::Read, round);
                } else {
                    record(staging, round);
                }
                let units = if transfer { 3 } else { 1 };
                let (pending, accepted, dropped) = &mut model[which];
                if *pending < 4 {
                    *pending += 1;
                    *accepted += units;
                } else {
                    *dropped += units;
                }
            }
            ca = ca.or_else(|| consumers(&a).pop());
            cb = cb.or_else(|| consumers(&b).pop());
            // a is drained every 5th round, b every 7th: the cursors re-read
            // the consumers' positions at different times.
            if round % 5 == 4 {
                ca.as_mut().unwrap().drain_into(&mut got_a, usize::MAX);
                model[0].0 = 0;
            }
            if round % 7 == 6 {
                cb.as_mut().unwrap().drain_into(&mut got_b, usize::MAX);
                model[1].0 = 0;
            }
        }
        for (consumer, model) in [(&ca, model[0]), (&cb, model[1])] {
            let counts = consumer.as_ref().unwrap().counts();
            assert_eq!((counts.accepted, counts.dropped), (model.1, model.2));
        }
        ca.as_mut().unwrap().drain_into(&mut got_a, usize::MAX);
        cb.as_mut().unwrap().drain_into(&mut got_b, usize::MAX);
        assert_eq!(got_a.len() as u64, model[0].1);
        assert_eq!(got_b.len() as u64, model[1].1);
        for got in [&got_a, &got_b] {
            assert!(got
                .windows(2)
                .all(|w| w[0].timestamp_us <= w[1].timestamp_us));
        }
    }

    #[test]
    fn no_queue_is_registered_after_shutdown() {
        let s = Staging::new(8);
        record(&s, 1);
        let mut all = Vec::new();
        s.shut_down(&mut all);
        assert_eq!(all.len(), 1);
        for c in &all {
            c.close();
        }
        // Threads that record after the shutdown (a handle that outlived its
        // telemetry) get no queue: their events are counted, nothing is kept.
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    record(&s, 2);
                    record(&s, 3);
                });
            }
        });
        assert!(consumers(&s).is_empty());
        assert_eq!(s.late_drops(), 8);
    }
}
