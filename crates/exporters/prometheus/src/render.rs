//! The Prometheus text format 0.0.4 and OpenMetrics 1.0 of agents' totals:
//! the one renderer of every Prometheus exposition (the single-process
//! plug-in's endpoint, `prometheus_mp`'s, the sidecar's).

use std::collections::BTreeMap;

use nixl_telemetry_abi::Category;

use nixl_telemetry_metrics::families::{
    om_counter_collides, Kind, Source, ERRORS_HELP, ERRORS_SAMPLE, HISTOGRAMS, PER_NAME_HELP,
    SCALARS, SYSTEM_SCALARS,
};
use nixl_telemetry_metrics::{Series, Totals};

/// An exposition format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// Prometheus text format 0.0.4 (`text/plain; version=0.0.4`).
    Text,
    /// OpenMetrics 1.0 text (`application/openmetrics-text`), ending in `# EOF`.
    OpenMetrics,
}

impl Format {
    /// Both formats, for per-format tables.
    pub const ALL: [Format; 2] = [Format::Text, Format::OpenMetrics];

    /// An index for per-format tables (the position in [`Format::ALL`]).
    pub fn index(self) -> usize {
        match self {
            Format::Text => 0,
            Format::OpenMetrics => 1,
        }
    }
}

/// Pre-rendered sample lines of one histogram, up to the value.
#[derive(Debug, Clone)]
struct HistogramLines {
    /// One per bound, then `+Inf`.
    buckets: Vec<Box<[u8]>>,
    sum: Box<[u8]>,
    count: Box<[u8]>,
}

/// One agent's labels, escaped and laid out once: every series of the agent
/// carries them, in their order (NIXL's plug-in has `agent_name` then
/// `hostname`; `prometheus_mp` adds `pid`, `agent_instance`, `local_rank`).
/// The per-name counters add `category`, the errors `status`, the buckets
/// `le` after them.
///
/// The sample lines of the fixed families (up to the value) are rendered here
/// once, for histograms with `bounds`, so a rendering copies them whole; so
/// are the parts of the run-time series' lines before their status or
/// category.
#[derive(Debug, Clone)]
pub struct AgentLabels {
    /// `name="value",…`, escaped.
    labels: Box<[u8]>,
    /// Sample lines of [`SCALARS`], in table order.
    scalars: Vec<Box<[u8]>>,
    histograms: [HistogramLines; 2],
    /// `agent_errors_total{labels…,status="`.
    error_prefix: Box<[u8]>,
    /// `{labels…,category="`, after a per-name counter's sample name.
    category_prefix: Box<[u8]>,
}

/// A histogram bound as written in `le`: the shortest decimal that reads back
/// as the same number (`10`, `2500`, `0.5`).
pub fn format_bound(bound: f64) -> String {
    format!("{bound}")
}

impl AgentLabels {
    /// The labels `labels` (names and unescaped values, in order) of an agent
    /// whose histograms have `bounds` (µs, without `+Inf`).
    pub fn new<'a>(
        labels: impl IntoIterator<Item = (&'a str, &'a str)>,
        bounds: &[f64],
    ) -> AgentLabels {
        let mut text = Vec::with_capacity(128);
        for (i, (name, value)) in labels.into_iter().enumerate() {
            if i > 0 {
                text.push(b',');
            }
            text.extend_from_slice(name.as_bytes());
            text.extend_from_slice(b"=\"");
            escape_label_value(&mut text, value);
            text.push(b'"');
        }
        let comma: &[u8] = if text.is_empty() { b"" } else { b"," };
        let error_prefix = [ERRORS_SAMPLE.as_bytes(), b"{", &text, comma, b"status=\""]
            .concat()
            .into();
        let category_prefix = [&b"{"[..], &text, comma, b"category=\""].concat().into();
        let mut agent = AgentLabels {
            labels: text.into(),
            scalars: Vec::new(),
            histograms: [0, 1].map(|_| HistogramLines {
                buckets: Vec::new(),
                sum: Box::default(),
                count: Box::default(),
            }),
            error_prefix,
            category_prefix,
        };
        let line = |sample: &str, extra: Option<(&str, &str)>| {
            let mut out = Vec::new();
            agent.write_line(&mut out, sample, extra);
            out.into_boxed_slice()
        };
        let scalars = SCALARS.iter().map(|s| line(s.sample, None)).collect();
        let histograms = [0, 1].map(|h| {
            let family = HISTOGRAMS[h].family;
            let bucket = format!("{family}_bucket");
            HistogramLines {
                buckets: bounds
                    .iter()
                    .map(|&b| format_bound(b))
                    .chain(std::iter::once("+Inf".to_owned()))
                    .map(|le| line(&bucket, Some(("le", &le))))
                    .collect(),
                sum: line(&format!("{family}_sum"), None),
                count: line(&format!("{family}_count"), None),
            }
        });
        agent.scalars = scalars;
        agent.histograms = histograms;
        agent
    }

    /// `sample{labels…[,extra="…"]} ` into `out`.
    fn write_line(&self, out: &mut Vec<u8>, sample: &str, extra: Option<(&str, &str)>) {
        out.extend_from_slice(sample.as_bytes());
        out.push(b'{');
        out.extend_from_slice(&self.labels);
        if let Some((name, value)) = extra {
            if !self.labels.is_empty() {
                out.push(b',');
            }
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"=\"");
            escape_label_value(out, value);
            out.push(b'"');
        }
        out.extend_from_slice(b"} ");
    }

    /// `agent_errors_total{labels…,status="…"} ` into `out`.
    fn write_error_line(&self, out: &mut Vec<u8>, status: &str) {
        out.extend_from_slice(&self.error_prefix);
        escape_label_value(out, status);
        out.extend_from_slice(b"\"} ");
    }

    /// `sample{labels…,category="…"} ` into `out`: only the per-name
    /// counters carry `category` (one event name may come in several
    /// categories, and the label keeps those series apart).
    fn write_counter_line(&self, out: &mut Vec<u8>, sample: &str, category: Category) {
        out.extend_from_slice(sample.as_bytes());
        out.extend_from_slice(&self.category_prefix);
        match category.known_name() {
            Some(name) => out.extend_from_slice(name.as_bytes()),
            None => out.extend_from_slice(category.to_string().as_bytes()),
        }
        out.extend_from_slice(b"\"} ");
    }
}

/// Writes the `# HELP` / `# TYPE` lines of the family `family` of type
/// `type_name` (`counter`, `gauge`, `histogram`, `summary`, `unknown`), with
/// `help` escaped as `format` requires.
pub fn write_header(out: &mut Vec<u8>, format: Format, family: &str, type_name: &str, help: &str) {
    out.extend_from_slice(b"# HELP ");
    out.extend_from_slice(family.as_bytes());
    out.push(b' ');
    for &b in help.as_bytes() {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'"' if format == Format::OpenMetrics => out.extend_from_slice(b"\\\""),
            _ => out.push(b),
        }
    }
    out.extend_from_slice(b"\n# TYPE ");
    out.extend_from_slice(family.as_bytes());
    out.push(b' ');
    out.extend_from_slice(type_name.as_bytes());
    out.push(b'\n');
}

/// Writes the header of a counter whose samples are called `sample`: in
/// OpenMetrics the family drops `_total`, unless that name belongs to another
/// family (`collides`), in which case the counter is declared `unknown` under
/// its full name.
pub fn write_counter_header(
    out: &mut Vec<u8>,
    format: Format,
    sample: &str,
    help: &str,
    collides: bool,
) {
    match (format, sample.strip_suffix("_total")) {
        (Format::OpenMetrics, Some(family)) if !collides => {
            write_header(out, format, family, "counter", help)
        }
        (Format::OpenMetrics, _) => write_header(out, format, sample, "unknown", help),
        (Format::Text, _) => write_header(out, format, sample, "counter", help),
    }
}

/// Appends `value` escaped for a label value (between double quotes) by the
/// one rule of [`nixl_telemetry_abi::text::escape_label_value`]; it holds in
/// both formats.
#[inline]
fn escape_label_value(out: &mut Vec<u8>, value: &str) {
    nixl_telemetry_abi::text::escape_label_value(value, |piece| {
        out.extend_from_slice(piece.as_bytes())
    });
}

#[inline]
fn value(out: &mut Vec<u8>, value: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
    out.push(b'\n');
}

fn scalars(
    out: &mut Vec<u8>,
    format: Format,
    agents: &[(&AgentLabels, &Totals)],
    range: std::ops::Range<usize>,
) {
    for i in range {
        let family = &SCALARS[i];
        match family.kind {
            Kind::Counter => write_counter_header(
                out,
                format,
                family.sample,
                family.help,
                om_counter_collides(family.sample),
            ),
            Kind::Gauge => write_header(out, format, family.sample, "gauge", family.help),
        }
        for (labels, totals) in agents {
            out.extend_from_slice(&labels.scalars[i]);
            match family.source {
                Source::Slot(s) => value(out, totals.fixed(s)),
                Source::RegisteredNow => value(out, totals.registered_now()),
            }
        }
    }
}

/// Renders every series of `agents` (each agent's labels and totals, in the
/// order given) in `format`: the fixed families, the histograms, the errors,
/// telemetry's own families, then the per-name counters by name, with
/// `# EOF` at the end of OpenMetrics. The body of a scrape, apart from the
/// HTTP server's own families, which it writes before.
pub fn render(agents: &[(&AgentLabels, &Totals)], format: Format) -> Vec<u8> {
    let series: usize = agents
        .iter()
        .map(|(_, t)| 64 + t.series_values().len() + 2 * t.histogram(0).counts().len())
        .sum();
    let mut out = Vec::with_capacity(4096 + series * 128);
    render_into(&mut out, agents, format);
    out
}

/// [`render`], appending to `out`.
pub fn render_into(out: &mut Vec<u8>, agents: &[(&AgentLabels, &Totals)], format: Format) {
    scalars(out, format, agents, 0..SCALARS.len() - SYSTEM_SCALARS);

    for (h, histogram) in HISTOGRAMS.iter().enumerate() {
        write_header(out, format, histogram.family, "histogram", histogram.help);
        for (labels, totals) in agents {
            let lines = &labels.histograms[h];
            let mut cumulative = 0u64;
            for (line, &count) in lines.buckets.iter().zip(totals.histogram(h).counts()) {
                cumulative = cumulative.saturating_add(count);
                out.extend_from_slice(line);
                value(out, cumulative);
            }
            out.extend_from_slice(&lines.sum);
            value(out, totals.fixed(histogram.sum_slot));
            out.extend_from_slice(&lines.count);
            value(out, cumulative);
        }
    }

    write_counter_header(out, format, ERRORS_SAMPLE, ERRORS_HELP, false);
    for (labels, totals) in agents {
        for (series, v) in totals.series() {
            if let Series::Error { status } = series {
                labels.write_error_line(out, status);
                value(out, v);
            }
        }
    }

    scalars(
        out,
        format,
        agents,
        SCALARS.len() - SYSTEM_SCALARS..SCALARS.len(),
    );

    // Per-name families, merged over agents, by name.
    let mut named: BTreeMap<&str, Vec<(&AgentLabels, Category, u64)>> = BTreeMap::new();
    for (labels, totals) in agents {
        for (series, v) in totals.series() {
            if let Series::Counter { sample, category } = series {
                named
                    .entry(sample)
                    .or_default()
                    .push((labels, *category, v));
            }
        }
    }
    for (sample, series) in named {
        write_counter_header(out, format, sample, PER_NAME_HELP, false);
        for (labels, category, v) in series {
            labels.write_counter_line(out, sample, category);
            value(out, v);
        }
    }

    if format == Format::OpenMetrics {
        out.extend_from_slice(b"# EOF\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nixl_telemetry_abi::buckets::Buckets;
    use nixl_telemetry_abi::Event;
    use nixl_telemetry_metrics::{AgentMetrics, SeriesNaming};

    fn text(agents: &[(&AgentLabels, &Totals)], format: Format) -> String {
        String::from_utf8(render(agents, format)).unwrap()
    }

    #[test]
    fn label_values_are_escaped() {
        let mut out = Vec::new();
        escape_label_value(&mut out, "a\"b\\c\nd é");
        assert_eq!(out, b"a\\\"b\\\\c\\nd \xc3\xa9");
    }

    #[test]
    fn labels_come_in_order_escaped_and_before_le_status_and_category() {
        let buckets = Buckets::new(&[10.0, 2.5e6]).unwrap();
        let mut a = AgentMetrics::new("a", buckets.clone(), SeriesNaming::Prometheus);
        a.record(&[
            Event::new(1, Category::PERFORMANCE, "agent_xfer_time", 5),
            Event::new(1, Category::BACKEND, "ucx.rndv", 4),
        ]);
        let labels = AgentLabels::new(
            [("agent_name", "a\"b"), ("hostname", "h"), ("pid", "12")],
            buckets.bounds(),
        );
        let body = text(&[(&labels, a.totals())], Format::Text);
        for line in [
            "agent_xfer_time_us_bucket{agent_name=\"a\\\"b\",hostname=\"h\",pid=\"12\",le=\"10\"} 1\n",
            "agent_xfer_time_us_bucket{agent_name=\"a\\\"b\",hostname=\"h\",pid=\"12\",le=\"2500000\"} 1\n",
            "agent_xfer_time_us_bucket{agent_name=\"a\\\"b\",hostname=\"h\",pid=\"12\",le=\"+Inf\"} 1\n",
            "agent_xfer_time_us_sum{agent_name=\"a\\\"b\",hostname=\"h\",pid=\"12\"} 5\n",
            "agent_errors_total{agent_name=\"a\\\"b\",hostname=\"h\",pid=\"12\",status=\"backend\"} 0\n",
            "ucx_rndv_total{agent_name=\"a\\\"b\",hostname=\"h\",pid=\"12\",category=\"BACKEND\"} 4\n",
            "agent_memory_registered_bytes{agent_name=\"a\\\"b\",hostname=\"h\",pid=\"12\"} 0\n",
        ] {
            assert!(body.contains(line), "{line}\n{body}");
        }
        assert!(!body.contains("# EOF"));
        let empty = AgentLabels::new([], buckets.bounds());
        let body = text(&[(&empty, a.totals())], Format::Text);
        assert!(
            body.contains("\nucx_rndv_total{category=\"BACKEND\"} 4\n"),
            "{body}"
        );
        assert!(
            body.contains("\nagent_errors_total{status=\"backend\"} 0\n"),
            "{body}"
        );
    }

    #[test]
    fn families_come_in_exposition_order_and_per_name_ones_merge_by_name() {
        let buckets = Buckets::new(&[10.0]).unwrap();
        let mut one = AgentMetrics::new("one", buckets.clone(), SeriesNaming::Prometheus);
        let mut two = AgentMetrics::new("two", buckets.clone(), SeriesNaming::Prometheus);
        one.record(&[
            Event::new(1, Category::CUSTOM, "zeta", 1),
            Event::new(1, Category::CUSTOM, "alpha", 2),
        ]);
        two.record(&[
            Event::new(1, Category::CUSTOM, "alpha", 3),
            Event::new(1, Category::MEMORY, "agent_memory_deregistered", 7),
        ]);
        let l1 = AgentLabels::new([("agent_name", "one")], buckets.bounds());
        let l2 = AgentLabels::new([("agent_name", "two")], buckets.bounds());
        let body = text(
            &[(&l1, one.totals()), (&l2, two.totals())],
            Format::OpenMetrics,
        );
        let types: Vec<&str> = body
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .collect();
        assert_eq!(types[0], "agent_tx_bytes counter");
        assert_eq!(types[11], "agent_xfer_time_total unknown");
        let errors = types
            .iter()
            .position(|t| *t == "agent_errors counter")
            .unwrap();
        assert_eq!(types[errors - 1], "agent_xfer_post_time_us histogram");
        assert_eq!(types[errors + 1], "agent_telemetry_events_dropped counter");
        assert_eq!(&types[types.len() - 2..], ["alpha counter", "zeta counter"]);
        let alpha = body.find("# TYPE alpha").unwrap();
        assert!(body[alpha..].starts_with(
            "# TYPE alpha counter\nalpha_total{agent_name=\"one\",category=\"CUSTOM\"} 2\nalpha_total{agent_name=\"two\",category=\"CUSTOM\"} 3\n"
        ));
        assert!(body.contains("agent_memory_registered_bytes{agent_name=\"two\"} -7\n"));
        assert!(body.ends_with("# EOF\n"));
    }

    #[test]
    fn help_texts_are_escaped_per_format() {
        let mut out = Vec::new();
        write_header(&mut out, Format::Text, "f", "gauge", "a \"q\" \\ b\nc");
        assert_eq!(out, b"# HELP f a \"q\" \\\\ b\\nc\n# TYPE f gauge\n");
        out.clear();
        write_header(&mut out, Format::OpenMetrics, "f", "gauge", "a \"q\"");
        assert_eq!(out, b"# HELP f a \\\"q\\\"\n# TYPE f gauge\n");
        out.clear();
        write_counter_header(&mut out, Format::OpenMetrics, "x_total", "h", true);
        assert_eq!(out, b"# HELP x_total h\n# TYPE x_total unknown\n");
    }
}
