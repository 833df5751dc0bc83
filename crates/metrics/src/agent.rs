//! The fold: one agent's events turned into its [`Totals`], with a record of
//! what changed for the publisher.

use std::ops::Range;
use std::sync::Arc;

use nixl_telemetry_abi::buckets::Buckets;
use nixl_telemetry_abi::{Category, Event};

use crate::families::{histogram, slot};
use crate::mapping::{effect, frequent, EventEffect};
use crate::naming::SeriesNaming;
use crate::series::{Series, SeriesMap};
use crate::totals::{HistogramTotals, Totals};

/// One agent's metrics, as the thread that receives its events keeps them:
/// plain (non-atomic) running totals, bounded in size whatever the events are.
///
/// [`AgentMetrics::record`] folds events in; [`AgentMetrics::totals`] is the
/// read view. An exporter publishes the totals its own way (atomics behind a
/// sequence lock, a shared-memory store, a copy pushed over the network),
/// copying only what [`AgentMetrics::changes`] says changed and then calling
/// [`AgentMetrics::clear_changes`].
///
/// ```
/// use nixl_telemetry_abi::buckets::Buckets;
/// use nixl_telemetry_abi::{Category, Event};
/// use nixl_telemetry_metrics::{histogram, slot, AgentMetrics, SeriesNaming};
///
/// let mut agent = AgentMetrics::new("initiator", Buckets::default(), SeriesNaming::Prometheus);
/// agent.record(&[
///     Event::new(1, Category::TRANSFER, "agent_tx_bytes", 4096),
///     Event::new(1, Category::PERFORMANCE, "agent_xfer_time", 120),
///     Event::new(1, Category::ERROR, "NIXL_ERR_BACKEND", 1),
/// ]);
/// let totals = agent.totals();
/// assert_eq!(totals.fixed(slot::TX_BYTES), 4096);
/// assert_eq!(totals.error_count("backend"), Some(1));
/// assert_eq!(totals.histogram(histogram::XFER_TIME).quantile(0.5), Some(175.0));
/// ```
#[derive(Debug)]
pub struct AgentMetrics {
    buckets: Buckets,
    totals: Totals,
    map: SeriesMap,
    changes: ChangeLog,
}

/// What changed since the publisher last looked.
#[derive(Debug, Default)]
struct ChangeLog {
    any: bool,
    histograms: [bool; histogram::COUNT],
    /// Series whose values changed, each once.
    values: Vec<u32>,
    is_dirty: Vec<bool>,
    /// Series published so far (the list only grows).
    published_series: usize,
}

/// What changed in an agent's totals since the last
/// [`AgentMetrics::clear_changes`]: a publisher copies these and nothing else.
#[derive(Debug, Clone, Copy)]
pub struct Changes<'a> {
    log: &'a ChangeLog,
    series_len: usize,
}

impl Changes<'_> {
    /// Whether nothing was recorded (no publish is needed). Any recorded
    /// event changes something, so the fixed readings are worth copying
    /// whole whenever this is `false`.
    pub fn is_empty(&self) -> bool {
        !self.log.any
    }

    /// Whether histogram `h` (a [`histogram`] index) observed something.
    pub fn histogram_changed(&self, h: usize) -> bool {
        self.log.histograms[h]
    }

    /// The series that appeared (indices into the series list): a publisher
    /// makes them visible before their values.
    pub fn new_series(&self) -> Range<usize> {
        self.log.published_series..self.series_len
    }

    /// The series whose values changed (indices, each once, in no
    /// particular order; new series among them once they counted something).
    pub fn changed_values(&self) -> impl Iterator<Item = usize> + '_ {
        self.log.values.iter().map(|&i| i as usize)
    }
}

impl AgentMetrics {
    /// A new agent called `agent` (the name in the one warning about too many
    /// names), whose histograms have `buckets`, naming its per-name counters
    /// by `naming`: every fixed reading at 0, the known error statuses at 0.
    pub fn new(agent: &str, buckets: Buckets, naming: SeriesNaming) -> AgentMetrics {
        let bounds: Arc<[f64]> = buckets.bounds().into();
        let map = SeriesMap::new(agent, naming);
        let series = map.shared();
        let known = series.len();
        AgentMetrics {
            totals: Totals {
                fixed: [0; slot::COUNT],
                histograms: [
                    HistogramTotals::new(Arc::clone(&bounds)),
                    HistogramTotals::new(bounds),
                ],
                values: vec![0; known],
                series,
                events: 0,
            },
            buckets,
            map,
            changes: ChangeLog {
                is_dirty: vec![false; known],
                ..ChangeLog::default()
            },
        }
    }

    /// The agent's name.
    pub fn agent(&self) -> &str {
        self.map.agent()
    }

    /// The histograms' bounds.
    pub fn buckets(&self) -> &Buckets {
        &self.buckets
    }

    /// How the per-name counters are named.
    pub fn naming(&self) -> SeriesNaming {
        self.map.naming()
    }

    /// The totals so far.
    pub fn totals(&self) -> &Totals {
        &self.totals
    }

    /// Folds `events` in, in order.
    pub fn record(&mut self, events: &[Event]) {
        if events.is_empty() {
            return;
        }
        for event in events {
            self.record_one(event);
        }
        self.totals.events += events.len() as u64;
        self.changes.any = true;
        if self.map.list().len() != self.totals.series.len() {
            self.totals.series = self.map.shared();
        }
    }

    /// What changed since the last [`AgentMetrics::clear_changes`].
    pub fn changes(&self) -> Changes<'_> {
        Changes {
            log: &self.changes,
            series_len: self.totals.series.len(),
        }
    }

    /// Forgets the changes (the publisher has copied them).
    pub fn clear_changes(&mut self) {
        let log = &mut self.changes;
        log.any = false;
        log.histograms = [false; histogram::COUNT];
        for &i in &log.values {
            log.is_dirty[i as usize] = false;
        }
        log.values.clear();
        log.published_series = self.totals.series.len();
    }

    #[inline]
    fn add(&mut self, slot: usize, value: u64) {
        let v = &mut self.totals.fixed[slot];
        *v = v.saturating_add(value);
    }

    #[inline]
    fn record_one(&mut self, event: &Event) {
        let value = event.value;
        let (effect, name) = match frequent(event.category, &event.event_name) {
            // A frequent name is never a run-time series: no name needed.
            Some(effect) => (effect, &[][..]),
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
                if let Some(h) = histogram {
                    let bucket = self.buckets.index(value);
                    self.totals.histograms[h].observe(bucket, value);
                    self.changes.histograms[h] = true;
                }
            }
            EventEffect::PerName => self.per_name(event, name),
            EventEffect::Unmapped => self.add(slot::UNMAPPED, 1),
        }
    }

    /// An error status or a per-name counter; `name` is the event's name
    /// without its NUL padding.
    #[inline]
    fn per_name(&mut self, event: &Event, name: &[u8]) {
        let Some(i) = self.map.resolve(event.category, name) else {
            self.add(slot::UNMAPPED, 1);
            return;
        };
        if i == self.totals.values.len() {
            // A series seen for the first time (the list only grows by one).
            self.totals.values.push(0);
            self.changes.is_dirty.push(false);
        }
        let v = &mut self.totals.values[i];
        *v = v.saturating_add(Series::amount(event.category, event.value));
        if !self.changes.is_dirty[i] {
            self.changes.is_dirty[i] = true;
            self.changes.values.push(i as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::{MAX_NAMES_PER_AGENT, MAX_SERIES};
    use nixl_telemetry_abi::names::ERROR_STATUSES;

    fn ev(category: Category, name: &str, value: u64) -> Event {
        Event::new(1, category, name, value)
    }

    fn agent(naming: SeriesNaming) -> AgentMetrics {
        AgentMetrics::new("agent-a", Buckets::new(&[10.0, 100.0]).unwrap(), naming)
    }

    fn value(t: &Totals, wanted: &Series) -> u64 {
        t.series().find(|(s, _)| *s == wanted).unwrap().1
    }

    fn counter(sample: &str, category: Category) -> Series {
        Series::Counter {
            sample: sample.into(),
            category,
        }
    }

    #[test]
    fn builtin_events_fill_their_slots_and_histograms() {
        let mut a = agent(SeriesNaming::Prometheus);
        a.record(&[
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
        let t = a.totals();
        assert_eq!(t.fixed(slot::TX_BYTES), 150);
        assert_eq!(t.fixed(slot::TX_LAST), 50);
        assert_eq!(t.fixed(slot::TX_REQUESTS), 1);
        assert_eq!(t.fixed(slot::RX_BYTES), 7);
        assert_eq!(t.fixed(slot::RX_REQUESTS), 1);
        assert_eq!(t.fixed(slot::MEM_REGISTERED), 4096);
        assert_eq!(t.fixed(slot::MEM_DEREGISTERED_LAST), 1024);
        assert_eq!(t.registered_now(), 3072);
        assert_eq!(t.fixed(slot::XFER_TIME), 505);
        assert_eq!(t.fixed(slot::XFER_LAST), 500);
        assert_eq!(t.fixed(slot::POST_TIME), 50);
        assert_eq!(t.fixed(slot::DROPPED), 3);
        assert_eq!(t.fixed(slot::UNMAPPED), 1);
        let xfer = t.histogram(histogram::XFER_TIME);
        assert_eq!(xfer.counts(), [1, 0, 1]);
        assert_eq!(xfer.count(), 2);
        assert_eq!(xfer.sum(), 505);
        assert_eq!(xfer.min_max(), Some((5, 500)));
        assert_eq!(t.histogram(histogram::POST_TIME).counts(), [0, 1, 0]);
        assert_eq!(t.events(), 12);
    }

    #[test]
    fn counters_saturate_instead_of_wrapping() {
        let mut a = agent(SeriesNaming::Prometheus);
        a.record(&[
            ev(Category::TRANSFER, "agent_tx_bytes", u64::MAX),
            ev(Category::TRANSFER, "agent_tx_bytes", 5),
            ev(Category::CUSTOM, "big", u64::MAX),
            ev(Category::CUSTOM, "big", 5),
        ]);
        assert_eq!(a.totals().fixed(slot::TX_BYTES), u64::MAX);
        assert_eq!(
            value(a.totals(), &counter("big_total", Category::CUSTOM)),
            u64::MAX
        );
    }

    #[test]
    fn known_statuses_exist_at_zero_and_others_appear_on_first_sight() {
        let mut a = agent(SeriesNaming::Prometheus);
        assert_eq!(a.totals().series().len(), ERROR_STATUSES.len());
        assert!(a.totals().series().all(|(_, v)| v == 0));
        a.record(&[
            ev(Category::ERROR, "NIXL_ERR_BACKEND", 1),
            ev(Category::ERROR, "NIXL_ERR_BACKEND", 9),
            ev(Category::ERROR, "nixl_err_backend", 1),
            ev(Category::ERROR, "NIXL_ERR_SOMETHING_NEW", 1),
        ]);
        let t = a.totals();
        assert_eq!(t.error_count("backend"), Some(3));
        assert_eq!(
            t.series().last(),
            Some((
                &Series::Error {
                    status: "something_new".into()
                },
                1
            ))
        );
        assert_eq!(t.series().len(), ERROR_STATUSES.len() + 1);
    }

    #[test]
    fn per_name_counters_sum_values_by_category() {
        let mut a = agent(SeriesNaming::Prometheus);
        a.record(&[
            ev(Category::BACKEND, "ucx.rndv", 2),
            ev(Category::BACKEND, "ucx-rndv", 3),
            ev(Category::CUSTOM, "ucx.rndv", 10),
            ev(Category::CONNECTION, "agent_connect", 1),
            ev(Category::TRANSFER, "agent_tx_other", 4),
            ev(Category::CUSTOM, "agent_tx_bytes", 6),
            ev(Category::CUSTOM, "exposer_scrapes", 1),
        ]);
        let named: Vec<(Series, u64)> = a
            .totals()
            .series()
            .skip(ERROR_STATUSES.len())
            .map(|(s, v)| (s.clone(), v))
            .collect();
        assert_eq!(
            named,
            [
                (counter("ucx_rndv_total", Category::BACKEND), 5),
                (counter("ucx_rndv_total", Category::CUSTOM), 10),
                (counter("agent_connect_total", Category::CONNECTION), 1),
                (counter("agent_tx_other_total", Category::TRANSFER), 4),
                (counter("custom_agent_tx_bytes_total", Category::CUSTOM), 6),
                (counter("custom_exposer_scrapes_total", Category::CUSTOM), 1),
            ]
        );
        let mut otlp = agent(SeriesNaming::Otlp);
        otlp.record(&[ev(Category::CUSTOM, "exposer_scrapes", 1)]);
        assert_eq!(
            value(
                otlp.totals(),
                &counter("exposer_scrapes_total", Category::CUSTOM)
            ),
            1
        );
    }

    #[test]
    fn names_past_the_limit_are_counted_as_unmapped() {
        let mut a = agent(SeriesNaming::Otlp);
        let events: Vec<Event> = (0..MAX_NAMES_PER_AGENT + 10)
            .map(|i| ev(Category::BACKEND, &format!("name_{i}"), 1))
            .collect();
        a.record(&events);
        a.record(&[
            ev(Category::BACKEND, "name_0", 1),
            ev(Category::ERROR, "NIXL_ERR_BACKEND", 1),
            ev(Category::ERROR, "nixl_err_backend", 1),
            ev(Category::ERROR, "NIXL_ERR_BRAND_NEW", 1),
        ]);
        let t = a.totals();
        assert_eq!(t.fixed(slot::UNMAPPED), 11);
        assert_eq!(value(t, &counter("name_0_total", Category::BACKEND)), 2);
        assert_eq!(t.error_count("backend"), Some(2));
        assert_eq!(t.series().len(), MAX_SERIES);
        assert_eq!(t.series_values().len(), MAX_SERIES);
    }

    #[test]
    fn names_with_bytes_after_the_nul_mean_the_same() {
        let mut a = agent(SeriesNaming::Otlp);
        let mut e = ev(Category::TRANSFER, "agent_tx_bytes", 5);
        e.event_name[20] = b'x';
        let mut p = ev(Category::PERFORMANCE, "agent_xfer_time", 50);
        p.event_name[30] = 1;
        a.record(&[e, p]);
        assert_eq!(a.totals().fixed(slot::TX_BYTES), 5);
        assert_eq!(a.totals().histogram(0).counts(), [0, 1, 0]);
        assert_eq!(a.totals().series().len(), ERROR_STATUSES.len());
    }

    #[test]
    fn changes_say_what_to_publish_and_are_forgotten_when_cleared() {
        let mut a = agent(SeriesNaming::Prometheus);
        let c = a.changes();
        assert!(c.is_empty());
        assert_eq!(c.new_series(), 0..ERROR_STATUSES.len());
        a.clear_changes();
        a.record(&[]);
        assert!(a.changes().is_empty());
        a.record(&[
            ev(Category::PERFORMANCE, "agent_xfer_post_time", 1),
            ev(Category::ERROR, "NIXL_ERR_BACKEND", 1),
            ev(Category::ERROR, "NIXL_ERR_BACKEND", 1),
            ev(Category::CUSTOM, "fresh", 1),
        ]);
        let c = a.changes();
        assert!(!c.is_empty());
        assert!(!c.histogram_changed(histogram::XFER_TIME));
        assert!(c.histogram_changed(histogram::POST_TIME));
        let known = ERROR_STATUSES.len();
        assert_eq!(c.new_series(), known..known + 1);
        let mut values: Vec<usize> = c.changed_values().collect();
        values.sort_unstable();
        let backend = ERROR_STATUSES.iter().position(|s| *s == "backend").unwrap();
        assert_eq!(values, [backend, known]);
        a.clear_changes();
        let c = a.changes();
        assert!(c.is_empty() && !c.histogram_changed(histogram::POST_TIME));
        assert_eq!(c.new_series(), known + 1..known + 1);
        assert_eq!(c.changed_values().count(), 0);
        a.record(&[ev(Category::ERROR, "NIXL_ERR_BACKEND", 1)]);
        assert_eq!(a.changes().changed_values().collect::<Vec<_>>(), [backend]);
    }
}
