//! Building blocks for exporters that keep their agents' totals somewhere else
//! than this crate's own per-agent storage: the multi-process `prometheus_mp`
//! plug-in keeps them in memory-mapped stores, one per process, and renders
//! every rank from there.
//!
//! Everything here is the single-process exporter's own definition, so the
//! two expose identical names, types, help texts, bucket labels and event
//! mapping: [`effect`] says what an event does to an agent's readings,
//! [`series_for`] names the run-time series of a per-name or error event,
//! [`render_readings`] formats agents given as plain readings, and [`serve`]
//! runs the HTTP endpoint over any [`BodySource`].

use std::collections::BTreeMap;
use std::io;
use std::sync::Arc;

use nixl_telemetry_abi::Category;

use crate::families::{
    om_counter_collides, slot, Kind, Source, ERRORS_HELP, ERRORS_SAMPLE, HISTOGRAMS, PER_NAME_HELP,
    SCALARS, SYSTEM_SCALARS,
};
use crate::names::{error_status, escape_label_value, per_name_sample};
use crate::render::{counter_header, format_bound, header, Format};
use crate::server::{self, ServerHandle};
use crate::settings::ServerLimits;

/// This machine's host name as the `hostname` label shows it.
pub fn hostname() -> &'static str {
    crate::hostname::hostname()
}

/// What an HTTP endpoint serves: bodies rendered on demand, cached by key.
pub trait BodySource: Send + Sync + 'static {
    /// A value that changes whenever the body would: a cached body rendered at
    /// the same key is served again. A source that cannot tell returns a new
    /// key every call (then every scrape renders, and scrapes read together
    /// share one rendering).
    fn key(&self) -> (u64, u64);
    /// The whole body in `format`.
    fn render(&self, format: Format) -> Vec<u8>;
}

/// How many fixed readings (counters and last values) an agent has.
pub const FIXED_READINGS: usize = slot::COUNT;

/// The reading that counts events no series takes.
pub const UNMAPPED_READING: usize = slot::UNMAPPED;

/// How many latency histograms an agent has.
pub const HISTOGRAM_COUNT: usize = HISTOGRAMS.len();

/// What one event does to its agent's readings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventEffect {
    /// A built-in event: its value is added (saturating) to reading `sum`,
    /// written to reading `last` if there is one, and observed by histogram
    /// `histogram` if there is one.
    Builtin {
        /// The reading the value is added to.
        sum: usize,
        /// The reading that takes the value as the latest one.
        last: Option<usize>,
        /// The histogram that observes the value.
        histogram: Option<usize>,
    },
    /// A per-name counter or an error status: [`series_for`] names it; an
    /// error counts one, any other event adds its value.
    PerName,
    /// Counted (one per event) in [`UNMAPPED_READING`].
    Unmapped,
}

/// What an event of `category` called `name` does (the single-process
/// exporter's mapping).
#[inline]
pub fn effect(category: Category, name: &[u8]) -> EventEffect {
    let builtin = |sum, last, histogram| EventEffect::Builtin {
        sum,
        last,
        histogram,
    };
    match category {
        Category::TRANSFER => match name {
            b"agent_tx_bytes" => builtin(slot::TX_BYTES, Some(slot::TX_LAST), None),
            b"agent_rx_bytes" => builtin(slot::RX_BYTES, Some(slot::RX_LAST), None),
            b"agent_tx_requests_num" => builtin(slot::TX_REQUESTS, None, None),
            b"agent_rx_requests_num" => builtin(slot::RX_REQUESTS, None, None),
            _ => EventEffect::PerName,
        },
        Category::PERFORMANCE => match name {
            b"agent_xfer_time" => builtin(slot::XFER_TIME, Some(slot::XFER_LAST), Some(0)),
            b"agent_xfer_post_time" => builtin(slot::POST_TIME, Some(slot::POST_LAST), Some(1)),
            _ => EventEffect::PerName,
        },
        Category::MEMORY => match name {
            b"agent_memory_registered" => {
                builtin(slot::MEM_REGISTERED, Some(slot::MEM_REGISTERED_LAST), None)
            }
            b"agent_memory_deregistered" => builtin(
                slot::MEM_DEREGISTERED,
                Some(slot::MEM_DEREGISTERED_LAST),
                None,
            ),
            _ => EventEffect::PerName,
        },
        Category::SYSTEM => match name {
            b"agent_telemetry_events_dropped" => builtin(slot::DROPPED, None, None),
            _ => EventEffect::PerName,
        },
        Category::ERROR | Category::BACKEND | Category::CONNECTION | Category::CUSTOM => {
            EventEffect::PerName
        }
        _ => EventEffect::Unmapped,
    }
}

/// A series created at run time.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SeriesName {
    /// `agent_errors_total{status="…"}`: the status.
    Error(String),
    /// A per-name counter: its sample name (ending in `_total`).
    Counter(String),
}

/// The run-time series of an event with [`EventEffect::PerName`]: the error
/// status for an error, the per-name counter otherwise; `None` when the name
/// clashes with fixed families even with its category in front.
pub fn series_for(category: Category, name: &[u8]) -> Option<SeriesName> {
    if category == Category::ERROR {
        Some(SeriesName::Error(error_status(name)))
    } else {
        per_name_sample(name, category).map(SeriesName::Counter)
    }
}

/// One run-time series of an agent and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeSeries {
    /// The event category: the `category` label of a per-name counter (an
    /// error's series has none, as in NIXL's `agent_errors_total`).
    pub category: Category,
    /// What the series is.
    pub name: SeriesName,
    /// Its value.
    pub value: u64,
}

/// One agent's readings, as [`render_readings`] formats them.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentReading {
    /// The agent's labels, in order (values unescaped): `agent_name` and
    /// `hostname` first, as the single-process exporter writes them, then
    /// any others such as `pid`. Every series of the agent carries them; the
    /// per-name counters add `category` after them.
    pub labels: Vec<(String, String)>,
    /// The histograms' upper bounds, without `+Inf`.
    pub bounds: Vec<f64>,
    /// The fixed readings, indexed as [`effect`] indexes them.
    pub fixed: [u64; FIXED_READINGS],
    /// Per-bucket (not cumulative) counts of each histogram, `+Inf` last:
    /// `bounds.len() + 1` each.
    pub histograms: [Vec<u64>; HISTOGRAM_COUNT],
    /// The run-time series (errors first in the order they appeared, then
    /// per-name counters in any order).
    pub series: Vec<RuntimeSeries>,
}

/// One agent's labels, escaped once per rendering:
/// `agent_name="…",hostname="…"…`, and its `le` values.
struct Prepared {
    labels: Vec<u8>,
    les: Vec<String>,
}

impl Prepared {
    fn new(agent: &AgentReading) -> Prepared {
        let mut labels = Vec::with_capacity(128);
        for (i, (name, value)) in agent.labels.iter().enumerate() {
            if i > 0 {
                labels.push(b',');
            }
            labels.extend_from_slice(name.as_bytes());
            labels.extend_from_slice(b"=\"");
            escape_label_value(&mut labels, value);
            labels.push(b'"');
        }
        let les = agent
            .bounds
            .iter()
            .map(|&b| format_bound(b))
            .chain(std::iter::once("+Inf".to_owned()))
            .collect();
        Prepared { labels, les }
    }
}

/// `sample{labels…[,category="…"][,extra]} ` (`category` for the per-name
/// counters only, as the single-process exporter writes them).
fn line(
    out: &mut Vec<u8>,
    sample: &str,
    category: Option<&str>,
    prepared: &Prepared,
    extra: Option<(&str, &str)>,
) {
    out.extend_from_slice(sample.as_bytes());
    out.push(b'{');
    out.extend_from_slice(&prepared.labels);
    let mut comma = !prepared.labels.is_empty();
    if let Some(category) = category {
        if comma {
            out.push(b',');
        }
        out.extend_from_slice(b"category=\"");
        out.extend_from_slice(category.as_bytes());
        out.push(b'"');
        comma = true;
    }
    if let Some((name, value)) = extra {
        if comma {
            out.push(b',');
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"=\"");
        escape_label_value(out, value);
        out.push(b'"');
    }
    out.extend_from_slice(b"} ");
}

#[inline]
fn value(out: &mut Vec<u8>, value: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
    out.push(b'\n');
}

fn scalars(
    out: &mut Vec<u8>,
    format: Format,
    agents: &[(&AgentReading, Prepared)],
    range: std::ops::Range<usize>,
) {
    for family in &SCALARS[range] {
        match family.kind {
            Kind::Counter => counter_header(
                out,
                format,
                family.sample,
                family.help,
                om_counter_collides(family.sample),
            ),
            Kind::Gauge => header(out, format, family.sample, "gauge", family.help),
        }
        for (agent, prepared) in agents {
            line(out, family.sample, None, prepared, None);
            match family.source {
                Source::Slot(s) => value(out, agent.fixed[s]),
                Source::RegisteredNow => value(
                    out,
                    i128::from(agent.fixed[slot::MEM_REGISTERED])
                        - i128::from(agent.fixed[slot::MEM_DEREGISTERED]),
                ),
            }
        }
    }
}

/// Renders every series of `agents`, in their order, in `format`: the same
/// families, in the same order, as the single-process exporter.
pub fn render_readings(agents: &[AgentReading], format: Format) -> Vec<u8> {
    let series: usize = agents
        .iter()
        .map(|a| 64 + a.series.len() + 2 * a.bounds.len())
        .sum();
    let mut out = Vec::with_capacity(4096 + series * 160);
    let agents: Vec<(&AgentReading, Prepared)> =
        agents.iter().map(|a| (a, Prepared::new(a))).collect();
    let agents = &agents[..];

    scalars(&mut out, format, agents, 0..SCALARS.len() - SYSTEM_SCALARS);

    for (h, histogram) in HISTOGRAMS.iter().enumerate() {
        header(
            &mut out,
            format,
            histogram.family,
            "histogram",
            histogram.help,
        );
        let bucket = format!("{}_bucket", histogram.family);
        let sum = format!("{}_sum", histogram.family);
        let count = format!("{}_count", histogram.family);
        for (agent, prepared) in agents {
            let mut cumulative = 0u64;
            for (&n, le) in agent.histograms[h].iter().zip(&prepared.les) {
                cumulative = cumulative.saturating_add(n);
                line(&mut out, &bucket, None, prepared, Some(("le", le)));
                value(&mut out, cumulative);
            }
            line(&mut out, &sum, None, prepared, None);
            value(&mut out, agent.fixed[histogram.sum_slot]);
            line(&mut out, &count, None, prepared, None);
            value(&mut out, cumulative);
        }
    }

    counter_header(&mut out, format, ERRORS_SAMPLE, ERRORS_HELP, false);
    for (agent, prepared) in agents {
        for s in &agent.series {
            if let SeriesName::Error(status) = &s.name {
                line(
                    &mut out,
                    ERRORS_SAMPLE,
                    None,
                    prepared,
                    Some(("status", status)),
                );
                value(&mut out, s.value);
            }
        }
    }

    scalars(
        &mut out,
        format,
        agents,
        SCALARS.len() - SYSTEM_SCALARS..SCALARS.len(),
    );

    // Per-name families, merged over agents, by name.
    let mut named: BTreeMap<&str, Vec<(&Prepared, &RuntimeSeries)>> = BTreeMap::new();
    for (agent, prepared) in agents {
        for s in &agent.series {
            if let SeriesName::Counter(sample) = &s.name {
                named.entry(sample).or_default().push((prepared, s));
            }
        }
    }
    for (sample, series) in named {
        counter_header(&mut out, format, sample, PER_NAME_HELP, false);
        for (prepared, s) in series {
            let category = s.category.to_string();
            line(&mut out, sample, Some(&category), prepared, None);
            value(&mut out, s.value);
        }
    }

    if format == Format::OpenMetrics {
        out.extend_from_slice(b"# EOF\n");
    }
    out
}

/// A running HTTP endpoint started by [`serve`]; dropping it (or
/// [`HttpServer::shutdown`]) stops it and closes the listener.
#[derive(Debug)]
pub struct HttpServer {
    handle: ServerHandle,
}

impl HttpServer {
    /// Stops serving, closes every connection and the listener, and waits for
    /// the server thread to end.
    pub fn shutdown(self) {
        self.handle.shutdown();
    }
}

/// Serves `GET /metrics` from `source` on `listener` (already bound) in a new
/// thread: the single-process exporter's HTTP server, with its limits.
pub fn serve(
    listener: std::net::TcpListener,
    limits: ServerLimits,
    source: Arc<dyn BodySource>,
) -> io::Result<HttpServer> {
    let handle = server::spawn_source(listener, source, limits)?;
    Ok(HttpServer { handle })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Buckets;
    use crate::{PrometheusExporter, Settings};
    use nixl_telemetry_abi::Event;

    /// Applies events to a reading the way the multi-process plug-in does.
    fn apply(reading: &mut AgentReading, buckets: &Buckets, events: &[Event]) {
        for e in events {
            let category = Category(e.category);
            match effect(category, e.name_bytes()) {
                EventEffect::Builtin {
                    sum,
                    last,
                    histogram,
                } => {
                    reading.fixed[sum] = reading.fixed[sum].saturating_add(e.value);
                    if let Some(l) = last {
                        reading.fixed[l] = e.value;
                    }
                    if let Some(h) = histogram {
                        reading.histograms[h][buckets.index(e.value)] += 1;
                    }
                }
                EventEffect::PerName => {
                    let Some(name) = series_for(category, e.name_bytes()) else {
                        reading.fixed[UNMAPPED_READING] += 1;
                        continue;
                    };
                    let amount = if category == Category::ERROR {
                        1
                    } else {
                        e.value
                    };
                    match reading
                        .series
                        .iter_mut()
                        .find(|s| s.name == name && s.category == category)
                    {
                        Some(s) => s.value += amount,
                        None => reading.series.push(RuntimeSeries {
                            category,
                            name,
                            value: amount,
                        }),
                    }
                }
                EventEffect::Unmapped => reading.fixed[UNMAPPED_READING] += 1,
            }
        }
    }

    #[test]
    fn readings_render_exactly_as_the_single_process_exporter() {
        let buckets = Buckets::new(&[2.5, 10.0, 100.0]).unwrap();
        let mut settings = Settings::new("127.0.0.1:0".parse().unwrap());
        settings.buckets = buckets.clone();
        let mut exporter = PrometheusExporter::with_settings("rank-a", &settings).unwrap();
        let events = [
            Event::new(1, Category::TRANSFER, "agent_tx_bytes", 4096),
            Event::new(1, Category::TRANSFER, "agent_tx_requests_num", 1),
            Event::new(1, Category::PERFORMANCE, "agent_xfer_time", 7),
            Event::new(1, Category::PERFORMANCE, "agent_xfer_post_time", 700),
            Event::new(1, Category::MEMORY, "agent_memory_registered", 10),
            Event::new(1, Category::MEMORY, "agent_memory_deregistered", 30),
            Event::new(1, Category::ERROR, "NIXL_ERR_BACKEND", 9),
            Event::new(1, Category::ERROR, "NIXL_ERR_FRESH", 1),
            Event::new(1, Category::BACKEND, "ucx.rndv", 5),
            Event::new(1, Category::CUSTOM, "agent_tx_bytes", 2),
            Event::new(1, Category(42), "odd", 1),
        ];
        exporter.record(&events);
        let mut reading = AgentReading {
            labels: vec![
                ("agent_name".to_owned(), "rank-a".to_owned()),
                (
                    "hostname".to_owned(),
                    crate::hostname::hostname().to_owned(),
                ),
            ],
            bounds: buckets.bounds().to_vec(),
            fixed: [0; FIXED_READINGS],
            histograms: [vec![0; 4], vec![0; 4]],
            series: crate::KNOWN_ERROR_STATUSES
                .iter()
                .map(|s| RuntimeSeries {
                    category: Category::ERROR,
                    name: SeriesName::Error((*s).to_owned()),
                    value: 0,
                })
                .collect(),
        };
        apply(&mut reading, &buckets, &events);
        for format in [Format::Text, Format::OpenMetrics] {
            assert_eq!(
                String::from_utf8(render_readings(std::slice::from_ref(&reading), format)).unwrap(),
                String::from_utf8(exporter.render(format)).unwrap(),
                "{format:?}"
            );
        }
    }

    #[test]
    fn extra_labels_come_in_order_and_are_escaped() {
        let reading = AgentReading {
            labels: vec![
                ("agent_name".to_owned(), "a\"b".to_owned()),
                ("hostname".to_owned(), "h".to_owned()),
                ("pid".to_owned(), "12".to_owned()),
            ],
            bounds: vec![10.0],
            fixed: [0; FIXED_READINGS],
            histograms: [vec![0, 0], vec![0, 0]],
            series: Vec::new(),
        };
        let text = String::from_utf8(render_readings(&[reading], Format::Text)).unwrap();
        assert!(text.contains(
            "agent_xfer_time_us_bucket{agent_name=\"a\\\"b\",hostname=\"h\",pid=\"12\",le=\"10\"} 0\n"
        ), "{text}");
    }
}
