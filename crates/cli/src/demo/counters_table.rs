//! The demo's table for an exporter without rings (a plug-in, `nop`): no
//! ring to read as `top` does, so per agent the events delivered per second
//! and the events lost come from `Telemetry::stats()`, the bytes and errors
//! from the workload's own counters.

use std::fmt::Write as _;
use std::time::Duration;

use nixl_telemetry_workload::{AgentCounters, Workload};

/// One row of the table.
#[derive(Debug, Clone)]
struct Row {
    agent: String,
    events_per_s: f64,
    mb_per_s: f64,
    errors: u64,
    lost: u64,
}

/// The header line of the table, for agent names up to `agent_width`.
pub fn header(agent_width: usize) -> String {
    let width = agent_width.max(5);
    format!(
        "{:>7}  {:<width$}  {:>10}  {:>9}  {:>7}  {:>7}",
        "time", "agent", "events/s", "MB/s", "errors", "lost"
    )
}

/// The counters at the previous table, per agent.
pub struct CountersTable {
    last: Vec<(u64, AgentCounters)>,
}

impl CountersTable {
    /// Starts from the current counters.
    pub fn new(workload: &Workload) -> CountersTable {
        CountersTable {
            last: workload
                .agents()
                .iter()
                .map(|a| (a.telemetry().stats().delivered, a.counters()))
                .collect(),
        }
    }

    /// The rows since the last call, `label` in the first column.
    pub fn render(&mut self, workload: &Workload, elapsed: Duration, label: &str) -> String {
        let secs = elapsed.as_secs_f64().max(1e-3);
        let rows: Vec<Row> = workload
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
                    errors: counters.errors,
                    lost: stats.dropped.total(),
                };
                *last = (stats.delivered, counters);
                row
            })
            .collect();
        render(label, &rows)
    }
}

fn render(label: &str, rows: &[Row]) -> String {
    let width = rows.iter().map(|r| r.agent.len()).max().unwrap_or(5).max(5);
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        let _ = writeln!(
            out,
            "{:>7}  {:<width$}  {:>10.0}  {:>9.1}  {:>7}  {:>7}",
            if i == 0 { label } else { "" },
            r.agent,
            r.events_per_s,
            r.mb_per_s,
            r.errors,
            r.lost,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_line_up_under_the_header() {
        let rows = [
            Row {
                agent: "initiator".into(),
                events_per_s: 1234.4,
                mb_per_s: 5.25,
                errors: 2,
                lost: 0,
            },
            Row {
                agent: "target".into(),
                events_per_s: 7.0,
                mb_per_s: 0.0,
                errors: 0,
                lost: 3,
            },
        ];
        let text = render("1 s", &rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0].trim_start().starts_with("1 s  initiator"),
            "{text}"
        );
        assert!(lines[1].trim_start().starts_with("target"), "{text}");
        let head = header(9);
        assert_eq!(head.len(), lines[0].len(), "{head}\n{text}");
        assert!(lines[0].ends_with("2        0"), "{text}");
    }
}
