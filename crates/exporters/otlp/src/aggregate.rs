//! One agent's metrics as the flush thread folds events into them: plain
//! (non-atomic) running totals, bounded in size whatever the events are.

use std::collections::HashMap;
use std::hash::Hasher;
use std::sync::Arc;

use crate::families::{slot, KNOWN_ERROR_STATUSES};
use nixl_telemetry_abi::buckets::Buckets;
use nixl_telemetry_abi::{names, Category, Event, EVENT_NAME_CAPACITY};
use nixl_telemetry_prometheus_core::external::{effect, EventEffect};
use nixl_telemetry_prometheus_core::families::is_agent_family_name;
use nixl_telemetry_prometheus_core::name_cache::{NameKey, NameMap};
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

const TX_BYTES: [u8; EVENT_NAME_CAPACITY] = padded(names::TX_BYTES);
const RX_BYTES: [u8; EVENT_NAME_CAPACITY] = padded(names::RX_BYTES);
const TX_REQUESTS: [u8; EVENT_NAME_CAPACITY] = padded(names::TX_REQUESTS);
const RX_REQUESTS: [u8; EVENT_NAME_CAPACITY] = padded(names::RX_REQUESTS);
const XFER_TIME: [u8; EVENT_NAME_CAPACITY] = padded(names::XFER_TIME);
const POST_TIME: [u8; EVENT_NAME_CAPACITY] = padded(names::XFER_POST_TIME);

/// The frequent built-in events, each with its NUL-padded name: the
/// aggregator keeps their effects ([`effect`]) so that these events skip the
/// scan for the NUL and the name match.
const FREQUENT: [(Category, &[u8]); 6] = [
    (Category::TRANSFER, names::TX_REQUESTS_BYTES),
    (Category::TRANSFER, names::TX_BYTES_BYTES),
    (Category::TRANSFER, names::RX_REQUESTS_BYTES),
    (Category::TRANSFER, names::RX_BYTES_BYTES),
    (Category::PERFORMANCE, names::XFER_TIME_BYTES),
    (Category::PERFORMANCE, names::XFER_POST_TIME_BYTES),
];

/// The index in [`FREQUENT`] of a frequent built-in event, by whole-field
/// comparison (a few vector compares); `None` for any other event.
#[inline]
fn frequent_index(category: i32, name: &[u8; EVENT_NAME_CAPACITY]) -> Option<usize> {
    match Category(category) {
        Category::TRANSFER => {
            if *name == TX_REQUESTS {
                Some(0)
            } else if *name == TX_BYTES {
                Some(1)
            } else if *name == RX_REQUESTS {
                Some(2)
            } else if *name == RX_BYTES {
                Some(3)
            } else {
                None
            }
        }
        Category::PERFORMANCE => {
            if *name == XFER_TIME {
                Some(4)
            } else if *name == POST_TIME {
                Some(5)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Index meaning "this name is counted as unmapped".
const UNMAPPED: u32 = u32::MAX;

/// The flush thread's side of one agent: folds events into [`Totals`].
///
/// Names other than the built-in events map to per-name Sums or error
/// statuses; past [`MAX_NAMES_PER_AGENT`] distinct names, further ones are
/// counted in `agent_telemetry_unmapped_events_total`, so memory stays bounded.
#[derive(Debug)]
pub struct AgentAggregator {
    totals: Totals,
    buckets: Buckets,
    /// The effects of the [`FREQUENT`] events, index for index.
    frequent: [EventEffect; FREQUENT.len()],
    series: Vec<Series>,
    names: NameMap<u32>,
    series_index: HashMap<Series, u32>,
    names_taken: usize,
    warned_limit: bool,
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
            frequent: FREQUENT.map(|(category, name)| effect(category, name)),
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
                .insert(NameKey::new(Category::ERROR.0, raw.as_bytes()), index);
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
        let value = event.value;
        // The Prometheus plug-ins' mapping: the same event feeds the same family.
        let (effect, name) = match frequent_index(event.category, &event.event_name) {
            Some(i) => (self.frequent[i], FREQUENT[i].1),
            None => {
                let name = event.name_bytes();
                (effect(Category(event.category), name), name)
            }
        };
        match effect {
            EventEffect::Builtin {
                sum,
                last,
                histogram,
            } => {
                self.add(sum, value);
                if let Some(last) = last {
                    self.totals.fixed[last] = value;
                }
                if let Some(histogram) = histogram {
                    self.observe(histogram, value);
                }
            }
            EventEffect::PerName => self.per_name(event, name),
            EventEffect::Unmapped => self.add(slot::UNMAPPED, 1),
        }
    }

    /// An error status or a per-name Sum.
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
    fn the_fast_path_finds_each_frequent_event_at_its_index() {
        for (i, (category, name)) in FREQUENT.iter().enumerate() {
            let mut field = [0u8; EVENT_NAME_CAPACITY];
            field[..name.len()].copy_from_slice(name);
            assert_eq!(frequent_index(category.0, &field), Some(i));
            assert!(matches!(
                effect(*category, name),
                EventEffect::Builtin { .. }
            ));
        }
        let mut field = [0u8; EVENT_NAME_CAPACITY];
        field[..names::TX_BYTES.len()].copy_from_slice(names::TX_BYTES_BYTES);
        assert_eq!(frequent_index(Category::PERFORMANCE.0, &field), None);
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
