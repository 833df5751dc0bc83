//! The report's data, computed from the events and kept apart from drawing:
//! the summary per agent, the series of each chart and the notes the page
//! shows. [`super::chart`] draws it; [`super::html`] lays out the page.

use serde::Serialize;

use super::input::{AgentInput, Input};
use super::kind::Kind;
use crate::lost::events_lost;
use crate::printable::escape_control;

/// Bins the charts' x axis is cut into, about.
const TARGET_BINS: f64 = 100.0;
/// The narrowest time bin.
const MIN_BIN_US: u64 = 1_000;
/// Agents drawn in the throughput chart (the most bytes first); the others
/// are named in a note.
pub const MAX_CHARTED_AGENTS: usize = 12;
/// Statuses drawn in the errors chart (the most errors first); the others
/// are added up in one line.
pub const MAX_CHARTED_STATUSES: usize = 8;
/// Bins per factor of ten in the transfer-time histogram.
const BINS_PER_DECADE: u32 = 10;

/// What the x axis of the charts over time counts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Axis {
    /// Time: seconds since the first event.
    Time {
        /// The first event's timestamp, µs since the epoch.
        origin_us: u64,
        /// The width of a bin, µs.
        bin_us: u64,
        /// From the first event to the last, µs.
        span_us: u64,
    },
    /// Read order: each agent's events numbered from 0 (rings of versions
    /// 2–4 carry no timestamps).
    ReadOrder {
        /// Events per bin.
        bin_events: u64,
        /// The most events of one agent.
        longest: u64,
    },
}

impl Axis {
    /// The axis label.
    pub fn label(&self) -> &'static str {
        match self {
            Axis::Time { .. } => "seconds since the first event",
            Axis::ReadOrder { .. } => "events of the agent, in read order",
        }
    }

    /// Where the x axis ends: the end of the last bin.
    pub fn extent(&self) -> f64 {
        let (count, width) = bin_grid(self);
        count as f64 * width
    }

    /// The y-axis label of the throughput chart.
    pub fn throughput_label(&self) -> String {
        match self {
            Axis::Time { .. } => "bytes/s (tx + rx)".to_owned(),
            Axis::ReadOrder { bin_events, .. } => {
                format!("bytes per {bin_events} events (tx + rx)")
            }
        }
    }

    /// The y-axis label of the errors chart.
    pub fn errors_label(&self) -> String {
        match self {
            Axis::Time { bin_us, .. } => format!("errors per {}", duration_words(*bin_us)),
            Axis::ReadOrder { bin_events, .. } => format!("errors per {bin_events} events"),
        }
    }
}

/// One line of a chart.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    /// What it shows (an agent, a status).
    pub label: String,
    /// (x, y) at the middle of each bin.
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// The largest y.
    pub fn max_y(&self) -> f64 {
        self.points.iter().map(|p| p.1).fold(0.0, f64::max)
    }
}

/// One bar of the transfer-time histogram: values in `[low, high)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Bin {
    /// Lowest value, µs.
    pub low: u64,
    /// Past the highest value, µs.
    pub high: u64,
    /// Transfers in it.
    pub count: u64,
}

/// The distribution of `agent_xfer_time` over every agent.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Distribution {
    /// Log-spaced bins from the smallest value to the largest.
    pub bins: Vec<Bin>,
    /// The exact percentiles and extremes.
    pub stats: Percentiles,
}

/// Count, nearest-rank percentiles and maximum of some values (µs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Percentiles {
    /// How many values.
    pub count: u64,
    /// The 50th percentile (`None` without values).
    pub p50: Option<u64>,
    /// The 90th percentile.
    pub p90: Option<u64>,
    /// The 99th percentile.
    pub p99: Option<u64>,
    /// The largest value.
    pub max: Option<u64>,
}

impl Percentiles {
    /// Of `values`, sorted in place.
    pub fn of(values: &mut [u64]) -> Percentiles {
        values.sort_unstable();
        let n = values.len() as u64;
        let at = |p: u64| {
            (n > 0).then(|| {
                let rank = (p * n).div_ceil(100).max(1);
                values[(rank - 1) as usize]
            })
        };
        Percentiles {
            count: n,
            p50: at(50),
            p90: at(90),
            p99: at(99),
            max: values.last().copied(),
        }
    }
}

/// One row of the summary table.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AgentSummary {
    /// The agent (`all agents` for the total row).
    pub agent: String,
    /// The ring's version, when read from a ring.
    pub ring_version: Option<i32>,
    /// Events read.
    pub events: u64,
    /// From its first event to its last, µs (timestamps needed).
    pub span_us: Option<u64>,
    /// Sum of `agent_tx_bytes`.
    pub tx_bytes: u128,
    /// Sum of `agent_rx_bytes`.
    pub rx_bytes: u128,
    /// Sum of `agent_tx_requests_num`.
    pub tx_requests: u128,
    /// Sum of `agent_rx_requests_num`.
    pub rx_requests: u128,
    /// Transfer times (`agent_xfer_time`).
    pub xfer_time_us: Percentiles,
    /// Error events.
    pub errors: u64,
    /// Error events by status, the most first.
    pub errors_by_status: Vec<(String, u64)>,
    /// Registered minus deregistered bytes at the end.
    pub memory_registered_bytes: i128,
    /// Events the producer lost: the ring trailer's count, or the sum of
    /// `agent_telemetry_events_dropped` events; `None` when neither can say
    /// (a NIXL ring before version 4 has no way to tell).
    pub events_lost: Option<u128>,
    /// (tx + rx bytes) / span, bytes/s.
    pub throughput_bytes_per_s: Option<f64>,
}

/// Everything the report shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReportModel {
    /// What was read.
    pub input: String,
    /// The x axis of the charts over time.
    pub axis: Axis,
    /// Sentences the page shows above the charts.
    pub notes: Vec<String>,
    /// One row per agent, in name order.
    pub agents: Vec<AgentSummary>,
    /// Every agent together.
    pub total: AgentSummary,
    /// Throughput per agent.
    pub throughput: Vec<Series>,
    /// Error events per status.
    pub errors: Vec<Series>,
    /// Transfer times.
    pub xfer: Distribution,
}

/// The smallest 1, 2 or 5 times a power of ten that is at least `x` (≥ 1).
fn nice_step(x: f64) -> u64 {
    let mut step = 1u64;
    loop {
        for m in [1, 2, 5] {
            let candidate = step.saturating_mul(m);
            if candidate as f64 >= x || candidate == u64::MAX {
                return candidate;
            }
        }
        step = step.saturating_mul(10);
    }
}

/// `µs` as a short duration: `1 ms`, `200 ms`, `5 s`.
pub fn duration_words(us: u64) -> String {
    if us >= 1_000_000 && us.is_multiple_of(1_000_000) {
        format!("{} s", us / 1_000_000)
    } else if us >= 1_000 && us.is_multiple_of(1_000) {
        format!("{} ms", us / 1_000)
    } else {
        format!("{us} µs")
    }
}

/// Chooses the axis and says why when it is read order.
fn choose_axis(agents: &[AgentInput], notes: &mut Vec<String>) -> Axis {
    let untimed: Vec<&AgentInput> = agents
        .iter()
        .filter(|a| a.samples.iter().any(|s| s.timestamp_us.is_none()))
        .collect();
    if untimed.is_empty() {
        let stamps = || {
            agents
                .iter()
                .flat_map(|a| a.samples.iter())
                .filter_map(|s| s.timestamp_us)
        };
        if let (Some(first), Some(last)) = (stamps().min(), stamps().max()) {
            let span_us = last - first;
            let bin_us = nice_step(span_us as f64 / TARGET_BINS).max(MIN_BIN_US);
            return Axis::Time {
                origin_us: first,
                bin_us,
                span_us,
            };
        }
    } else {
        let names: Vec<String> = untimed
            .iter()
            .map(|a| {
                let agent = escape_control(&a.agent);
                match a.ring_version {
                    Some(v) => format!("{agent} (ring version {v})"),
                    None => agent.into_owned(),
                }
            })
            .collect();
        notes.push(format!(
            "Charted by read order, not by time: the events of {} carry no timestamps (NIXL's \
             ring versions 2 to 4 have none). The x axis counts each agent's events in the \
             order they were read.",
            names.join(", ")
        ));
    }
    let longest = agents
        .iter()
        .map(|a| a.samples.len() as u64)
        .max()
        .unwrap_or(0);
    Axis::ReadOrder {
        bin_events: nice_step(longest as f64 / TARGET_BINS),
        longest,
    }
}

/// Which bin of `axis` the event at `index` of an agent, stamped `ts`, falls in.
fn bin_of(axis: &Axis, index: usize, ts: Option<u64>) -> usize {
    match *axis {
        Axis::Time {
            origin_us, bin_us, ..
        } => (ts.unwrap_or(origin_us).saturating_sub(origin_us) / bin_us) as usize,
        Axis::ReadOrder { bin_events, .. } => (index as u64 / bin_events) as usize,
    }
}

/// The number of bins and their width on the x axis.
fn bin_grid(axis: &Axis) -> (usize, f64) {
    let (count, width) = match *axis {
        Axis::Time {
            bin_us, span_us, ..
        } => ((span_us / bin_us) as usize + 1, bin_us as f64 / 1e6),
        Axis::ReadOrder {
            bin_events,
            longest,
        } => (
            longest.div_ceil(bin_events).max(1) as usize,
            bin_events as f64,
        ),
    };
    (count, width)
}

/// An agent's row, its transfer times and its errors by status id.
fn summarize(agent: &AgentInput, statuses: &[String]) -> (AgentSummary, Vec<u64>, Vec<u64>) {
    let mut s = AgentSummary {
        agent: escape_control(&agent.agent).into_owned(),
        ring_version: agent.ring_version,
        events: agent.samples.len() as u64,
        ..AgentSummary::default()
    };
    let mut by_status = vec![0u64; statuses.len()];
    let mut times = Vec::new();
    let mut reported_lost = 0u128;
    let mut registered = 0i128;
    for sample in &agent.samples {
        let v = sample.value;
        match sample.kind {
            Kind::TxBytes => s.tx_bytes += u128::from(v),
            Kind::RxBytes => s.rx_bytes += u128::from(v),
            Kind::TxRequests => s.tx_requests += u128::from(v),
            Kind::RxRequests => s.rx_requests += u128::from(v),
            Kind::MemoryRegistered => registered += i128::from(v),
            Kind::MemoryDeregistered => registered -= i128::from(v),
            Kind::XferTime => times.push(v),
            Kind::EventsDropped => reported_lost += u128::from(v),
            Kind::Error(id) => {
                s.errors += 1;
                by_status[id as usize] += 1;
            }
            Kind::Other => {}
        }
    }
    s.memory_registered_bytes = registered;
    let stamps = || agent.samples.iter().filter_map(|x| x.timestamp_us);
    if agent.samples.iter().all(|x| x.timestamp_us.is_some()) {
        if let (Some(first), Some(last)) = (stamps().min(), stamps().max()) {
            s.span_us = Some(last - first);
        }
    }
    s.throughput_bytes_per_s = s
        .span_us
        .filter(|&span| span > 0)
        .map(|span| (s.tx_bytes + s.rx_bytes) as f64 / (span as f64 / 1e6));
    s.events_lost = events_lost(agent.lost_by_producer, reported_lost, agent.ring_version);
    s.errors_by_status = status_counts(statuses, &by_status);
    s.xfer_time_us = Percentiles::of(&mut times);
    (s, times, by_status)
}

/// (status, count) for the non-zero counts, the most first.
fn status_counts(statuses: &[String], counts: &[u64]) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = statuses
        .iter()
        .zip(counts)
        .filter(|(_, &n)| n > 0)
        .map(|(s, &n)| (escape_control(s).into_owned(), n))
        .collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out
}

/// The transfer-time histogram: `BINS_PER_DECADE` log-spaced bins per factor
/// of ten, from the decade of the smallest value to the largest value.
fn distribution(values: &mut [u64]) -> Distribution {
    let stats = Percentiles::of(values);
    let (Some(&min), Some(&max)) = (values.first(), values.last()) else {
        return Distribution {
            bins: Vec::new(),
            stats,
        };
    };
    // Edges 10^(k / BINS_PER_DECADE), rounded to whole µs and deduplicated;
    // 0 gets a bin of its own below 1.
    let mut edges: Vec<u64> = Vec::new();
    if min == 0 {
        edges.push(0);
    }
    let first_decade = (min.max(1) as f64).log10().floor() as i32;
    let mut k = first_decade * BINS_PER_DECADE as i32;
    loop {
        let edge = 10f64.powf(k as f64 / BINS_PER_DECADE as f64).round();
        let edge = if edge >= u64::MAX as f64 {
            u64::MAX
        } else {
            edge as u64
        };
        if edges.last() != Some(&edge) {
            edges.push(edge);
        }
        if edge > max || edge == u64::MAX {
            break;
        }
        k += 1;
    }
    let mut bins: Vec<Bin> = edges
        .windows(2)
        .map(|w| Bin {
            low: w[0],
            high: w[1],
            count: 0,
        })
        .collect();
    if bins.is_empty() {
        bins.push(Bin {
            low: max,
            high: max.saturating_add(1),
            count: 0,
        });
    }
    let last = bins.len() - 1;
    let mut at = 0;
    for &v in values.iter() {
        while at < last && v >= bins[at].high {
            at += 1;
        }
        bins[at].count += 1;
    }
    // Only the bins from the first to the last that hold something.
    let first_used = bins.iter().position(|b| b.count > 0).unwrap_or(0);
    let last_used = bins.iter().rposition(|b| b.count > 0).unwrap_or(last);
    Distribution {
        bins: bins[first_used..=last_used].to_vec(),
        stats,
    }
}

impl ReportModel {
    /// Computes the report of `input`, read from `description`.
    pub fn build(input: &Input, description: &str) -> ReportModel {
        let mut notes = Vec::new();
        let axis = choose_axis(&input.agents, &mut notes);
        let (bin_count, width) = bin_grid(&axis);
        let middle = move |i: usize| (i as f64 + 0.5) * width;
        let statuses = &input.statuses;

        let mut agents = Vec::new();
        let mut all_times = Vec::new();
        let mut throughput = Vec::new();
        let mut error_bins = vec![vec![0u64; bin_count]; statuses.len()];
        let mut total = AgentSummary {
            agent: "all agents".to_owned(),
            events_lost: Some(0),
            ..AgentSummary::default()
        };
        let mut total_by_status = vec![0u64; statuses.len()];
        for agent in &input.agents {
            let (summary, times, by_status) = summarize(agent, statuses);
            all_times.extend(times);
            let mut bytes = vec![0f64; bin_count];
            for (index, sample) in agent.samples.iter().enumerate() {
                let bin = bin_of(&axis, index, sample.timestamp_us).min(bin_count - 1);
                match sample.kind {
                    Kind::TxBytes | Kind::RxBytes => bytes[bin] += sample.value as f64,
                    Kind::Error(id) => error_bins[id as usize][bin] += 1,
                    _ => {}
                }
            }
            if summary.tx_bytes + summary.rx_bytes > 0 {
                // Read order: an agent's line ends with its events.
                let own_bins = match axis {
                    Axis::Time { .. } => bin_count,
                    Axis::ReadOrder { bin_events, .. } => {
                        (agent.samples.len() as u64).div_ceil(bin_events) as usize
                    }
                };
                // Bytes per second (per bin of events): the last bin, cut
                // short by the end of the run, counts for the part it covers
                // (at least a quarter of a bin, so a lone event does not
                // make a spike).
                let scale = |i: usize| match axis {
                    Axis::Time {
                        bin_us, span_us, ..
                    } => {
                        let covered = if i + 1 == bin_count {
                            (span_us - (bin_count as u64 - 1) * bin_us).max(bin_us / 4)
                        } else {
                            bin_us
                        };
                        1e6 / covered.max(1) as f64
                    }
                    Axis::ReadOrder { bin_events, .. } => {
                        let events = (agent.samples.len() as u64 - i as u64 * bin_events)
                            .min(bin_events)
                            .max(bin_events.div_ceil(4));
                        bin_events as f64 / events as f64
                    }
                };
                throughput.push(Series {
                    label: summary.agent.clone(),
                    points: (0..own_bins)
                        .map(|i| (middle(i), bytes[i] * scale(i)))
                        .collect(),
                });
            }
            add_into(&mut total, &summary);
            for (sum, n) in total_by_status.iter_mut().zip(by_status) {
                *sum += n;
            }
            agents.push(summary);
        }
        total.errors_by_status = status_counts(statuses, &total_by_status);
        if let Axis::Time { span_us, .. } = axis {
            total.span_us = Some(span_us);
            total.throughput_bytes_per_s = (span_us > 0)
                .then(|| (total.tx_bytes + total.rx_bytes) as f64 / (span_us as f64 / 1e6));
        }

        if throughput.is_empty() {
            notes.push(
                "No agent_tx_bytes or agent_rx_bytes events were read: the throughput chart is empty."
                    .to_owned(),
            );
        }
        throughput.sort_by(|a, b| {
            let bytes = |s: &Series| s.points.iter().map(|p| p.1).sum::<f64>();
            bytes(b)
                .total_cmp(&bytes(a))
                .then_with(|| a.label.cmp(&b.label))
        });
        if throughput.len() > MAX_CHARTED_AGENTS {
            let left: Vec<String> = throughput
                .drain(MAX_CHARTED_AGENTS..)
                .map(|s| s.label)
                .collect();
            notes.push(format!(
                "The throughput chart shows the {MAX_CHARTED_AGENTS} agents that moved the most \
                 bytes; left out: {}.",
                left.join(", ")
            ));
        }
        throughput.sort_by(|a, b| a.label.cmp(&b.label));

        let errors = error_series(statuses, &error_bins, &total.errors_by_status, &middle);
        if total.errors == 0 {
            notes.push("No error events were read.".to_owned());
        }
        let xfer = distribution(&mut all_times);
        total.xfer_time_us = xfer.stats;
        if xfer.stats.count == 0 {
            notes.push(
                "No agent_xfer_time events were read: the transfer-time chart is empty.".to_owned(),
            );
        }
        ReportModel {
            input: description.to_owned(),
            axis,
            notes,
            agents,
            total,
            throughput,
            errors,
            xfer,
        }
    }
}

/// One line per status with errors, the most first; past
/// [`MAX_CHARTED_STATUSES`] the rest add up in one line.
fn error_series(
    statuses: &[String],
    bins: &[Vec<u64>],
    ranked: &[(String, u64)],
    middle: &impl Fn(usize) -> f64,
) -> Vec<Series> {
    let line = |label: String, counts: Vec<u64>| Series {
        label,
        points: counts
            .iter()
            .enumerate()
            .map(|(i, &n)| (middle(i), n as f64))
            .collect(),
    };
    let counts_of = |status: &str| {
        let id = statuses
            .iter()
            .position(|s| escape_control(s) == status)
            .expect("a known status");
        bins[id].clone()
    };
    let mut out: Vec<Series> = ranked
        .iter()
        .take(MAX_CHARTED_STATUSES)
        .map(|(status, _)| line(status.clone(), counts_of(status)))
        .collect();
    if ranked.len() > MAX_CHARTED_STATUSES {
        let mut rest = vec![0u64; bins.first().map_or(0, Vec::len)];
        for (status, _) in &ranked[MAX_CHARTED_STATUSES..] {
            for (sum, n) in rest.iter_mut().zip(counts_of(status)) {
                *sum += n;
            }
        }
        out.push(line(
            format!("{} other statuses", ranked.len() - MAX_CHARTED_STATUSES),
            rest,
        ));
    }
    out
}

/// Adds an agent's sums to the total row.
fn add_into(total: &mut AgentSummary, s: &AgentSummary) {
    total.events += s.events;
    total.tx_bytes += s.tx_bytes;
    total.rx_bytes += s.rx_bytes;
    total.tx_requests += s.tx_requests;
    total.rx_requests += s.rx_requests;
    total.errors += s.errors;
    total.memory_registered_bytes += s.memory_registered_bytes;
    total.events_lost = match (total.events_lost, s.events_lost) {
        (Some(a), Some(b)) => Some(a + b),
        _ => None,
    };
}

#[cfg(test)]
mod tests {
    use super::super::input::Sample;
    use super::*;

    fn sample(ts: Option<u64>, kind: Kind, value: u64) -> Sample {
        Sample {
            timestamp_us: ts,
            kind,
            value,
        }
    }

    fn agent(name: &str, version: Option<i32>, samples: Vec<Sample>) -> AgentInput {
        AgentInput {
            agent: name.to_owned(),
            ring_version: version,
            samples,
            lost_by_producer: None,
        }
    }

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(0.0), 1);
        assert_eq!(nice_step(1.0), 1);
        assert_eq!(nice_step(1.5), 2);
        assert_eq!(nice_step(3.0), 5);
        assert_eq!(nice_step(7.0), 10);
        assert_eq!(nice_step(101_000.0), 200_000);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut v: Vec<u64> = (1..=100).rev().collect();
        let p = Percentiles::of(&mut v);
        assert_eq!(
            (p.count, p.p50, p.p90, p.p99, p.max),
            (100, Some(50), Some(90), Some(99), Some(100))
        );
        assert_eq!(Percentiles::of(&mut []).p50, None);
        assert_eq!(Percentiles::of(&mut [7]).p99, Some(7));
    }

    #[test]
    fn timed_events_are_binned_by_time() {
        let t0 = 1_000_000_000;
        let input = Input {
            agents: vec![agent(
                "a",
                Some(1),
                vec![
                    sample(Some(t0), Kind::TxBytes, 1000),
                    sample(Some(t0 + 500_000), Kind::RxBytes, 3000),
                    sample(Some(t0 + 1_000_000), Kind::Error(0), 1),
                    sample(Some(t0 + 1_000_000), Kind::XferTime, 40),
                ],
            )],
            statuses: vec!["not_found".to_owned()],
            from_capture: false,
            warnings: Vec::new(),
        };
        let m = ReportModel::build(&input, "test");
        assert_eq!(
            m.axis,
            Axis::Time {
                origin_us: t0,
                bin_us: 10_000,
                span_us: 1_000_000
            }
        );
        assert_eq!(m.throughput.len(), 1);
        let pts = &m.throughput[0].points;
        assert_eq!(pts.len(), 101);
        // 1000 bytes in a 10 ms bin: 100 000 bytes/s.
        assert_eq!(pts[0], (0.005, 100_000.0));
        assert_eq!(pts[50].1, 300_000.0);
        assert_eq!(m.errors[0].points[100].1, 1.0);
        let a = &m.agents[0];
        assert_eq!((a.tx_bytes, a.rx_bytes, a.errors), (1000, 3000, 1));
        assert_eq!(a.span_us, Some(1_000_000));
        assert_eq!(a.throughput_bytes_per_s, Some(4000.0));
        // A version-1 ring without a trailer cannot tell its losses.
        assert_eq!(a.events_lost, None);
        assert!(m.notes.iter().all(|n| !n.contains("read order")));
    }

    #[test]
    fn untimed_events_are_charted_by_read_order_and_the_note_says_so() {
        let samples = (0..250).map(|_| sample(None, Kind::TxBytes, 10)).collect();
        let input = Input {
            agents: vec![agent("v4agent", Some(4), samples)],
            statuses: Vec::new(),
            from_capture: false,
            warnings: Vec::new(),
        };
        let m = ReportModel::build(&input, "test");
        assert_eq!(
            m.axis,
            Axis::ReadOrder {
                bin_events: 5,
                longest: 250
            }
        );
        assert_eq!(m.throughput[0].points.len(), 50);
        assert_eq!(m.throughput[0].points[0], (2.5, 50.0));
        assert!(
            m.notes[0].contains("v4agent (ring version 4)"),
            "{:?}",
            m.notes
        );
        assert!(m.notes[0].contains("read order"));
        assert_eq!(m.agents[0].events_lost, Some(0));
        assert_eq!(m.agents[0].span_us, None);
    }

    #[test]
    fn the_histogram_holds_every_value() {
        let mut values: Vec<u64> = vec![0, 1, 5, 10, 12, 99, 100, 1000, 4321];
        let d = distribution(&mut values);
        assert_eq!(d.bins.iter().map(|b| b.count).sum::<u64>(), 9);
        assert_eq!(
            d.bins[0],
            Bin {
                low: 0,
                high: 1,
                count: 1
            }
        );
        assert!(d.bins.windows(2).all(|w| w[0].high == w[1].low));
        let last = d.bins.last().unwrap();
        assert!(last.low <= 4321 && 4321 < last.high, "{last:?}");
        assert_eq!(d.stats.p50, Some(12));
    }
}
