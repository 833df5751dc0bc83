//! `top --plain` (and `top` whose stdout is no terminal): a table printed at
//! every refresh, numbers unscaled so that scripts and tests can read them.
//!
//! ```text
//! nixl-telemetry top at 2026-11-26 17:40:01: interval 1.002 s, 2 agents, peeking
//! AGENT      VERSION  EVENTS/S  TX B/S     RX B/S     REQ/S   P50 µs  P99 µs  ERRORS                    MEMORY REGISTERED  LOST  NOTE
//! initiator  1        4000.0    2048000.0  4096000.0  1000.0  37.5    49.8    4(not_found:3,backend:1)  33554432           0
//! ```
//!
//! A rate that is not known is `?` (the NOTE says why), a percentile
//! without transfers `-`; tables are separated by an empty line.

use std::fmt::Write as _;

use super::row::shown_text;
use super::row::Row;

const HEADER: [&str; 12] = [
    "AGENT",
    "VERSION",
    "EVENTS/S",
    "TX B/S",
    "RX B/S",
    "REQ/S",
    "P50 µs",
    "P99 µs",
    "ERRORS",
    "MEMORY REGISTERED",
    "LOST",
    "NOTE",
];

/// The cells of one row.
fn cells(row: &Row, consuming: bool) -> [String; 12] {
    let rate = |v: Option<f64>| v.map_or_else(|| "?".to_owned(), |v| format!("{v:.1}"));
    let r = row.rates.as_ref();
    let percentile = |v: Option<Option<f64>>| match v {
        None => "?".to_owned(),
        Some(None) => "-".to_owned(),
        Some(Some(us)) => format!("{us:.1}"),
    };
    let errors = if row.errors_by_status.is_empty() {
        row.errors.to_string()
    } else {
        let parts: Vec<String> = row
            .errors_by_status
            .iter()
            .map(|(s, n)| format!("{s}:{n}"))
            .collect();
        format!("{}({})", row.errors, parts.join(","))
    };
    let mut note = Vec::new();
    if row.gone {
        note.push("gone".to_owned());
    }
    let flags = row.flags.note(consuming);
    if !flags.is_empty() {
        note.push(flags);
    }
    if let (None, Some(w)) = (r, row.written_per_s) {
        note.push(format!("producer wrote {w:.1} events/s"));
    }
    [
        row.agent.clone(),
        row.version
            .map_or_else(|| "-".to_owned(), |v| v.to_string()),
        rate(r.map(|r| r.events_per_s)),
        rate(r.map(|r| r.tx_bytes_per_s)),
        rate(r.map(|r| r.rx_bytes_per_s)),
        rate(r.map(|r| r.requests_per_s)),
        percentile(r.map(|r| r.p50_us)),
        percentile(r.map(|r| r.p99_us)),
        errors,
        row.memory_registered.to_string(),
        row.lost.map_or_else(|| "-".to_owned(), |n| n.to_string()),
        note.join("; "),
    ]
}

/// One table: a title line, the header, a row per agent, then the files
/// skipped.
pub fn table(
    title: &str,
    rows: &[Row],
    skipped: &[(std::path::PathBuf, String)],
    consuming: bool,
) -> String {
    let body: Vec<[String; 12]> = rows.iter().map(|r| cells(r, consuming)).collect();
    let mut widths = HEADER.map(|h| h.chars().count());
    for line in &body {
        for (w, cell) in widths.iter_mut().zip(line) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let _ = writeln!(out, "{title}");
    let mut line = |cells: &[String]| {
        let mut text = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i > 0 {
                text.push_str("  ");
            }
            text.push_str(cell);
            for _ in cell.chars().count()..w {
                text.push(' ');
            }
        }
        let _ = writeln!(out, "{}", text.trim_end());
    };
    line(&HEADER.map(str::to_owned));
    for cells in &body {
        line(cells);
    }
    if rows.is_empty() {
        let _ = writeln!(out, "(no agents yet)");
    }
    for (path, reason) in skipped {
        let line = format!("skipped {}: {reason}", path.display());
        let _ = writeln!(out, "{}", shown_text(&line));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::row::{Flags, Rates};
    use super::*;

    #[test]
    fn a_file_name_with_a_bidirectional_control_is_shown_escaped() {
        let text = table(
            "title",
            &[],
            &[("/d/gpu\u{202e}lmth.exe".into(), "too short".into())],
            false,
        );
        assert!(!text.contains('\u{202e}'), "{text:?}");
        assert!(text.contains("gpu\\u{202e}lmth.exe"), "{text}");
    }

    #[test]
    fn a_table_with_known_and_unknown_values() {
        let rows = [
            Row {
                agent: "initiator".into(),
                version: Some(1),
                rates: Some(Rates {
                    events_per_s: 4000.0,
                    tx_bytes_per_s: 2048.0,
                    rx_bytes_per_s: 0.0,
                    requests_per_s: 1.0,
                    p50_us: Some(37.5),
                    p99_us: None,
                }),
                errors: 4,
                errors_by_status: vec![("not_found".into(), 3), ("backend".into(), 1)],
                memory_registered: 4096,
                lost: Some(0),
                ..Row::default()
            },
            Row {
                agent: "old".into(),
                gone: true,
                flags: Flags {
                    full: true,
                    ..Flags::default()
                },
                written_per_s: Some(12.0),
                ..Row::default()
            },
        ];
        let text = table(
            "title",
            &rows,
            &[("/d/junk".into(), "too short".into())],
            false,
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "title");
        assert!(
            lines[1].starts_with("AGENT      VERSION  EVENTS/S"),
            "{text}"
        );
        let cols: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(
            cols,
            [
                "initiator",
                "1",
                "4000.0",
                "2048.0",
                "0.0",
                "1.0",
                "37.5",
                "-",
                "4(not_found:3,backend:1)",
                "4096",
                "0"
            ]
        );
        assert!(lines[3].starts_with("old        -        ?"), "{text}");
        assert!(lines[3].ends_with("gone; ring full, nothing consumes it (try --consume); producer wrote 12.0 events/s"), "{text}");
        assert_eq!(lines[4], "skipped /d/junk: too short");
    }
}
