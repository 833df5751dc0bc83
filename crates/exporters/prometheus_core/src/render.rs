//! Formatting snapshots of agents as the Prometheus text format 0.0.4 or
//! OpenMetrics 1.0, and the sample lines (name and labels, up to the value)
//! each agent stores once.

use std::collections::BTreeMap;
use std::sync::Arc;

use nixl_telemetry_abi::Category;

use crate::agent::{AgentShared, DynKind, Snapshot};
use crate::families::{
    om_counter_collides, Kind, Source, ERRORS_HELP, ERRORS_SAMPLE, HISTOGRAMS, PER_NAME_HELP,
    SCALARS, SYSTEM_SCALARS,
};
use crate::names::escape_label_value;

/// An exposition format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// Prometheus text format 0.0.4 (`text/plain; version=0.0.4`).
    Text,
    /// OpenMetrics 1.0 text (`application/openmetrics-text`), ending in `# EOF`.
    OpenMetrics,
}

impl Format {
    /// An index for per-format tables.
    pub(crate) fn index(self) -> usize {
        match self {
            Format::Text => 0,
            Format::OpenMetrics => 1,
        }
    }
}

/// `agent_name="…",hostname="…"` for `agent` on `hostname`: the labels of
/// NIXL's own plug-in (1.4 and later), in its order.
fn labels(out: &mut Vec<u8>, hostname: &str, agent: &str) {
    out.extend_from_slice(b"agent_name=\"");
    escape_label_value(out, agent);
    out.extend_from_slice(b"\",hostname=\"");
    escape_label_value(out, hostname);
    out.push(b'"');
}

/// `sample{agent_name="…",hostname="…"[,category="…"][,extra="value"]} `.
///
/// Only the per-name counters carry `category`: one event name may come in
/// several categories, and the label keeps those series apart.
pub(crate) fn line(
    sample: &str,
    category: Option<Category>,
    hostname: &str,
    agent: &str,
    extra: Option<(&str, &str)>,
) -> Box<[u8]> {
    let mut out = Vec::with_capacity(sample.len() + agent.len() + hostname.len() + 64);
    out.extend_from_slice(sample.as_bytes());
    out.push(b'{');
    labels(&mut out, hostname, agent);
    if let Some(category) = category {
        out.extend_from_slice(b",category=\"");
        out.extend_from_slice(category.to_string().as_bytes());
        out.push(b'"');
    }
    if let Some((name, value)) = extra {
        out.push(b',');
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"=\"");
        escape_label_value(&mut out, value);
        out.push(b'"');
    }
    out.extend_from_slice(b"} ");
    out.into_boxed_slice()
}

/// A histogram bound as written in `le`: the shortest decimal that reads back
/// as the same number (`10`, `2500`, `0.5`).
pub(crate) fn format_bound(bound: f64) -> String {
    format!("{bound}")
}

/// The `# HELP` / `# TYPE` lines of one family.
pub(crate) fn header(out: &mut Vec<u8>, format: Format, family: &str, type_name: &str, help: &str) {
    out.extend_from_slice(b"# HELP ");
    out.extend_from_slice(family.as_bytes());
    out.push(b' ');
    // Help texts are ours, but escape them as each format requires anyway.
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

/// The header of a counter whose samples are called `sample`: in OpenMetrics
/// the family drops `_total`, unless that name belongs to another family, in
/// which case the counter is declared `unknown` under its full name.
pub(crate) fn counter_header(
    out: &mut Vec<u8>,
    format: Format,
    sample: &str,
    help: &str,
    collides: bool,
) {
    match (format, sample.strip_suffix("_total")) {
        (Format::OpenMetrics, Some(family)) if !collides => {
            header(out, format, family, "counter", help)
        }
        (Format::OpenMetrics, _) => header(out, format, sample, "unknown", help),
        (Format::Text, _) => header(out, format, sample, "counter", help),
    }
}

#[inline]
fn sample(out: &mut Vec<u8>, line: &[u8], value: impl itoa::Integer) {
    out.extend_from_slice(line);
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
    out.push(b'\n');
}

fn scalars(
    out: &mut Vec<u8>,
    format: Format,
    agents: &[(&AgentShared, Snapshot)],
    range: std::ops::Range<usize>,
) {
    for i in range {
        let family = &SCALARS[i];
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
        for (agent, snap) in agents {
            let line = &agent.scalar_lines[i];
            match family.source {
                Source::Slot(s) => sample(out, line, snap.fixed[s]),
                Source::RegisteredNow => {
                    use crate::families::slot;
                    let now = i128::from(snap.fixed[slot::MEM_REGISTERED])
                        - i128::from(snap.fixed[slot::MEM_DEREGISTERED]);
                    sample(out, line, now)
                }
            }
        }
    }
}

/// Renders every series of `agents` (sorted by name) in `format`.
pub(crate) fn render(agents: &[Arc<AgentShared>], format: Format) -> Vec<u8> {
    let snaps: Vec<(&AgentShared, Snapshot)> =
        agents.iter().map(|a| (&**a, a.snapshot())).collect();
    let series: usize = snaps
        .iter()
        .map(|(_, s)| 64 + s.dynamic.len() + 2 * s.histograms[0].len())
        .sum();
    let mut out = Vec::with_capacity(4096 + series * 112);

    let main = 0..SCALARS.len() - SYSTEM_SCALARS;
    scalars(&mut out, format, &snaps, main);

    for (h, histogram) in HISTOGRAMS.iter().enumerate() {
        header(
            &mut out,
            format,
            histogram.family,
            "histogram",
            histogram.help,
        );
        for (agent, snap) in &snaps {
            let lines = &agent.histogram_lines[h];
            let mut cumulative = 0u64;
            for (line, &count) in lines.buckets.iter().zip(&snap.histograms[h]) {
                cumulative = cumulative.saturating_add(count);
                sample(&mut out, line, cumulative);
            }
            sample(&mut out, &lines.sum, snap.fixed[histogram.sum_slot]);
            sample(&mut out, &lines.count, cumulative);
        }
    }

    counter_header(&mut out, format, ERRORS_SAMPLE, ERRORS_HELP, false);
    for (_, snap) in &snaps {
        for (series, &value) in snap.dynamic.iter().zip(&snap.dynamic_values) {
            if matches!(series.kind, DynKind::Error) {
                sample(&mut out, &series.line, value);
            }
        }
    }

    let system = SCALARS.len() - SYSTEM_SCALARS..SCALARS.len();
    scalars(&mut out, format, &snaps, system);

    // Per-name families, merged over agents, by name.
    let mut named: BTreeMap<&str, Vec<(&[u8], u64)>> = BTreeMap::new();
    for (_, snap) in &snaps {
        for (series, &value) in snap.dynamic.iter().zip(&snap.dynamic_values) {
            if let DynKind::Named(name) = &series.kind {
                named.entry(name).or_default().push((&series.line, value));
            }
        }
    }
    for (name, lines) in named {
        counter_header(&mut out, format, name, PER_NAME_HELP, false);
        for (line, value) in lines {
            sample(&mut out, line, value);
        }
    }

    if format == Format::OpenMetrics {
        out.extend_from_slice(b"# EOF\n");
    }
    out
}
