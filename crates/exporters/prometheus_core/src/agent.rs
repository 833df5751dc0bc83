//! Storage of one agent's metrics: the writer side the flush thread owns, and
//! the shared side scrapes read.
//!
//! The flush thread turns events into plain (non-atomic) totals in an
//! [`AgentWriter`], then publishes them once per batch into [`AgentShared`]'s
//! atomics under a sequence lock: a scrape never blocks the writer. A scrape
//! retries its read while a publish overlaps it, so it normally sees one
//! consistent state of every series of the agent; but it waits for a quiet
//! moment only a bounded time (see [`AgentShared::snapshot`]): against a writer
//! that keeps publishing (or was descheduled mid-publish) for longer than that,
//! it takes its last read, in which every value is a real reading but the
//! agent's series may be out of step with each other by one publish. The only
//! lock the writer ever takes guards the list of per-name series, and only
//! when a new name appears: scrapes hold it just long enough to clone an `Arc`.
//!
//! The sample lines stored here are rendered once, by `render::line`.

use std::collections::HashMap;
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nixl_telemetry_abi::{names, Category, Event};

use crate::families::{slot, ERRORS_SAMPLE, HISTOGRAMS, KNOWN_ERROR_STATUSES, SCALARS};
use crate::name_cache::{NameKey, NameMap};
use crate::names::{error_status, per_name_sample};
use crate::render::{format_bound, line};
use crate::settings::Buckets;

/// The most distinct (category, name) pairs one agent maps to per-name counters
/// or to error statuses other than the known ones. Events with further names
/// are counted in `agent_telemetry_unmapped_events_total`, so a misbehaving
/// backend cannot grow the exporter's memory or the scrape without bound.
pub const MAX_NAMES_PER_AGENT: usize = 256;

/// A scrape that overlaps a publish spins this many times before yielding.
const SNAPSHOT_SPINS: usize = 64;
/// After this long without a quiet moment a scrape takes its last read (each
/// value is still a real reading, only the agent's series may be out of step).
const SNAPSHOT_PATIENCE: Duration = Duration::from_millis(100);

/// What a per-name or error series counts.
#[derive(Debug)]
pub(crate) enum DynKind {
    /// `agent_errors_total{status=…}`.
    Error,
    /// A per-name counter with this sample name.
    Named(Box<str>),
}

/// A series created at run time: an error status or a per-name counter.
#[derive(Debug)]
pub(crate) struct DynSeries {
    pub(crate) kind: DynKind,
    /// The sample line up to the value: `name{labels} `.
    pub(crate) line: Box<[u8]>,
    value: AtomicU64,
}

/// Pre-rendered sample lines of one histogram, up to the value.
#[derive(Debug)]
pub(crate) struct HistogramLines {
    /// One per bound, then `+Inf`.
    pub(crate) buckets: Vec<Box<[u8]>>,
    pub(crate) sum: Box<[u8]>,
    pub(crate) count: Box<[u8]>,
}

/// One agent's series as scrapes see them.
#[derive(Debug)]
pub(crate) struct AgentShared {
    pub(crate) name: String,
    pub(crate) buckets: Buckets,
    /// Sample lines of [`SCALARS`], up to the value, in table order.
    pub(crate) scalar_lines: Vec<Box<[u8]>>,
    pub(crate) histogram_lines: [HistogramLines; 2],
    /// Even when no publish is under way; bumped twice per publish.
    seq: AtomicU64,
    fixed: [AtomicU64; slot::COUNT],
    /// Per-bucket (not cumulative) counts, `+Inf` last.
    histograms: [Box<[AtomicU64]>; 2],
    dynamic: Mutex<Arc<[Arc<DynSeries>]>>,
}

/// A consistent reading of one agent.
#[derive(Debug)]
pub(crate) struct Snapshot {
    pub(crate) fixed: [u64; slot::COUNT],
    pub(crate) histograms: [Vec<u64>; 2],
    pub(crate) dynamic: Arc<[Arc<DynSeries>]>,
    pub(crate) dynamic_values: Vec<u64>,
}

impl AgentShared {
    /// A new agent with every fixed series at 0 and the known error statuses.
    fn new(name: &str, hostname: &str, buckets: Buckets) -> AgentShared {
        let scalar_lines = SCALARS
            .iter()
            .map(|s| line(s.sample, None, hostname, name, None))
            .collect();
        let histogram_lines = HISTOGRAMS.map(|h| {
            let bucket_sample = format!("{}_bucket", h.family);
            let mut buckets_lines: Vec<Box<[u8]>> = buckets
                .bounds()
                .iter()
                .map(|&b| {
                    line(
                        &bucket_sample,
                        None,
                        hostname,
                        name,
                        Some(("le", &format_bound(b))),
                    )
                })
                .collect();
            buckets_lines.push(line(
                &bucket_sample,
                None,
                hostname,
                name,
                Some(("le", "+Inf")),
            ));
            HistogramLines {
                buckets: buckets_lines,
                sum: line(&format!("{}_sum", h.family), None, hostname, name, None),
                count: line(&format!("{}_count", h.family), None, hostname, name, None),
            }
        });
        let n = buckets.bounds().len() + 1;
        let zeros = || {
            (0..n)
                .map(|_| AtomicU64::new(0))
                .collect::<Box<[AtomicU64]>>()
        };
        AgentShared {
            name: name.to_owned(),
            buckets,
            scalar_lines,
            histogram_lines,
            seq: AtomicU64::new(0),
            fixed: Default::default(),
            histograms: [zeros(), zeros()],
            dynamic: Mutex::new(Arc::from(Vec::new())),
        }
    }

    /// The publish counter: changes whenever a publish changed something.
    pub(crate) fn version(&self) -> u64 {
        self.seq.load(Ordering::Acquire)
    }

    fn dynamic_list(&self) -> Arc<[Arc<DynSeries>]> {
        Arc::clone(&self.dynamic.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Reads every series of the agent, as one publish left them when it can.
    ///
    /// While a publish overlaps the read, it retries: [`SNAPSHOT_SPINS`] times
    /// at once, then yielding between attempts for up to [`SNAPSHOT_PATIENCE`].
    /// After that it gives up waiting and returns its last read: each value is
    /// then a real reading, but the agent's series may be out of step with
    /// each other (a scrape is never held up by a writer that is descheduled in
    /// the middle of a publish, or that publishes without pause).
    pub(crate) fn snapshot(&self) -> Snapshot {
        let dynamic = self.dynamic_list();
        let mut snap = Snapshot {
            fixed: [0; slot::COUNT],
            histograms: [
                vec![0; self.histograms[0].len()],
                vec![0; self.histograms[1].len()],
            ],
            dynamic_values: vec![0; dynamic.len()],
            dynamic,
        };
        let mut attempt = 0usize;
        let mut give_up_at: Option<Instant> = None;
        loop {
            let before = self.seq.load(Ordering::Acquire);
            let force = give_up_at.is_some_and(|at| Instant::now() >= at);
            if before & 1 == 0 || force {
                for (dst, src) in snap.fixed.iter_mut().zip(&self.fixed) {
                    *dst = src.load(Ordering::Relaxed);
                }
                for (dst, src) in snap.histograms.iter_mut().zip(&self.histograms) {
                    for (d, s) in dst.iter_mut().zip(src.iter()) {
                        *d = s.load(Ordering::Relaxed);
                    }
                }
                for (d, s) in snap.dynamic_values.iter_mut().zip(snap.dynamic.iter()) {
                    *d = s.value.load(Ordering::Relaxed);
                }
                fence(Ordering::Acquire);
                if self.seq.load(Ordering::Relaxed) == before || force {
                    break;
                }
            }
            // A publish overlapped: it never blocks, so it ends as soon as the
            // writer runs again. Spin briefly, then yield, and after a while take
            // the last read rather than wait on a descheduled writer.
            attempt += 1;
            if attempt < SNAPSHOT_SPINS {
                std::hint::spin_loop();
                continue;
            }
            give_up_at.get_or_insert_with(|| Instant::now() + SNAPSHOT_PATIENCE);
            std::thread::yield_now();
        }
        snap
    }
}

/// Index meaning "this name is counted as unmapped".
const UNMAPPED: u32 = u32::MAX;

/// The flush thread's side of one agent: turns events into totals and
/// publishes them to the [`AgentShared`] scrapes read.
pub(crate) struct AgentWriter {
    shared: Arc<AgentShared>,
    hostname: Arc<str>,
    fixed: [u64; slot::COUNT],
    histograms: [Vec<u64>; 2],
    histogram_touched: [bool; 2],
    dynamic: Vec<Arc<DynSeries>>,
    dynamic_values: Vec<u64>,
    dirty: Vec<u32>,
    is_dirty: Vec<bool>,
    names: NameMap<u32>,
    /// Series by (sample or status, category), so names that map to the same
    /// series share it.
    series_index: HashMap<(bool, Box<str>, i32), u32>,
    /// Names mapped beyond the pre-created statuses (bounded by
    /// [`MAX_NAMES_PER_AGENT`]).
    names_taken: usize,
    warned_limit: bool,
    changed: bool,
}

impl std::fmt::Debug for AgentWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentWriter")
            .field("agent", &self.shared.name)
            .field("series", &self.dynamic.len())
            .finish_non_exhaustive()
    }
}

impl AgentWriter {
    /// A writer for a new agent, with its shared side.
    pub(crate) fn new(name: &str, hostname: &str, buckets: Buckets) -> AgentWriter {
        let shared = Arc::new(AgentShared::new(name, hostname, buckets));
        let n = shared.buckets.bounds().len() + 1;
        let mut writer = AgentWriter {
            shared,
            hostname: hostname.into(),
            fixed: [0; slot::COUNT],
            histograms: [vec![0; n], vec![0; n]],
            histogram_touched: [false; 2],
            dynamic: Vec::new(),
            dynamic_values: Vec::new(),
            dirty: Vec::new(),
            is_dirty: Vec::new(),
            names: NameMap::default(),
            series_index: HashMap::new(),
            names_taken: 0,
            warned_limit: false,
            changed: false,
        };
        for status in KNOWN_ERROR_STATUSES {
            let index = writer.error_series(status);
            let raw = format!("NIXL_ERR_{}", status.to_ascii_uppercase());
            writer
                .names
                .insert(NameKey::new(Category::ERROR.0, raw.as_bytes()), index);
        }
        writer.share_dynamic();
        writer
    }

    /// The side scrapes read.
    pub(crate) fn shared(&self) -> &Arc<AgentShared> {
        &self.shared
    }

    /// Records `events` in order, then publishes.
    pub(crate) fn record(&mut self, events: &[Event]) {
        for event in events {
            self.record_one(event);
        }
        if !events.is_empty() {
            self.changed = true;
        }
        self.publish();
    }

    #[inline]
    fn add(&mut self, slot: usize, value: u64) {
        self.fixed[slot] = self.fixed[slot].saturating_add(value);
    }

    #[inline]
    fn observe(&mut self, histogram: usize, value: u64) {
        let bucket = self.shared.buckets.index(value);
        self.histograms[histogram][bucket] += 1;
        self.histogram_touched[histogram] = true;
    }

    #[inline]
    fn record_one(&mut self, event: &Event) {
        let value = event.value;
        let name = event.name_bytes();
        match Category(event.category) {
            Category::TRANSFER => match name {
                names::TX_BYTES_BYTES => {
                    self.add(slot::TX_BYTES, value);
                    self.fixed[slot::TX_LAST] = value;
                }
                names::RX_BYTES_BYTES => {
                    self.add(slot::RX_BYTES, value);
                    self.fixed[slot::RX_LAST] = value;
                }
                names::TX_REQUESTS_BYTES => self.add(slot::TX_REQUESTS, value),
                names::RX_REQUESTS_BYTES => self.add(slot::RX_REQUESTS, value),
                _ => self.per_name(event, name),
            },
            Category::PERFORMANCE => match name {
                names::XFER_TIME_BYTES => {
                    self.add(slot::XFER_TIME, value);
                    self.fixed[slot::XFER_LAST] = value;
                    self.observe(0, value);
                }
                names::XFER_POST_TIME_BYTES => {
                    self.add(slot::POST_TIME, value);
                    self.fixed[slot::POST_LAST] = value;
                    self.observe(1, value);
                }
                _ => self.per_name(event, name),
            },
            Category::MEMORY => match name {
                names::MEMORY_REGISTERED_BYTES => {
                    self.add(slot::MEM_REGISTERED, value);
                    self.fixed[slot::MEM_REGISTERED_LAST] = value;
                }
                names::MEMORY_DEREGISTERED_BYTES => {
                    self.add(slot::MEM_DEREGISTERED, value);
                    self.fixed[slot::MEM_DEREGISTERED_LAST] = value;
                }
                _ => self.per_name(event, name),
            },
            Category::ERROR => self.per_name(event, name),
            Category::SYSTEM => match name {
                names::EVENTS_DROPPED_BYTES => self.add(slot::DROPPED, value),
                _ => self.per_name(event, name),
            },
            Category::BACKEND | Category::CONNECTION | Category::CUSTOM => {
                self.per_name(event, name)
            }
            _ => self.add(slot::UNMAPPED, 1),
        }
    }

    /// An error status or a per-name counter.
    #[inline]
    fn per_name(&mut self, event: &Event, name: &[u8]) {
        let key = NameKey::new(event.category, name);
        let index = match self.names.get(&key) {
            Some(&i) => i,
            None => self.map_name(key, name),
        };
        if index == UNMAPPED {
            self.add(slot::UNMAPPED, 1);
            return;
        }
        let i = index as usize;
        // An error event counts one error; a per-name counter sums values.
        let amount = if event.category == Category::ERROR.0 {
            1
        } else {
            event.value
        };
        self.dynamic_values[i] = self.dynamic_values[i].saturating_add(amount);
        if !self.is_dirty[i] {
            self.is_dirty[i] = true;
            self.dirty.push(index);
        }
    }

    /// Maps a name seen for the first time; `UNMAPPED` past the limit (then the
    /// name is not remembered, so memory stays bounded), except for an error
    /// whose status already has a series (the twelve known ones among them):
    /// it still counts there, unremembered.
    #[cold]
    fn map_name(&mut self, key: NameKey, name: &[u8]) -> u32 {
        if self.names_taken >= MAX_NAMES_PER_AGENT {
            if key.category == Category::ERROR.0 {
                let lookup = (
                    true,
                    Box::<str>::from(error_status(name)),
                    Category::ERROR.0,
                );
                if let Some(&i) = self.series_index.get(&lookup) {
                    return i;
                }
            }
            if !self.warned_limit {
                self.warned_limit = true;
                tracing::warn!(
                    agent = %self.shared.name,
                    name = %String::from_utf8_lossy(name),
                    limit = MAX_NAMES_PER_AGENT,
                    "too many distinct event names; further ones are counted in agent_telemetry_unmapped_events_total"
                );
            }
            return UNMAPPED;
        }
        self.names_taken += 1;
        let category = Category(key.category);
        let index = if category == Category::ERROR {
            let status = error_status(name);
            self.error_series(&status)
        } else {
            match per_name_sample(name, category) {
                Some(sample) => self.named_series(sample, category),
                None => UNMAPPED,
            }
        };
        self.names.insert(key, index);
        self.share_dynamic();
        index
    }

    fn error_series(&mut self, status: &str) -> u32 {
        let lookup = (true, Box::<str>::from(status), Category::ERROR.0);
        if let Some(&i) = self.series_index.get(&lookup) {
            return i;
        }
        let series = DynSeries {
            kind: DynKind::Error,
            line: line(
                ERRORS_SAMPLE,
                None,
                &self.hostname,
                &self.shared.name,
                Some(("status", status)),
            ),
            value: AtomicU64::new(0),
        };
        self.push_series(lookup, series)
    }

    fn named_series(&mut self, sample: String, category: Category) -> u32 {
        let lookup = (false, Box::<str>::from(sample.as_str()), category.0);
        if let Some(&i) = self.series_index.get(&lookup) {
            return i;
        }
        let series = DynSeries {
            line: line(
                &sample,
                Some(category),
                &self.hostname,
                &self.shared.name,
                None,
            ),
            kind: DynKind::Named(sample.into()),
            value: AtomicU64::new(0),
        };
        self.push_series(lookup, series)
    }

    fn push_series(&mut self, lookup: (bool, Box<str>, i32), series: DynSeries) -> u32 {
        let index = self.dynamic.len() as u32;
        self.dynamic.push(Arc::new(series));
        self.dynamic_values.push(0);
        self.is_dirty.push(false);
        self.series_index.insert(lookup, index);
        index
    }

    /// Makes the current list of run-time series visible to scrapes.
    fn share_dynamic(&mut self) {
        let list: Arc<[Arc<DynSeries>]> = Arc::from(self.dynamic.as_slice());
        *self
            .shared
            .dynamic
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = list;
    }

    /// Copies the totals into the shared atomics under the sequence lock.
    fn publish(&mut self) {
        if !self.changed {
            return;
        }
        self.changed = false;
        let shared = &*self.shared;
        let seq = shared.seq.load(Ordering::Relaxed);
        shared.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        for (dst, &src) in shared.fixed.iter().zip(&self.fixed) {
            dst.store(src, Ordering::Relaxed);
        }
        for h in 0..2 {
            if std::mem::take(&mut self.histogram_touched[h]) {
                for (dst, &src) in shared.histograms[h].iter().zip(&self.histograms[h]) {
                    dst.store(src, Ordering::Relaxed);
                }
            }
        }
        for &i in &self.dirty {
            let i = i as usize;
            self.dynamic[i]
                .value
                .store(self.dynamic_values[i], Ordering::Relaxed);
            self.is_dirty[i] = false;
        }
        self.dirty.clear();
        shared.seq.store(seq.wrapping_add(2), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(category: Category, name: &str, value: u64) -> Event {
        Event::new(1, category, name, value)
    }

    fn writer() -> AgentWriter {
        AgentWriter::new("agent-a", "host", Buckets::new(&[10.0, 100.0]).unwrap())
    }

    fn dynamic(snap: &Snapshot) -> Vec<(String, u64)> {
        snap.dynamic
            .iter()
            .zip(&snap.dynamic_values)
            .map(|(s, &v)| (String::from_utf8_lossy(&s.line).into_owned(), v))
            .collect()
    }

    #[test]
    fn builtin_events_fill_their_slots() {
        let mut w = writer();
        w.record(&[
            ev(Category::TRANSFER, "agent_tx_bytes", 100),
            ev(Category::TRANSFER, "agent_tx_bytes", 50),
            ev(Category::TRANSFER, "agent_tx_requests_num", 1),
            ev(Category::TRANSFER, "agent_rx_bytes", 7),
            ev(Category::TRANSFER, "agent_rx_requests_num", 1),
            ev(Category::MEMORY, "agent_memory_registered", 4096),
            ev(Category::MEMORY, "agent_memory_deregistered", 1024),
            ev(Category::PERFORMANCE, "agent_xfer_time", 5),
            ev(Category::PERFORMANCE, "agent_xfer_time", 500),
            ev(Category::PERFORMANCE, "agent_xfer_post_time", 50),
            ev(Category::SYSTEM, "agent_telemetry_events_dropped", 3),
            ev(Category(99), "whatever", 1),
        ]);
        let s = w.shared().snapshot();
        assert_eq!(s.fixed[slot::TX_BYTES], 150);
        assert_eq!(s.fixed[slot::TX_LAST], 50);
        assert_eq!(s.fixed[slot::TX_REQUESTS], 1);
        assert_eq!(s.fixed[slot::RX_BYTES], 7);
        assert_eq!(s.fixed[slot::RX_REQUESTS], 1);
        assert_eq!(s.fixed[slot::MEM_REGISTERED], 4096);
        assert_eq!(s.fixed[slot::MEM_DEREGISTERED_LAST], 1024);
        assert_eq!(s.fixed[slot::XFER_TIME], 505);
        assert_eq!(s.fixed[slot::XFER_LAST], 500);
        assert_eq!(s.fixed[slot::POST_TIME], 50);
        assert_eq!(s.histograms[0], [1, 0, 1]);
        assert_eq!(s.histograms[1], [0, 1, 0]);
        assert_eq!(s.fixed[slot::DROPPED], 3);
        assert_eq!(s.fixed[slot::UNMAPPED], 1);
    }

    #[test]
    fn counters_saturate_instead_of_wrapping() {
        let mut w = writer();
        w.record(&[
            ev(Category::TRANSFER, "agent_tx_bytes", u64::MAX),
            ev(Category::TRANSFER, "agent_tx_bytes", 5),
        ]);
        assert_eq!(w.shared().snapshot().fixed[slot::TX_BYTES], u64::MAX);
    }

    #[test]
    fn known_statuses_exist_at_zero_and_others_appear_on_first_sight() {
        let mut w = writer();
        let s = w.shared().snapshot();
        assert_eq!(s.dynamic.len(), KNOWN_ERROR_STATUSES.len());
        assert!(s.dynamic_values.iter().all(|&v| v == 0));
        w.record(&[
            ev(Category::ERROR, "NIXL_ERR_BACKEND", 1),
            ev(Category::ERROR, "NIXL_ERR_BACKEND", 1),
            ev(Category::ERROR, "nixl_err_backend", 1),
            ev(Category::ERROR, "NIXL_ERR_SOMETHING_NEW", 1),
        ]);
        let d = dynamic(&w.shared().snapshot());
        let backend = d
            .iter()
            .find(|(l, _)| l.contains("status=\"backend\""))
            .unwrap();
        assert_eq!(backend.1, 3);
        let new = d.last().unwrap();
        assert!(new
            .0
            .starts_with("agent_errors_total{agent_name=\"agent-a\",hostname=\"host\",status="));
        assert!(new.0.contains("status=\"something_new\""), "{}", new.0);
        assert_eq!(new.1, 1);
        assert_eq!(d.len(), KNOWN_ERROR_STATUSES.len() + 1);
    }

    #[test]
    fn per_name_counters_sum_values_by_category() {
        let mut w = writer();
        w.record(&[
            ev(Category::BACKEND, "ucx.rndv", 2),
            ev(Category::BACKEND, "ucx-rndv", 3),
            ev(Category::CUSTOM, "ucx.rndv", 10),
            ev(Category::CONNECTION, "agent_connect", 1),
            ev(Category::TRANSFER, "agent_tx_other", 4),
        ]);
        let d = dynamic(&w.shared().snapshot());
        let named: Vec<_> = d[KNOWN_ERROR_STATUSES.len()..].to_vec();
        assert_eq!(
            named,
            [
                (
                    "ucx_rndv_total{agent_name=\"agent-a\",hostname=\"host\",category=\"BACKEND\"} "
                        .to_owned(),
                    5
                ),
                (
                    "ucx_rndv_total{agent_name=\"agent-a\",hostname=\"host\",category=\"CUSTOM\"} "
                        .to_owned(),
                    10
                ),
                (
                    "agent_connect_total{agent_name=\"agent-a\",hostname=\"host\",category=\"CONNECTION\"} "
                        .to_owned(),
                    1
                ),
                (
                    "agent_tx_other_total{agent_name=\"agent-a\",hostname=\"host\",category=\"TRANSFER\"} "
                        .to_owned(),
                    4
                ),
            ]
        );
    }

    #[test]
    fn names_past_the_limit_are_counted_as_unmapped() {
        let mut w = writer();
        let events: Vec<Event> = (0..MAX_NAMES_PER_AGENT + 10)
            .map(|i| ev(Category::BACKEND, &format!("name_{i}"), 1))
            .collect();
        w.record(&events);
        // Names seen before the limit keep counting.
        w.record(&[ev(Category::BACKEND, "name_0", 1)]);
        let s = w.shared().snapshot();
        assert_eq!(
            s.dynamic.len(),
            KNOWN_ERROR_STATUSES.len() + MAX_NAMES_PER_AGENT
        );
        assert_eq!(s.fixed[slot::UNMAPPED], 10);
        let d = dynamic(&s);
        assert!(d[KNOWN_ERROR_STATUSES.len()].0.starts_with("name_0_total{"));
        assert_eq!(d[KNOWN_ERROR_STATUSES.len()].1, 2);
        assert!(w.names.len() <= KNOWN_ERROR_STATUSES.len() + MAX_NAMES_PER_AGENT);
    }

    #[test]
    fn known_statuses_count_even_past_the_limit() {
        let mut w = writer();
        let events: Vec<Event> = (0..MAX_NAMES_PER_AGENT)
            .map(|i| ev(Category::CUSTOM, &format!("name_{i}"), 1))
            .collect();
        w.record(&events);
        let remembered = w.names.len();
        // Spellings not seen before, of a known status and of one seen before
        // the limit; then a new status, which has no room.
        w.record(&[
            ev(Category::ERROR, "nixl_err_backend", 1),
            ev(Category::ERROR, "BACKEND", 1),
        ]);
        let s = w.shared().snapshot();
        let d = dynamic(&s);
        let backend = d
            .iter()
            .find(|(line, _)| line.contains("status=\"backend\""))
            .unwrap();
        assert_eq!(backend.1, 2);
        assert_eq!(s.fixed[slot::UNMAPPED], 0);
        w.record(&[ev(Category::ERROR, "NIXL_ERR_BRAND_NEW", 1)]);
        assert_eq!(w.shared().snapshot().fixed[slot::UNMAPPED], 1);
        // Nothing more is remembered past the limit.
        assert_eq!(w.names.len(), remembered);
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
                    assert_eq!(s.fixed[slot::TX_BYTES], s.fixed[slot::TX_REQUESTS] * 4096);
                    assert_eq!(
                        s.histograms[0].iter().sum::<u64>(),
                        s.fixed[slot::TX_REQUESTS]
                    );
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
