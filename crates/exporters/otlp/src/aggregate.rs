//! One agent's metrics as the flush thread folds events into them: plain
//! (non-atomic) running totals, bounded in size whatever the events are.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::Arc;

use crate::families::{slot, KNOWN_ERROR_STATUSES};
use nixl_telemetry_abi::buckets::Buckets;
use nixl_telemetry_abi::{Category, Event, EVENT_NAME_CAPACITY};
use nixl_telemetry_prometheus_core::families::is_agent_family_name;
use nixl_telemetry_prometheus_core::names::{
    error_status as error_status_of, per_name_sample_avoiding,
};

/// The most distinct (category, name) pairs one agent maps to per-name Sums or
/// to error statuses other than the known ones (the Prometheus plug-in's
/// limit). Further names are counted in `agent_telemetry_unmapped_events_total`.
pub use nixl_telemetry_prometheus_core::MAX_NAMES_PER_AGENT;

/// The name of the per-name Sum of events `name` in `category`: the
/// Prometheus plug-in's per-name counter name, avoiding the fixed families'
/// names (there are no HTTP server families here).
fn per_name_counter_name(name: &[u8], category: Category) -> Option<String> {
    per_name_sample_avoiding(name, category, is_agent_family_name)
}

/// A data point created at run time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Series {
    /// `agent_errors_total` with this `status`.
    Error(Box<str>),
    /// A per-name Sum: the metric name and the event category.
    Named(Box<str>, Category),
}

/// One latency histogram's running state.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HistogramTotals {
    /// Per-bucket (not cumulative) counts, the overflow bucket last.
    pub counts: Vec<u64>,
    /// Observations.
    pub count: u64,
    /// Sum of the observed values, µs.
    pub sum: u64,
    /// Smallest and largest observed value, once there is one.
    pub min_max: Option<(u64, u64)>,
}

/// Everything one agent has recorded, as sent.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Totals {
    /// The fixed readings (`families::slot`).
    pub(crate) fixed: [u64; slot::COUNT],
    /// `agent_xfer_time_us`, `agent_xfer_post_time_us`.
    pub histograms: [HistogramTotals; 2],
    /// The run-time series (error statuses, per-name Sums), in order of first sight.
    pub series: Arc<[Series]>,
    /// Their values, index for index.
    pub series_values: Vec<u64>,
    /// Events folded in so far.
    pub events: u64,
}

impl Totals {
    /// Copies `other` into `self`, reusing `self`'s allocations.
    pub fn copy_from(&mut self, other: &Totals) {
        self.fixed = other.fixed;
        for (dst, src) in self.histograms.iter_mut().zip(&other.histograms) {
            dst.counts.clone_from(&src.counts);
            dst.count = src.count;
            dst.sum = src.sum;
            dst.min_max = src.min_max;
        }
        if !Arc::ptr_eq(&self.series, &other.series) {
            self.series = Arc::clone(&other.series);
        }
        self.series_values.clone_from(&other.series_values);
        self.events = other.events;
    }

    /// The fixed reading `slot`.
    pub(crate) fn slot(&self, slot: usize) -> u64 {
        self.fixed[slot]
    }
}

/// Key of the name cache: the category and the NUL-padded name.
#[derive(Clone, Copy, PartialEq, Eq)]
struct NameKey {
    category: i32,
    name: [u8; EVENT_NAME_CAPACITY],
}

impl Hash for NameKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_i32(self.category);
        state.write(&self.name);
    }
}

/// A multiplicative hash for the name cache (keys are the host's own event
/// names and the cache is bounded: no defence against chosen collisions needed).
#[derive(Default, Clone, Copy)]
struct NameHasher(u64);

impl Hasher for NameHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
    }
    #[inline]
    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    #[inline]
    fn write_i32(&mut self, i: i32) {
        self.write_u64(i as u32 as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

type NameMap<V> = HashMap<NameKey, V, BuildHasherDefault<NameHasher>>;

/// The built-in events, each with a fixed place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Builtin {
    TxBytes,
    RxBytes,
    TxRequests,
    RxRequests,
    XferTime,
    PostTime,
    MemRegistered,
    MemDeregistered,
    Dropped,
}

/// The built-in event `name` is in `category`, if it is one.
fn builtin(category: i32, name: &[u8]) -> Option<Builtin> {
    Some(match (Category(category), name) {
        (Category::TRANSFER, b"agent_tx_bytes") => Builtin::TxBytes,
        (Category::TRANSFER, b"agent_rx_bytes") => Builtin::RxBytes,
        (Category::TRANSFER, b"agent_tx_requests_num") => Builtin::TxRequests,
        (Category::TRANSFER, b"agent_rx_requests_num") => Builtin::RxRequests,
        (Category::PERFORMANCE, b"agent_xfer_time") => Builtin::XferTime,
        (Category::PERFORMANCE, b"agent_xfer_post_time") => Builtin::PostTime,
        (Category::MEMORY, b"agent_memory_registered") => Builtin::MemRegistered,
        (Category::MEMORY, b"agent_memory_deregistered") => Builtin::MemDeregistered,
        (Category::SYSTEM, b"agent_telemetry_events_dropped") => Builtin::Dropped,
        _ => return None,
    })
}

/// `name` NUL-padded to the event's name field.
const fn padded(name: &str) -> [u8; EVENT_NAME_CAPACITY] {
    let bytes = name.as_bytes();
    let mut out = [0u8; EVENT_NAME_CAPACITY];
    let mut i = 0;
    while i < bytes.len() {
        out[i] = bytes[i];
        i += 1;
    }
    out
}

const TX_BYTES: [u8; EVENT_NAME_CAPACITY] = padded("agent_tx_bytes");
const RX_BYTES: [u8; EVENT_NAME_CAPACITY] = padded("agent_rx_bytes");
const TX_REQUESTS: [u8; EVENT_NAME_CAPACITY] = padded("agent_tx_requests_num");
const RX_REQUESTS: [u8; EVENT_NAME_CAPACITY] = padded("agent_rx_requests_num");
const XFER_TIME: [u8; EVENT_NAME_CAPACITY] = padded("agent_xfer_time");
const POST_TIME: [u8; EVENT_NAME_CAPACITY] = padded("agent_xfer_post_time");

/// The frequent built-in events by whole-field comparison (a few vector
/// compares instead of a scan for the NUL).
#[inline]
fn builtin_padded(category: i32, name: &[u8; EVENT_NAME_CAPACITY]) -> Option<Builtin> {
    match Category(category) {
        Category::TRANSFER => {
            if *name == TX_REQUESTS {
                Some(Builtin::TxRequests)
            } else if *name == TX_BYTES {
                Some(Builtin::TxBytes)
            } else if *name == RX_REQUESTS {
                Some(Builtin::RxRequests)
            } else if *name == RX_BYTES {
                Some(Builtin::RxBytes)
            } else {
                None
            }
        }
        Category::PERFORMANCE => {
            if *name == XFER_TIME {
                Some(Builtin::XferTime)
            } else if *name == POST_TIME {
                Some(Builtin::PostTime)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Index meaning "this name is counted as unmapped".
const UNMAPPED: u32 = u32::MAX;

fn key(category: i32, name: &[u8]) -> NameKey {
    let mut padded = [0u8; EVENT_NAME_CAPACITY];
    let n = name.len().min(EVENT_NAME_CAPACITY);
    padded[..n].copy_from_slice(&name[..n]);
    NameKey {
        category,
        name: padded,
    }
}

/// The flush thread's side of one agent: folds events into [`Totals`].
///
/// Names other than the built-in events map to per-name Sums or error
/// statuses; past [`MAX_NAMES_PER_AGENT`] distinct names, further ones are
/// counted in `agent_telemetry_unmapped_events_total`, so memory stays bounded.
#[derive(Debug)]
pub struct AgentAggregator {
    totals: Totals,
    buckets: Buckets,
    series: Vec<Series>,
    names: NameMap<u32>,
    series_index: HashMap<Series, u32>,
    names_taken: usize,
    warned_limit: bool,
}

impl std::fmt::Debug for NameKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}",
            self.category,
            String::from_utf8_lossy(&self.name)
        )
    }
}

impl std::hash::Hash for Series {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            Series::Error(s) => {
                0u8.hash(state);
                s.hash(state);
            }
            Series::Named(s, c) => {
                1u8.hash(state);
                s.hash(state);
                c.0.hash(state);
            }
        }
    }
}

impl AgentAggregator {
    /// An agent with every reading at 0 and the known error statuses present.
    pub fn new(buckets: Buckets) -> AgentAggregator {
        let n = buckets.bounds().len() + 1;
        let mut aggregator = AgentAggregator {
            totals: Totals {
                histograms: [
                    HistogramTotals {
                        counts: vec![0; n],
                        ..HistogramTotals::default()
                    },
                    HistogramTotals {
                        counts: vec![0; n],
                        ..HistogramTotals::default()
                    },
                ],
                ..Totals::default()
            },
            buckets,
            series: Vec::new(),
            names: NameMap::default(),
            series_index: HashMap::new(),
            names_taken: 0,
            warned_limit: false,
        };
        for status in KNOWN_ERROR_STATUSES {
            let index = aggregator.push_series(Series::Error(status.into()));
            let raw = format!("NIXL_ERR_{}", status.to_ascii_uppercase());
            aggregator
                .names
                .insert(key(Category::ERROR.0, raw.as_bytes()), index);
        }
        aggregator.share_series();
        aggregator
    }

    /// The totals so far.
    pub fn totals(&self) -> &Totals {
        &self.totals
    }

    /// Folds `events` in, in order.
    pub fn record(&mut self, events: &[Event]) {
        for event in events {
            self.record_one(event);
        }
        self.totals.events += events.len() as u64;
    }

    #[inline]
    fn add(&mut self, slot: usize, value: u64) {
        let v = &mut self.totals.fixed[slot];
        *v = v.saturating_add(value);
    }

    #[inline]
    fn observe(&mut self, histogram: usize, value: u64) {
        let bucket = self.buckets.index(value);
        let h = &mut self.totals.histograms[histogram];
        h.counts[bucket] += 1;
        h.count += 1;
        h.sum = h.sum.saturating_add(value);
        h.min_max = Some(match h.min_max {
            Some((lo, hi)) => (lo.min(value), hi.max(value)),
            None => (value, value),
        });
    }

    #[inline]
    fn record_one(&mut self, event: &Event) {
        // Well-formed names are NUL-padded: compare the whole field at once;
        // anything else takes the slower path, with the same meaning.
        let builtin = match builtin_padded(event.category, &event.event_name) {
            Some(b) => Some(b),
            None => builtin(event.category, event.name_bytes()),
        };
        let value = event.value;
        match builtin {
            Some(Builtin::TxBytes) => {
                self.add(slot::TX_BYTES, value);
                self.totals.fixed[slot::TX_LAST] = value;
            }
            Some(Builtin::RxBytes) => {
                self.add(slot::RX_BYTES, value);
                self.totals.fixed[slot::RX_LAST] = value;
            }
            Some(Builtin::TxRequests) => self.add(slot::TX_REQUESTS, value),
            Some(Builtin::RxRequests) => self.add(slot::RX_REQUESTS, value),
            Some(Builtin::XferTime) => {
                self.add(slot::XFER_TIME, value);
                self.totals.fixed[slot::XFER_LAST] = value;
                self.observe(0, value);
            }
            Some(Builtin::PostTime) => {
                self.add(slot::POST_TIME, value);
                self.totals.fixed[slot::POST_LAST] = value;
                self.observe(1, value);
            }
            Some(Builtin::MemRegistered) => {
                self.add(slot::MEM_REGISTERED, value);
                self.totals.fixed[slot::MEM_REGISTERED_LAST] = value;
            }
            Some(Builtin::MemDeregistered) => {
                self.add(slot::MEM_DEREGISTERED, value);
                self.totals.fixed[slot::MEM_DEREGISTERED_LAST] = value;
            }
            Some(Builtin::Dropped) => self.add(slot::DROPPED, value),
            None => match Category(event.category) {
                Category::TRANSFER
                | Category::PERFORMANCE
                | Category::MEMORY
                | Category::SYSTEM
                | Category::ERROR
                | Category::BACKEND
                | Category::CONNECTION
                | Category::CUSTOM => self.per_name(event, event.name_bytes()),
                _ => self.add(slot::UNMAPPED, 1),
            },
        }
    }

    /// An error status or a per-name Sum.
    #[inline]
    fn per_name(&mut self, event: &Event, name: &[u8]) {
        let key = key(event.category, name);
        let index = match self.names.get(&key) {
            Some(&i) => i,
            None => self.map_name(key, name),
        };
        if index == UNMAPPED {
            self.add(slot::UNMAPPED, 1);
            return;
        }
        // An error event counts one error; a per-name Sum adds values.
        let amount = if event.category == Category::ERROR.0 {
            1
        } else {
            event.value
        };
        let v = &mut self.totals.series_values[index as usize];
        *v = v.saturating_add(amount);
    }

    /// Maps a name seen for the first time (the Prometheus plug-in's rules).
    #[cold]
    fn map_name(&mut self, key: NameKey, name: &[u8]) -> u32 {
        let category = Category(key.category);
        if self.names_taken >= MAX_NAMES_PER_AGENT {
            // An error whose status already has a data point still counts there.
            if category == Category::ERROR {
                let series = Series::Error(error_status_of(name).into());
                if let Some(&i) = self.series_index.get(&series) {
                    return i;
                }
            }
            if !self.warned_limit {
                self.warned_limit = true;
                tracing::warn!(
                    name = %String::from_utf8_lossy(name),
                    limit = MAX_NAMES_PER_AGENT,
                    "too many distinct event names; further ones are counted in agent_telemetry_unmapped_events_total"
                );
            }
            return UNMAPPED;
        }
        self.names_taken += 1;
        let series = if category == Category::ERROR {
            Some(Series::Error(error_status_of(name).into()))
        } else {
            per_name_counter_name(name, category).map(|n| Series::Named(n.into(), category))
        };
        let index = match series {
            Some(series) => match self.series_index.get(&series) {
                Some(&i) => i,
                None => {
                    let i = self.push_series(series);
                    self.share_series();
                    i
                }
            },
            None => UNMAPPED,
        };
        self.names.insert(key, index);
        index
    }

    fn push_series(&mut self, series: Series) -> u32 {
        let index = self.series.len() as u32;
        self.series_index.insert(series.clone(), index);
        self.series.push(series);
        self.totals.series_values.push(0);
        index
    }

    fn share_series(&mut self) {
        self.totals.series = Arc::from(self.series.as_slice());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(category: Category, name: &str, value: u64) -> Event {
        Event::new(1, category, name, value)
    }

    fn aggregator() -> AgentAggregator {
        AgentAggregator::new(Buckets::new(&[10.0, 100.0]).unwrap())
    }

    fn series_value(t: &Totals, wanted: &Series) -> u64 {
        let i = t.series.iter().position(|s| s == wanted).unwrap();
        t.series_values[i]
    }

    #[test]
    fn builtin_events_fill_their_slots_and_histograms() {
        let mut a = aggregator();
        a.record(&[
            ev(Category::TRANSFER, "agent_tx_bytes", 100),
            ev(Category::TRANSFER, "agent_tx_bytes", 50),
            ev(Category::TRANSFER, "agent_tx_requests_num", 1),
            ev(Category::MEMORY, "agent_memory_registered", 4096),
            ev(Category::MEMORY, "agent_memory_deregistered", 1024),
            ev(Category::PERFORMANCE, "agent_xfer_time", 5),
            ev(Category::PERFORMANCE, "agent_xfer_time", 500),
            ev(Category::PERFORMANCE, "agent_xfer_post_time", 50),
            ev(Category::SYSTEM, "agent_telemetry_events_dropped", 3),
            ev(Category(99), "whatever", 1),
        ]);
        let t = a.totals();
        assert_eq!(t.slot(slot::TX_BYTES), 150);
        assert_eq!(t.slot(slot::TX_LAST), 50);
        assert_eq!(t.slot(slot::TX_REQUESTS), 1);
        assert_eq!(t.slot(slot::MEM_REGISTERED), 4096);
        assert_eq!(t.slot(slot::MEM_DEREGISTERED_LAST), 1024);
        assert_eq!(t.slot(slot::XFER_TIME), 505);
        assert_eq!(t.slot(slot::DROPPED), 3);
        assert_eq!(t.slot(slot::UNMAPPED), 1);
        assert_eq!(t.histograms[0].counts, [1, 0, 1]);
        assert_eq!(t.histograms[0].count, 2);
        assert_eq!(t.histograms[0].sum, 505);
        assert_eq!(t.histograms[0].min_max, Some((5, 500)));
        assert_eq!(t.histograms[1].counts, [0, 1, 0]);
        assert_eq!(t.events, 10);
    }

    #[test]
    fn errors_count_one_each_and_names_sum_values() {
        let mut a = aggregator();
        assert_eq!(a.totals().series.len(), KNOWN_ERROR_STATUSES.len());
        a.record(&[
            ev(Category::ERROR, "NIXL_ERR_BACKEND", 1),
            ev(Category::ERROR, "nixl_err_backend", 7),
            ev(Category::ERROR, "NIXL_ERR_SOMETHING_NEW", 1),
            ev(Category::BACKEND, "ucx.rndv", 2),
            ev(Category::BACKEND, "ucx-rndv", 3),
            ev(Category::CUSTOM, "agent_tx_bytes", 10),
        ]);
        let t = a.totals();
        assert_eq!(series_value(t, &Series::Error("backend".into())), 2);
        assert_eq!(series_value(t, &Series::Error("something_new".into())), 1);
        assert_eq!(
            series_value(
                t,
                &Series::Named("ucx_rndv_total".into(), Category::BACKEND)
            ),
            5
        );
        assert_eq!(
            series_value(
                t,
                &Series::Named("custom_agent_tx_bytes_total".into(), Category::CUSTOM)
            ),
            10
        );
        assert_eq!(t.series.len(), t.series_values.len());
    }

    #[test]
    fn names_past_the_limit_are_unmapped_and_memory_stays_bounded() {
        let mut a = aggregator();
        let events: Vec<Event> = (0..MAX_NAMES_PER_AGENT + 10)
            .map(|i| ev(Category::BACKEND, &format!("name_{i}"), 1))
            .collect();
        a.record(&events);
        a.record(&[
            ev(Category::BACKEND, "name_0", 1),
            ev(Category::ERROR, "NIXL_ERR_BACKEND", 1),
            ev(Category::ERROR, "NIXL_ERR_BRAND_NEW", 1),
        ]);
        let t = a.totals();
        assert_eq!(t.slot(slot::UNMAPPED), 11);
        assert_eq!(
            series_value(t, &Series::Named("name_0_total".into(), Category::BACKEND)),
            2
        );
        assert_eq!(series_value(t, &Series::Error("backend".into())), 1);
        assert_eq!(
            t.series.len(),
            KNOWN_ERROR_STATUSES.len() + MAX_NAMES_PER_AGENT
        );
        assert!(a.names.len() <= KNOWN_ERROR_STATUSES.len() + MAX_NAMES_PER_AGENT);
    }

    #[test]
    fn names_with_bytes_after_the_nul_mean_the_same() {
        let mut a = aggregator();
        let mut e = ev(Category::TRANSFER, "agent_tx_bytes", 5);
        e.event_name[20] = b'x';
        let mut p = ev(Category::PERFORMANCE, "agent_xfer_time", 50);
        p.event_name[30] = 1;
        a.record(&[e, p]);
        assert_eq!(a.totals().slot(slot::TX_BYTES), 5);
        assert_eq!(a.totals().histograms[0].counts, [0, 1, 0]);
        assert_eq!(a.totals().series.len(), KNOWN_ERROR_STATUSES.len());
    }

    #[test]
    fn copies_reuse_the_series_list() {
        let mut a = aggregator();
        a.record(&[ev(Category::CUSTOM, "x", 1)]);
        let mut copy = Totals::default();
        copy.copy_from(a.totals());
        assert_eq!(&copy, a.totals());
        assert!(Arc::ptr_eq(&copy.series, &a.totals().series));
    }
}
