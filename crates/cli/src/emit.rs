//! `nixl-telemetry emit`: record events the way an agent would.
//!
//! Telemetry is built from the `NIXL_TELEMETRY_*` environment exactly as a host
//! builds it; each JSON line of the input is recorded; then everything is
//! flushed, the exporter is kept alive for `--hold` seconds (so a scraper can
//! read it), and one summary line goes to stderr.

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use nixl_telemetry::{Category, Direction, Telemetry};
use serde_json::{Map, Value};

use nixl_telemetry_views::lines::{open_input, BoundedLines, Line as InputLine};

/// The longest `--events` line read, in bytes (1 MiB; an event line is well under
/// 1 KiB). A longer line is reported and skipped without being kept in memory.
pub const MAX_EVENT_LINE_BYTES: usize = 1 << 20;

/// Options of `nixl-telemetry emit`.
#[derive(Debug, Args)]
pub struct EmitArgs {
    /// The agent's name (the ring file's name for the buffer exporter).
    #[arg(long)]
    agent: String,
    /// JSON-lines input, or `-` for standard input.
    #[arg(long, default_value = "-")]
    events: String,
    /// Seconds to keep the exporter alive after the last event.
    #[arg(long, default_value_t = 0.0)]
    hold: f64,
}

const ACCEPTED_FORMS: &str = r#"{"category": "TRANSFER" or 1, "name": "...", "value": N}, {"xfer": {"us": N, "write": true|false, "bytes": N}}, {"error": "NIXL_ERR_..."}, {"memory_registered": N}, {"memory_deregistered": N}, {"post_time": N}"#;

/// One input line, understood.
#[derive(Debug, PartialEq)]
enum Line {
    Event {
        category: Category,
        name: String,
        value: u64,
    },
    Transfer {
        us: u64,
        direction: Direction,
        bytes: u64,
    },
    Error(String),
    MemoryRegistered(u64),
    MemoryDeregistered(u64),
    PostTime(u64),
}

fn unsigned(value: &Value, key: &str) -> Result<u64, String> {
    value
        .as_u64()
        .ok_or_else(|| format!("{key:?} must be a non-negative integer, got {value}"))
}

fn text(value: &Value, key: &str) -> Result<String, String> {
    match value.as_str() {
        Some(s) if !s.is_empty() => Ok(s.to_owned()),
        _ => Err(format!("{key:?} must be a non-empty string, got {value}")),
    }
}

fn field<'a>(obj: &'a Map<String, Value>, key: &str, within: &str) -> Result<&'a Value, String> {
    obj.get(key)
        .ok_or_else(|| format!("{within} needs {key:?}"))
}

fn parse_category(value: &Value) -> Result<Category, String> {
    let parsed = match value {
        Value::Number(n) => n.as_i64().and_then(|n| i32::try_from(n).ok()).map(Category),
        Value::String(s) => Category::parse(s),
        _ => None,
    };
    parsed.ok_or_else(|| {
        format!("\"category\" must be a category name (MEMORY, TRANSFER, CONNECTION, BACKEND, ERROR, PERFORMANCE, SYSTEM, CUSTOM) or a 32-bit integer, got {value}")
    })
}

fn parse_line(line: &str) -> Result<Line, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(obj) = value else {
        return Err(format!(
            "expected a JSON object; accepted forms: {ACCEPTED_FORMS}"
        ));
    };
    let keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    let only = |allowed: &[&str]| -> Result<(), String> {
        match keys.iter().find(|k| !allowed.contains(k)) {
            Some(k) => Err(format!(
                "unexpected key {k:?}; accepted forms: {ACCEPTED_FORMS}"
            )),
            None => Ok(()),
        }
    };
    if obj.contains_key("name") || obj.contains_key("category") {
        only(&["category", "name", "value"])?;
        return Ok(Line::Event {
            category: parse_category(field(&obj, "category", "an event")?)?,
            name: text(field(&obj, "name", "an event")?, "name")?,
            value: unsigned(field(&obj, "value", "an event")?, "value")?,
        });
    }
    let [key] = keys[..] else {
        return Err(format!(
            "expected exactly one of the accepted forms: {ACCEPTED_FORMS}"
        ));
    };
    let v = &obj[key];
    Ok(match key {
        "xfer" => {
            let Value::Object(x) = v else {
                return Err(format!("\"xfer\" must be an object like {{\"us\": 120, \"write\": true, \"bytes\": 4096}}, got {v}"));
            };
            if let Some(k) = x
                .keys()
                .find(|k| !["us", "write", "bytes"].contains(&k.as_str()))
            {
                return Err(format!(
                    "unexpected key {k:?} in \"xfer\"; accepted: us, write, bytes"
                ));
            }
            let write = field(x, "write", "\"xfer\"")?.as_bool().ok_or_else(|| {
                "\"write\" must be true (agent_tx_*) or false (agent_rx_*)".to_owned()
            })?;
            Line::Transfer {
                us: unsigned(field(x, "us", "\"xfer\"")?, "us")?,
                direction: if write {
                    Direction::Write
                } else {
                    Direction::Read
                },
                bytes: unsigned(field(x, "bytes", "\"xfer\"")?, "bytes")?,
            }
        }
        "error" => Line::Error(text(v, "error")?),
        "memory_registered" => Line::MemoryRegistered(unsigned(v, key)?),
        "memory_deregistered" => Line::MemoryDeregistered(unsigned(v, key)?),
        "post_time" => Line::PostTime(unsigned(v, key)?),
        other => {
            return Err(format!(
                "unexpected key {other:?}; accepted forms: {ACCEPTED_FORMS}"
            ))
        }
    })
}

/// Parses one `--events` line (already trimmed, not blank, not a comment) as
/// [`run`] does, and returns what would be recorded (its `Debug` form) or why the
/// line is rejected. An entry point for the fuzz targets in `fuzz/`; not a stable
/// interface.
#[doc(hidden)]
pub fn parse_event_line(line: &str) -> Result<String, String> {
    parse_line(line).map(|parsed| format!("{parsed:?}"))
}

fn record(telemetry: &Telemetry, line: Line) {
    match line {
        Line::Event {
            category,
            name,
            value,
        } => telemetry.record(category, &name, value),
        Line::Transfer {
            us,
            direction,
            bytes,
        } => telemetry.transfer_completed(us, direction, bytes),
        Line::Error(status) => telemetry.error(&status),
        Line::MemoryRegistered(bytes) => telemetry.memory_registered(bytes),
        Line::MemoryDeregistered(bytes) => telemetry.memory_deregistered(bytes),
        Line::PostTime(us) => telemetry.post_time(us),
    }
}

/// Runs `emit`.
pub fn run(args: EmitArgs) -> anyhow::Result<ExitCode> {
    if !(args.hold.is_finite() && args.hold >= 0.0) {
        anyhow::bail!(
            "--hold {} is invalid; accepted: a number of seconds ≥ 0",
            args.hold
        );
    }
    let telemetry = match Telemetry::from_env(&args.agent) {
        Ok(t) => t,
        Err(err) => {
            eprintln!("nixl-telemetry emit: configuration error: {err}");
            return Ok(ExitCode::from(2));
        }
    };
    let input = open_input(Path::new(&args.events), "--events")?;
    let mut rejected = 0u64;
    let mut lines = 0u64;
    let mut input = BoundedLines::new(input, MAX_EVENT_LINE_BYTES, 64 << 10);
    while let Some((number, line)) = input
        .next_line()
        .with_context(|| format!("cannot read --events {}", args.events))?
    {
        let verdict = match line {
            InputLine::Bytes(bytes) => match std::str::from_utf8(bytes) {
                Ok(text) => {
                    let trimmed = text.trim();
                    if trimmed.is_empty() || trimmed.starts_with('#') {
                        continue;
                    }
                    parse_line(trimmed)
                }
                Err(e) => Err(format!(
                    "not UTF-8 text (invalid byte at offset {}); skipped",
                    e.valid_up_to()
                )),
            },
            InputLine::TooLong(length) => Err(format!(
                "the line is {length} bytes, longer than the limit of {MAX_EVENT_LINE_BYTES} bytes; skipped"
            )),
        };
        lines += 1;
        match verdict {
            Ok(parsed) => record(&telemetry, parsed),
            Err(reason) => {
                rejected += 1;
                eprintln!("nixl-telemetry emit: line {number}: {reason}");
            }
        }
    }
    telemetry.flush();
    let deadline = Instant::now() + Duration::from_secs_f64(args.hold);
    while Instant::now() < deadline {
        std::thread::sleep((deadline - Instant::now()).min(Duration::from_millis(100)));
    }
    telemetry.flush();
    let s = telemetry.stats();
    let exporter = if !telemetry.is_enabled() {
        "none (telemetry disabled: NIXL_TELEMETRY_ENABLE is off)"
    } else if telemetry.has_exporter() {
        "configured"
    } else {
        "none (collect only)"
    };
    eprintln!(
        "nixl-telemetry emit: agent={} exporter={exporter} lines={lines} rejected={rejected} recorded={} generated={} delivered={} dropped={} (staging_full={} exporter_full={} exporter_failed={} late={}) pending={}",
        args.agent,
        s.recorded,
        s.generated,
        s.delivered,
        s.dropped.total(),
        s.dropped.staging_full,
        s.dropped.exporter_full,
        s.dropped.exporter_failed,
        s.dropped.late,
        s.pending,
    );
    drop(telemetry);
    Ok(if rejected > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_forms() {
        assert_eq!(
            parse_line(r#"{"category": "TRANSFER", "name": "agent_tx_bytes", "value": 4096}"#),
            Ok(Line::Event {
                category: Category::TRANSFER,
                name: "agent_tx_bytes".into(),
                value: 4096
            })
        );
        assert_eq!(
            parse_line(r#"{"category": 42, "name": "x", "value": 0}"#),
            Ok(Line::Event {
                category: Category(42),
                name: "x".into(),
                value: 0
            })
        );
        assert_eq!(
            parse_line(r#"{"xfer": {"us": 120, "write": false, "bytes": 8}}"#),
            Ok(Line::Transfer {
                us: 120,
                direction: Direction::Read,
                bytes: 8
            })
        );
        assert_eq!(
            parse_line(r#"{"error": "NIXL_ERR_BACKEND"}"#),
            Ok(Line::Error("NIXL_ERR_BACKEND".into()))
        );
        assert_eq!(
            parse_line(r#"{"memory_registered": 65536}"#),
            Ok(Line::MemoryRegistered(65536))
        );
    }

    #[test]
    fn rejected_forms_say_why() {
        for (line, why) in [
            ("nope", "not JSON"),
            ("[1]", "JSON object"),
            (
                r#"{"category": "BOGUS", "name": "x", "value": 1}"#,
                "category name",
            ),
            (
                r#"{"category": 1, "name": "x", "value": -1}"#,
                "non-negative",
            ),
            (r#"{"category": 1, "name": "", "value": 1}"#, "non-empty"),
            (r#"{"category": 1, "value": 1}"#, "needs \"name\""),
            (r#"{"xfer": {"us": 1, "bytes": 2}}"#, "needs \"write\""),
            (r#"{"xfer": 3}"#, "must be an object"),
            (r#"{"frobnicate": 1}"#, "unexpected key"),
            (r#"{"error": "E", "memory_registered": 1}"#, "exactly one"),
        ] {
            let err = parse_line(line).unwrap_err();
            assert!(err.contains(why), "{line}: {err}");
        }
    }
}
