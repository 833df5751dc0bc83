//! The flush side: drains every thread's staging queue into the exporter.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use nixl_telemetry_abi::{Category, Event};

use crate::clock;
use crate::exporter::{ExportOutcome, Exporter};
use crate::staging::{Consumer, QueueCounts, Staging};
use crate::stats::{DropCounts, TelemetryStats};

/// Below this, the flush thread yields instead of sleeping.
const MIN_WAIT: Duration = Duration::from_micros(50);

/// Name of the event that reports losses ([`nixl_telemetry_abi::names::EVENTS_DROPPED`]).
pub const EVENTS_DROPPED_EVENT: &str = nixl_telemetry_abi::names::EVENTS_DROPPED;

/// State owned by whoever flushes (the flush thread or an explicit flush).
struct FlushState {
    exporter: Option<Box<dyn Exporter>>,
    consumers: Vec<Consumer>,
    batch: Vec<Event>,
    /// Counts of queues whose threads exited and that were fully drained.
    retired: QueueCounts,
    delivered: u64,
    generated: u64,
    exporter_full: u64,
    exporter_failed: u64,
    /// Events the exporter's format cannot carry.
    format: u64,
    /// Loss total already reported with an `agent_telemetry_events_dropped` event.
    reported_drops: u64,
    /// The exporter panicked once: it is never called again, batches count as failed.
    exporter_panicked: bool,
}

/// The collector of one telemetry instance.
pub(crate) struct Collector {
    pub(crate) staging: Staging,
    batch_size: usize,
    state: Mutex<FlushState>,
    stop: AtomicBool,
    wake: Condvar,
    wake_lock: Mutex<()>,
}

impl Collector {
    pub(crate) fn new(buffer_size: usize, exporter: Option<Box<dyn Exporter>>) -> Collector {
        Collector {
            staging: Staging::new(buffer_size),
            batch_size: buffer_size,
            state: Mutex::new(FlushState {
                exporter,
                consumers: Vec::new(),
                // Grown on demand past this: allocating a whole buffer up front
                // (3.5 GiB at the largest size) could abort the host.
                batch: Vec::with_capacity(buffer_size.min(1 << 16)),
                retired: QueueCounts::default(),
                delivered: 0,
                generated: 0,
                exporter_full: 0,
                exporter_failed: 0,
                format: 0,
                reported_drops: 0,
                exporter_panicked: false,
            }),
            stop: AtomicBool::new(false),
            wake: Condvar::new(),
            wake_lock: Mutex::new(()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, FlushState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn has_exporter(&self) -> bool {
        self.lock().exporter.is_some()
    }

    /// The flush thread's loop. After each pass it waits `interval`, or less:
    /// long enough, at the rate the busiest queue filled since the previous
    /// pass, for that queue to reach half its capacity (so a fast recorder is
    /// drained before its queue overflows, and an idle one costs one wake-up
    /// per interval). Ends after a final pass once stopped.
    pub(crate) fn run(&self, interval: Duration) {
        let mut last = Instant::now();
        loop {
            let most = self.flush();
            let now = Instant::now();
            let since = now - last;
            last = now;
            if self.stop.load(Ordering::Acquire) {
                break;
            }
            let wait = if most == 0 {
                interval
            } else {
                let half = (self.batch_size / 2) as u32;
                (since * half / most as u32).min(interval)
            };
            if wait < MIN_WAIT {
                std::thread::yield_now();
                continue;
            }
            let guard = self
                .wake_lock
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if !self.stop.load(Ordering::Acquire) {
                let _ = self.wake.wait_timeout(guard, wait);
            }
        }
        self.flush();
    }

    /// Asks the flush thread to make its final pass and end.
    pub(crate) fn request_stop(&self) {
        self.stop.store(true, Ordering::Release);
        let _guard = self
            .wake_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.wake.notify_all();
    }

    /// One flush pass: every queue drained into the exporter in batches, losses
    /// reported, the exporter flushed. Returns the most events one queue held
    /// when the pass reached it (what the flush thread paces itself by).
    /// Without an exporter, does nothing: events wait for [`Collector::drain`].
    pub(crate) fn flush(&self) -> usize {
        let mut st = self.lock();
        let st = &mut *st;
        let Some(mut boxed) = st.exporter.take() else {
            return 0;
        };
        let exporter = boxed.as_mut();
        self.staging.take_registered(&mut st.consumers);
        let mut consumers = std::mem::take(&mut st.consumers);
        let mut most = 0usize;
        let mut i = 0;
        while i < consumers.len() {
            let consumer = &mut consumers[i];
            let detached = consumer.is_detached();
            // Drain what is there now, not what keeps arriving: a pass always ends.
            let mut budget = consumer.pending() as usize;
            most = most.max(budget);
            while budget > 0 {
                let room = self.batch_size.saturating_sub(st.batch.len()).max(1);
                // The batch may grow past batch_size by the packing factor;
                // export hands it over in pieces of at most batch_size.
                let slots = drain_expanded(consumer, &mut st.batch, room.min(budget));
                budget -= slots;
                if st.batch.len() >= self.batch_size {
                    Self::export(exporter, st, self.batch_size);
                }
                if slots == 0 {
                    break;
                }
            }
            if detached && consumer.pending() == 0 {
                let counts = consumer.counts();
                st.retired.accepted += counts.accepted;
                st.retired.dropped += counts.dropped;
                consumers.swap_remove(i);
            } else {
                i += 1;
            }
        }
        st.consumers = consumers;
        Self::export(exporter, st, self.batch_size);
        let drops = Self::drop_counts(st, &self.staging);
        let total = drops.total();
        if total > st.reported_drops {
            let delta = total - st.reported_drops;
            st.reported_drops = total;
            st.batch.push(Event::new(
                clock::now_us(),
                Category::SYSTEM,
                EVENTS_DROPPED_EVENT,
                delta,
            ));
            st.generated += 1;
            let lost_before = st.exporter_full + st.exporter_failed + st.format;
            Self::export(exporter, st, self.batch_size);
            // A report that is itself lost (the ring is still full) is counted,
            // but not reported again: otherwise a full ring nobody reads would
            // get a new report on every pass, forever.
            // (Nor is one the ring's version has no event type for.)
            st.reported_drops += st.exporter_full + st.exporter_failed + st.format - lost_before;
        }
        let drops = Self::drop_counts(st, &self.staging);
        if !st.exporter_panicked {
            let flushed = catch_unwind(AssertUnwindSafe(|| {
                exporter.report_drops(&drops);
                exporter.flush();
            }));
            if flushed.is_err() {
                st.exporter_panicked = true;
                tracing::error!(exporter = exporter.name(), "exporter panicked while flushing; it is disabled, later events count as exporter_failed");
            }
        }
        st.exporter = Some(boxed);
        clock::recalibrate();
        most
    }

    /// Hands the batch to the exporter in pieces of at most `max` events (the
    /// buffer size: plug-ins are promised no larger batch) and books what
    /// became of each.
    fn export(exporter: &mut dyn Exporter, st: &mut FlushState, max: usize) {
        for piece in st.batch.chunks(max.max(1)) {
            let outcome = if st.exporter_panicked {
                ExportOutcome::failed(piece.len())
            } else {
                match catch_unwind(AssertUnwindSafe(|| exporter.export(piece))) {
                    Ok(outcome) => outcome,
                    Err(_) => {
                        st.exporter_panicked = true;
                        tracing::error!(
                            exporter = exporter.name(),
                            "exporter panicked; it is disabled, later events count as exporter_failed"
                        );
                        ExportOutcome::failed(piece.len())
                    }
                }
            };
            st.delivered += outcome.delivered as u64;
            st.exporter_full += outcome.dropped_full as u64;
            st.exporter_failed += outcome.failed as u64;
            st.format += outcome.dropped_format as u64;
        }
        st.batch.clear();
    }

    fn queue_totals(st: &FlushState) -> QueueCounts {
        st.consumers.iter().fold(st.retired, |acc, c| {
            let q = c.counts();
            QueueCounts {
                accepted: acc.accepted + q.accepted,
                dropped: acc.dropped + q.dropped,
            }
        })
    }

    fn drop_counts(st: &FlushState, staging: &Staging) -> DropCounts {
        DropCounts {
            staging_full: Self::queue_totals(st).dropped,
            exporter_full: st.exporter_full,
            exporter_failed: st.exporter_failed,
            format: st.format,
            late: staging.late_drops(),
        }
    }

    /// Collect-only mode: moves staged events (and a loss report, when there are
    /// new losses) into `out`. With an exporter, events go there and this returns 0.
    pub(crate) fn drain(&self, out: &mut Vec<Event>) -> usize {
        let mut st = self.lock();
        let st = &mut *st;
        if st.exporter.is_some() {
            return 0;
        }
        self.staging.take_registered(&mut st.consumers);
        let before = out.len();
        st.consumers.retain_mut(|c| {
            let detached = c.is_detached();
            drain_expanded(c, out, usize::MAX);
            let keep = !(detached && c.pending() == 0);
            if !keep {
                let q = c.counts();
                st.retired.accepted += q.accepted;
                st.retired.dropped += q.dropped;
            }
            keep
        });
        let total = Self::drop_counts(st, &self.staging).total();
        if total > st.reported_drops {
            out.push(Event::new(
                clock::now_us(),
                Category::SYSTEM,
                EVENTS_DROPPED_EVENT,
                total - st.reported_drops,
            ));
            st.reported_drops = total;
            st.generated += 1;
        }
        let n = out.len() - before;
        st.delivered += n as u64;
        n
    }

    /// A snapshot of the accounting.
    pub(crate) fn stats(&self) -> TelemetryStats {
        let mut st = self.lock();
        self.staging.take_registered(&mut st.consumers);
        let queues = Self::queue_totals(&st);
        let pending = st.consumers.iter().map(Consumer::pending_events).sum();
        TelemetryStats {
            recorded: queues.accepted + queues.dropped + self.staging.late_drops(),
            generated: st.generated,
            delivered: st.delivered,
            pending,
            dropped: Self::drop_counts(&st, &self.staging),
        }
    }

    /// Marks every queue closed (threads forget them) and drops the exporter.
    pub(crate) fn close(&self) {
        let mut st = self.lock();
        self.staging.shut_down(&mut st.consumers);
        for c in &st.consumers {
            c.close();
        }
        st.exporter = None;
    }
}

/// Moves up to `max` slots of `consumer` into `out` as the events they stand
/// for. Returns the slots moved.
fn drain_expanded(consumer: &mut Consumer, out: &mut Vec<Event>, max: usize) -> usize {
    consumer.drain_into(out, max)
}
