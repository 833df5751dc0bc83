//! How the single-process exporter publishes one agent's metrics: the flush
//! thread folds events into the model ([`AgentMetrics`]), then copies what
//! changed into [`AgentShared`]'s atomics under a sequence lock, which
//! scrapes read without ever blocking the writer.
//!
//! A scrape retries its read while a publish overlaps it, so it normally sees
//! one consistent state of every series of the agent; but it waits for a
//! quiet moment only a bounded time (see [`AgentShared::snapshot`]): against a
//! writer that keeps publishing (or was descheduled mid-publish) for longer
//! than that, it takes its last read, in which every value is a real reading
//! but the agent's series may be out of step with each other by one publish.
//! The only lock the writer ever takes guards the list of run-time series,
//! and only when a new one appears: scrapes hold it just long enough to clone
//! an `Arc`.

use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nixl_telemetry_abi::Event;
use nixl_telemetry_metrics::families::HISTOGRAMS;
use nixl_telemetry_metrics::{
    histogram, slot, AgentMetrics, Buckets, HistogramTotals, Series, SeriesNaming, Totals,
    MAX_SERIES,
};

use crate::render::{AgentLabels, Format};

/// A scrape that overlaps a publish spins this many times before yielding.
const SNAPSHOT_SPINS: usize = 64;
/// After this long without a quiet moment a scrape takes its last read (each
/// value is still a real reading, only the agent's series may be out of step).
const SNAPSHOT_PATIENCE: Duration = Duration::from_millis(100);

/// One agent's series as scrapes see them.
#[derive(Debug)]
pub(crate) struct AgentShared {
    pub(crate) name: String,
    pub(crate) labels: AgentLabels,
    bounds: Arc<[f64]>,
    /// Even when no publish is under way; bumped twice per publish.
    seq: AtomicU64,
    fixed: [AtomicU64; slot::COUNT],
    /// Per-bucket (not cumulative) counts, `+Inf` last.
    histograms: [Box<[AtomicU64]>; histogram::COUNT],
    events: AtomicU64,
    /// The run-time series' values, index for index with `series`.
    values: Box<[AtomicU64]>,
    series: Mutex<Arc<[Series]>>,
}

impl AgentShared {
    /// A new agent with every series at 0.
    fn new(metrics: &AgentMetrics, labels: AgentLabels) -> AgentShared {
        let bounds: Arc<[f64]> = metrics.buckets().bounds().into();
        let zeros = |n: usize| (0..n).map(|_| AtomicU64::new(0)).collect::<Box<[_]>>();
        AgentShared {
            name: metrics.agent().to_owned(),
            labels,
            histograms: [zeros(bounds.len() + 1), zeros(bounds.len() + 1)],
            bounds,
            seq: AtomicU64::new(0),
            fixed: Default::default(),
            events: AtomicU64::new(0),
            values: zeros(MAX_SERIES),
            series: Mutex::new(Arc::clone(metrics.totals().series_list())),
        }
    }

    /// The publish counter: changes whenever a publish changed something.
    pub(crate) fn version(&self) -> u64 {
        self.seq.load(Ordering::Acquire)
    }

    fn series_list(&self) -> Arc<[Series]> {
        Arc::clone(&self.series.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Reads every series of the agent, as one publish left them when it can.
    ///
    /// While a publish overlaps the read, it retries: [`SNAPSHOT_SPINS`] times
    /// at once, then yielding between attempts for up to [`SNAPSHOT_PATIENCE`].
    /// After that it gives up waiting and returns its last read: each value is
    /// then a real reading, but the agent's series may be out of step with
    /// each other (a scrape is never held up by a writer that is descheduled in
    /// the middle of a publish, or that publishes without pause).
    pub(crate) fn snapshot(&self) -> Totals {
        let series = self.series_list();
        let mut fixed = [0u64; slot::COUNT];
        let mut counts = [
            vec![0u64; self.histograms[0].len()],
            vec![0u64; self.histograms[1].len()],
        ];
        let mut values = vec![0u64; series.len()];
        let mut events;
        let mut attempt = 0usize;
        let mut give_up_at: Option<Instant> = None;
        loop {
            let before = self.seq.load(Ordering::Acquire);
            let force = give_up_at.is_some_and(|at| Instant::now() >= at);
            if before & 1 == 0 || force {
                for (dst, src) in fixed.iter_mut().zip(&self.fixed) {
                    *dst = src.load(Ordering::Relaxed);
                }
                for (dst, src) in counts.iter_mut().zip(&self.histograms) {
                    for (d, s) in dst.iter_mut().zip(src.iter()) {
                        *d = s.load(Ordering::Relaxed);
                    }
                }
                for (d, s) in values.iter_mut().zip(self.values.iter()) {
                    *d = s.load(Ordering::Relaxed);
                }
                events = self.events.load(Ordering::Relaxed);
                fence(Ordering::Acquire);
                if self.seq.load(Ordering::Relaxed) == before || force {
                    break;
                }
            }
            // A publish is under way (odd) or overlapped the read: try again,
            // politely, but within patience; past it, the next attempt keeps
            // the last read rather than wait on a descheduled writer.
            attempt += 1;
            if attempt < SNAPSHOT_SPINS {
                std::hint::spin_loop();
                continue;
            }
            give_up_at.get_or_insert_with(|| Instant::now() + SNAPSHOT_PATIENCE);
            std::thread::yield_now();
        }
        let histograms = [0, 1].map(|h| {
            HistogramTotals::from_counts(
                Arc::clone(&self.bounds),
                std::mem::take(&mut counts[h]),
                fixed[HISTOGRAMS[h].sum_slot],
            )
        });
        Totals::from_parts(fixed, histograms, series, values, events)
    }
}

/// Renders every series of `agents` (sorted by name) in `format`.
pub(crate) fn render(agents: &[Arc<AgentShared>], format: Format) -> Vec<u8> {
    let snapshots: Vec<Totals> = agents.iter().map(|a| a.snapshot()).collect();
    let pairs: Vec<(&AgentLabels, &Totals)> = agents
        .iter()
        .zip(&snapshots)
        .map(|(a, t)| (&a.labels, t))
        .collect();
    crate::render::render(&pairs, format)
}

/// The flush thread's side of one agent: folds events into the model and
/// publishes them to the [`AgentShared`] scrapes read.
#[derive(Debug)]
pub(crate) struct AgentWriter {
    metrics: AgentMetrics,
    shared: Arc<AgentShared>,
}

impl AgentWriter {
    /// A writer for a new agent on `hostname`, with its shared side.
    pub(crate) fn new(name: &str, hostname: &str, buckets: Buckets) -> AgentWriter {
        let labels = AgentLabels::new(
            [("agent_name", name), ("hostname", hostname)],
            buckets.bounds(),
        );
        let mut metrics = AgentMetrics::new(name, buckets, SeriesNaming::Prometheus);
        let shared = Arc::new(AgentShared::new(&metrics, labels));
        metrics.clear_changes();
        AgentWriter { metrics, shared }
    }

    /// The side scrapes read.
    pub(crate) fn shared(&self) -> &Arc<AgentShared> {
        &self.shared
    }

    /// Records `events` in order, then publishes.
    pub(crate) fn record(&mut self, events: &[Event]) {
        self.metrics.record(events);
        self.publish();
    }

    /// Copies what changed into the shared atomics under the sequence lock.
    fn publish(&mut self) {
        let changes = self.metrics.changes();
        if changes.is_empty() {
            return;
        }
        let totals = self.metrics.totals();
        let shared = &*self.shared;
        if !changes.new_series().is_empty() {
            // The values of new series are 0 until the publish below.
            *shared.series.lock().unwrap_or_else(|e| e.into_inner()) =
                Arc::clone(totals.series_list());
        }
        let seq = shared.seq.load(Ordering::Relaxed);
        shared.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        for (dst, &src) in shared.fixed.iter().zip(totals.fixed_readings()) {
            dst.store(src, Ordering::Relaxed);
        }
        for (h, dst) in shared.histograms.iter().enumerate() {
            if changes.histogram_changed(h) {
                for (d, &src) in dst.iter().zip(totals.histogram(h).counts()) {
                    d.store(src, Ordering::Relaxed);
                }
            }
        }
        let values = totals.series_values();
        for i in changes.changed_values() {
            shared.values[i].store(values[i], Ordering::Relaxed);
        }
        shared.events.store(totals.events(), Ordering::Relaxed);
        shared.seq.store(seq.wrapping_add(2), Ordering::Release);
        self.metrics.clear_changes();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nixl_telemetry_abi::Category;

    fn ev(category: Category, name: &str, value: u64) -> Event {
        Event::new(1, category, name, value)
    }

    fn writer() -> AgentWriter {
        AgentWriter::new("agent-a", "host", Buckets::new(&[10.0, 100.0]).unwrap())
    }

    #[test]
    fn snapshots_read_what_the_writer_published() {
        let mut w = writer();
        w.record(&[
            ev(Category::TRANSFER, "agent_tx_bytes", 100),
            ev(Category::PERFORMANCE, "agent_xfer_time", 500),
            ev(Category::ERROR, "NIXL_ERR_BACKEND", 1),
            ev(Category::ERROR, "NIXL_ERR_FRESH", 1),
            ev(Category::CUSTOM, "ucx.rndv", 4),
        ]);
        let same = |w: &AgentWriter| {
            let s = w.shared().snapshot();
            let t = w.metrics.totals();
            assert_eq!(s.fixed_readings(), t.fixed_readings());
            for h in 0..histogram::COUNT {
                assert_eq!(s.histogram(h).counts(), t.histogram(h).counts());
                assert_eq!(s.histogram(h).count(), t.histogram(h).count());
                assert_eq!(s.histogram(h).sum(), t.histogram(h).sum());
            }
            assert_eq!(
                s.series().collect::<Vec<_>>(),
                t.series().collect::<Vec<_>>()
            );
            assert_eq!(s.events(), t.events());
            s
        };
        let before = w.shared().version();
        let s = same(&w);
        assert_eq!(s.histogram(0).counts(), [0, 0, 1]);
        assert_eq!(s.error_count("fresh"), Some(1));
        w.record(&[]);
        assert_eq!(w.shared().version(), before, "nothing to publish");
        w.record(&[ev(Category::CUSTOM, "ucx.rndv", 1)]);
        same(&w);
    }

    #[test]
    fn snapshots_are_consistent_while_the_writer_publishes() {
        let mut w = writer();
        let shared = Arc::clone(w.shared());
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut reads = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let s = shared.snapshot();
                    // One transfer = bytes 4096 + one request + one time: always in step.
                    assert_eq!(s.fixed(slot::TX_BYTES), s.fixed(slot::TX_REQUESTS) * 4096);
                    assert_eq!(s.histogram(0).count(), s.fixed(slot::TX_REQUESTS));
                    reads += 1;
                }
                reads
            })
        };
        let batch: Vec<Event> = (0..100)
            .flat_map(|_| {
                [
                    ev(Category::PERFORMANCE, "agent_xfer_time", 20),
                    ev(Category::TRANSFER, "agent_tx_bytes", 4096),
                    ev(Category::TRANSFER, "agent_tx_requests_num", 1),
                ]
            })
            .collect();
        let rounds = if cfg!(miri) { 5 } else { 20_000 };
        for _ in 0..rounds {
            w.record(&batch);
        }
        stop.store(true, Ordering::Relaxed);
        assert!(reader.join().unwrap() > 0);
    }
}
