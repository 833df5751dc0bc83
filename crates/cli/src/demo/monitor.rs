//! The demo's live table: per agent, events/s, MB/s, transfer time p50/p99,
//! errors and events lost, read back through the rings by a consuming reader
//! (or, for an exporter without rings, from the telemetry's own counters).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use nixl_telemetry::ring::{ReadMode, RingReader};
use nixl_telemetry::{Category, Event, RX_BYTES, TX_BYTES, XFER_TIME};
use nixl_telemetry_workload::{AgentCounters, Workload, REMOTE_BYTES_EVENT};

/// Exact counts of distinct values: percentiles without keeping every value.
#[derive(Debug, Default, Clone)]
pub struct Histogram {
    counts: BTreeMap<u64, u64>,
    total: u64,
}

impl Histogram {
    /// Counts `value`.
    pub fn add(&mut self, value: u64) {
        *self.counts.entry(value).or_default() += 1;
        self.total += 1;
    }

    /// Adds every count of `other`.
    pub fn merge(&mut self, other: &Histogram) {
        for (&v, &n) in &other.counts {
            *self.counts.entry(v).or_default() += n;
        }
        self.total += other.total;
    }

    /// The nearest-rank percentile, `None` when empty.
    pub fn percentile(&self, percent: u64) -> Option<u64> {
        let rank = (percent * self.total).div_ceil(100).max(1);
        let mut seen = 0;
        for (&v, &n) in &self.counts {
            seen += n;
            if seen >= rank {
                return Some(v);
            }
        }
        None
    }
}

/// What one agent's events added up to over a stretch of time.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    /// Events read.
    pub events: u64,
    /// Bytes moved (transfer bytes, or the bytes a target's memory served).
    pub bytes: u64,
    /// Transfer times, µs.
    pub xfer_us: Histogram,
    /// ERROR events.
    pub errors: u64,
}

impl Tally {
    fn add_events(&mut self, events: &[Event]) {
        for e in events {
            self.events += 1;
            let name = e.name_bytes();
            match e.category() {
                Category::TRANSFER
                    if name == TX_BYTES.as_bytes() || name == RX_BYTES.as_bytes() =>
                {
                    self.bytes += e.value
                }
                Category::BACKEND if name == REMOTE_BYTES_EVENT.as_bytes() => self.bytes += e.value,
                Category::PERFORMANCE if name == XFER_TIME.as_bytes() => self.xfer_us.add(e.value),
                Category::ERROR => self.errors += 1,
                _ => {}
            }
        }
    }

    fn merge(&mut self, other: &Tally) {
        self.events += other.events;
        self.bytes += other.bytes;
        self.xfer_us.merge(&other.xfer_us);
        self.errors += other.errors;
    }
}

/// One row of the table.
#[derive(Debug, Clone)]
pub struct Row {
    /// The agent.
    pub agent: String,
    /// Events per second.
    pub events_per_s: f64,
    /// Megabytes (10^6) per second.
    pub mb_per_s: f64,
    /// Transfer time percentiles, µs (`None`: no transfers).
    pub p50_us: Option<u64>,
    /// See `p50_us`.
    pub p99_us: Option<u64>,
    /// Errors so far.
    pub errors: u64,
    /// Events lost so far.
    pub lost: u64,
}

/// Renders rows as the compact table; `label` fills the first column of the first row.
pub fn render(label: &str, rows: &[Row]) -> String {
    let width = rows.iter().map(|r| r.agent.len()).max().unwrap_or(5).max(5);
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        let pct = |p: Option<u64>| p.map_or_else(|| "-".to_owned(), |v| v.to_string());
        let _ = writeln!(
            out,
            "{:>7}  {:<width$}  {:>10.0}  {:>9.1}  {:>9}  {:>9}  {:>7}  {:>7}",
            if i == 0 { label } else { "" },
            r.agent,
            r.events_per_s,
            r.mb_per_s,
            pct(r.p50_us),
            pct(r.p99_us),
            r.errors,
            r.lost,
        );
    }
    out
}

/// The header line matching [`render`].
pub fn header(rows_agent_width: usize) -> String {
    let width = rows_agent_width.max(5);
    format!(
        "{:>7}  {:<width$}  {:>10}  {:>9}  {:>9}  {:>9}  {:>7}  {:>7}",
        "time", "agent", "events/s", "MB/s", "p50 µs", "p99 µs", "errors", "lost"
    )
}

/// Events the live reader leaves in each ring for the user to read after the demo.
pub const KEEP_EVENTS: u64 = 1024;

struct RingAgent {
    name: String,
    path: PathBuf,
    reader: RingReader,
    interval: Tally,
    total: Tally,
    lost: u64,
}

/// Reads the agents' rings, consuming all but the newest [`KEEP_EVENTS`] events
/// of each (at most a quarter of the ring), so that the rings still hold the
/// latest events when the demo ends.
pub struct RingMonitor {
    agents: Vec<RingAgent>,
    batch: Vec<Event>,
}

impl RingMonitor {
    /// Opens `<dir>/<agent>` for every agent, consuming.
    pub fn open(dir: &Path, agents: &[String]) -> anyhow::Result<RingMonitor> {
        let agents = agents
            .iter()
            .map(|name| {
                let path = dir.join(name);
                let reader = RingReader::open(&path, ReadMode::Consume)
                    .with_context(|| format!("opening the ring of agent {name}"))?;
                Ok(RingAgent {
                    name: name.clone(),
                    path,
                    reader,
                    interval: Tally::default(),
                    total: Tally::default(),
                    lost: 0,
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(RingMonitor {
            agents,
            batch: Vec::new(),
        })
    }

    /// Consumes what each ring holds beyond its newest events.
    pub fn poll(&mut self) -> anyhow::Result<()> {
        for a in &mut self.agents {
            let keep = (a.reader.capacity() / 4).min(KEEP_EVENTS);
            let pending = a.reader.pending()?;
            let mut want = pending.saturating_sub(keep);
            while want > 0 {
                self.batch.clear();
                let n = a
                    .reader
                    .read_batch(&mut self.batch, want.min(65536) as usize)?;
                if n == 0 {
                    break;
                }
                a.interval.add_events(&self.batch);
                want -= n as u64;
            }
            if let Some(t) = a.reader.trailer() {
                a.lost = u64::try_from(t.events_lost()).unwrap_or(u64::MAX);
            }
        }
        Ok(())
    }

    /// The rows for the stretch since the last call, and resets it.
    pub fn rows(&mut self, elapsed: Duration) -> Vec<Row> {
        let secs = elapsed.as_secs_f64().max(1e-3);
        self.agents
            .iter_mut()
            .map(|a| {
                let t = std::mem::take(&mut a.interval);
                a.total.merge(&t);
                Row {
                    agent: a.name.clone(),
                    events_per_s: t.events as f64 / secs,
                    mb_per_s: t.bytes as f64 / secs / 1e6,
                    p50_us: t.xfer_us.percentile(50),
                    p99_us: t.xfer_us.percentile(99),
                    errors: a.total.errors,
                    lost: a.lost,
                }
            })
            .collect()
    }

    /// After the producers closed: reads what is left without consuming it
    /// (so the rings keep it for the user), and returns the whole run's rows
    /// and how many events were left in the rings.
    pub fn finish(&mut self, run: Duration) -> anyhow::Result<(Vec<Row>, u64)> {
        let mut left = 0;
        for a in &mut self.agents {
            let mut peek = RingReader::open(&a.path, ReadMode::Peek)?;
            loop {
                self.batch.clear();
                let n = peek.read_batch(&mut self.batch, 65536)?;
                if n == 0 {
                    break;
                }
                left += n as u64;
                a.interval.add_events(&self.batch);
            }
            if let Some(t) = peek.trailer() {
                a.lost = u64::try_from(t.events_lost()).unwrap_or(u64::MAX);
            }
            let t = std::mem::take(&mut a.interval);
            a.total.merge(&t);
        }
        let secs = run.as_secs_f64().max(1e-3);
        let rows = self
            .agents
            .iter()
            .map(|a| Row {
                agent: a.name.clone(),
                events_per_s: a.total.events as f64 / secs,
                mb_per_s: a.total.bytes as f64 / secs / 1e6,
                p50_us: a.total.xfer_us.percentile(50),
                p99_us: a.total.xfer_us.percentile(99),
                errors: a.total.errors,
                lost: a.lost,
            })
            .collect();
        Ok((rows, left))
    }

    /// Events read in total, per agent.
    pub fn totals(&self) -> Vec<(String, u64)> {
        self.agents
            .iter()
            .map(|a| (a.name.clone(), a.total.events))
            .collect()
    }
}

/// For exporters without rings: events delivered per second and events lost
/// from `Telemetry::stats()`, bytes and errors from the workload's counters.
pub struct StatsMonitor {
    last: Vec<(u64, AgentCounters)>,
}

impl StatsMonitor {
    /// Starts from the current counters.
    pub fn new(workload: &Workload) -> StatsMonitor {
        StatsMonitor {
            last: workload
                .agents()
                .iter()
                .map(|a| (a.telemetry().stats().delivered, a.counters()))
                .collect(),
        }
    }

    /// The rows since the last call.
    pub fn rows(&mut self, workload: &Workload, elapsed: Duration) -> Vec<Row> {
        let secs = elapsed.as_secs_f64().max(1e-3);
        workload
            .agents()
            .iter()
            .zip(&mut self.last)
            .map(|(a, last)| {
                let stats = a.telemetry().stats();
                let counters = a.counters();
                let row = Row {
                    agent: a.name().to_owned(),
                    events_per_s: (stats.delivered - last.0) as f64 / secs,
                    mb_per_s: (counters.bytes - last.1.bytes) as f64 / secs / 1e6,
                    p50_us: None,
                    p99_us: None,
                    errors: counters.errors,
                    lost: stats.dropped.total(),
                };
                *last = (stats.delivered, counters);
                row
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_percentiles() {
        let mut h = Histogram::default();
        assert_eq!(h.percentile(50), None);
        for v in 1..=100 {
            h.add(v);
        }
        assert_eq!(h.percentile(50), Some(50));
        assert_eq!(h.percentile(99), Some(99));
        let mut g = Histogram::default();
        g.add(1000);
        g.merge(&h);
        assert_eq!(g.percentile(100), Some(1000));
    }

    #[test]
    fn tallies_pick_the_right_events() {
        let mut t = Tally::default();
        t.add_events(&[
            Event::new(1, Category::TRANSFER, TX_BYTES, 4096),
            Event::new(1, Category::TRANSFER, "agent_tx_requests_num", 1),
            Event::new(1, Category::PERFORMANCE, XFER_TIME, 12),
            Event::new(1, Category::ERROR, "NIXL_ERR_NOT_FOUND", 1),
            Event::new(1, Category::BACKEND, REMOTE_BYTES_EVENT, 100),
        ]);
        assert_eq!((t.events, t.bytes, t.errors), (5, 4196, 1));
        assert_eq!(t.xfer_us.percentile(50), Some(12));
    }
}
