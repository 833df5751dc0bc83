//! `nixl-telemetry process`: turn usage records (JSON lines) into metrics.
//!
//! Each input line is a raw record or `{"now": "<ISO time>", "record": {…}}`. The
//! metrics start from `--state` when given (and the file exists), every line is
//! applied wholly or not at all, and the result is written as sorted JSON or as
//! Prometheus text. The state file is replaced atomically. Bad lines are reported on
//! standard error with their line numbers; the others are still applied, and the exit
//! status is 1 when any line was rejected.

use std::fs;
use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use nixl_telemetry_processor::{
    builders_from_list, render_prometheus, AttributeRegistry, Context, MetricProcessor, Metrics,
    Timestamp, DEFAULT_BUILDERS,
};

use nixl_telemetry_views::lines::{open_input, BoundedLines, Line};

mod state;

use state::StateFile;

/// The longest input line (one record) read, in bytes (16 MiB); a longer line is
/// reported and skipped without being kept in memory.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// Output format of `process`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// One JSON object, keys sorted, one member per line.
    Json,
    /// Prometheus text exposition with `# TYPE` lines.
    Prometheus,
}

/// Arguments of `nixl-telemetry process`.
#[derive(Debug, Args)]
pub struct ProcessArgs {
    /// Records, one JSON object per line: a raw record or {"now": ISO, "record": {…}}
    /// (`-` reads standard input).
    #[arg(long, value_name = "FILE|-")]
    input: PathBuf,
    /// Metrics to start from (JSON, as written by this command); replaced atomically
    /// with the result. A missing file starts from empty metrics.
    #[arg(long, value_name = "FILE")]
    state: Option<PathBuf>,
    /// Where to write the metrics (default: standard output).
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Comma-separated builders, run in order: legacy, comprehensive, time, labeled
    /// (an empty list runs none).
    #[arg(long, value_name = "LIST", default_value_t = DEFAULT_BUILDERS.join(","))]
    builders: String,
    /// Attribute registry (.toml or .json) instead of the built-in one.
    #[arg(long, value_name = "FILE")]
    attributes: Option<PathBuf>,
    /// The time of records that carry none (default: the current local time).
    #[arg(long, value_name = "ISO")]
    now: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Json)]
    format: Format,
}

/// Seconds of work before progress is shown, and between two progress lines.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// Runs the command.
pub fn run(args: ProcessArgs) -> anyhow::Result<ExitCode> {
    let registry = match &args.attributes {
        Some(path) => AttributeRegistry::from_path(path)?,
        None => AttributeRegistry::default(),
    };
    let builders = builders_from_list(&args.builders)?;
    let mut processor = MetricProcessor::with_builders(registry, builders)?;
    let default_now = args
        .now
        .as_deref()
        .map(Timestamp::parse_iso)
        .transpose()
        .context("--now")?;

    // Locked until the new state is in place: concurrent runs on one state take turns.
    let state = args.state.as_deref().map(StateFile::lock).transpose()?;
    let mut metrics = match &state {
        Some(state) => state.load()?,
        None => Metrics::new(),
    };

    let input = open_input(&args.input, "--input")?;
    let summary = apply_lines(input, &mut processor, &mut metrics, default_now)?;

    let rendered = match args.format {
        Format::Json => metrics.to_json_string(),
        Format::Prometheus => render_prometheus(&metrics, |family| processor.metric_kind(family))?,
    };
    if let (Some(state), Some(path)) = (&state, &args.state) {
        state
            .replace(metrics.to_json_string().as_bytes())
            .with_context(|| format!("cannot write state {}", path.display()))?;
    }
    drop(state);
    match &args.output {
        Some(path) => fs::write(path, rendered.as_bytes())
            .with_context(|| format!("cannot write output {}", path.display()))?,
        None => {
            let mut out = io::stdout().lock();
            match out
                .write_all(rendered.as_bytes())
                .and_then(|()| out.flush())
            {
                // A reader that stopped early (`| head`) is not an error of ours.
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
                other => other.context("cannot write to standard output")?,
            }
        }
    }
    if summary.rejected > 0 {
        eprintln!(
            "nixl-telemetry process: {} records applied, {} lines rejected",
            summary.applied, summary.rejected
        );
        Ok(ExitCode::from(1))
    } else {
        Ok(ExitCode::SUCCESS)
    }
}

/// Applies every line of `input` as [`run`] does and returns how many records
/// were applied and how many lines rejected. An entry point for the fuzz targets
/// in `fuzz/`; not a stable interface.
#[doc(hidden)]
pub fn apply_input(
    input: impl Read,
    processor: &mut MetricProcessor,
    metrics: &mut Metrics,
    default_now: Option<Timestamp>,
) -> anyhow::Result<(u64, u64)> {
    let summary = apply_lines(input, processor, metrics, default_now)?;
    Ok((summary.applied, summary.rejected))
}

/// Locks and loads the state file at `path` as `run --state` does (a missing
/// file is empty metrics). An entry point for the fuzz targets in `fuzz/`; not a
/// stable interface.
#[doc(hidden)]
pub fn load_state(path: &std::path::Path) -> anyhow::Result<Metrics> {
    StateFile::lock(path)?.load()
}

/// What happened to the input.
struct Summary {
    applied: u64,
    rejected: u64,
}

/// Applies every line of `input`, reporting rejected lines (numbered from 1) and, for
/// long inputs, progress on standard error.
fn apply_lines(
    input: impl Read,
    processor: &mut MetricProcessor,
    metrics: &mut Metrics,
    default_now: Option<Timestamp>,
) -> anyhow::Result<Summary> {
    let mut lines = BoundedLines::new(input, MAX_LINE_BYTES, 1 << 20);
    let mut summary = Summary {
        applied: 0,
        rejected: 0,
    };
    let start = Instant::now();
    let mut next_progress = start + PROGRESS_EVERY;
    let mut stderr = io::stderr();
    while let Some((number, line)) = lines.next_line().context("cannot read input")? {
        let result = match line {
            Line::Bytes(line) => apply_line(line, processor, metrics, default_now),
            Line::TooLong(length) => Err(format!(
                "the line is {length} bytes, longer than the limit of {MAX_LINE_BYTES} bytes for one record; skipped"
            )),
        };
        match result {
            Ok(true) => summary.applied += 1,
            Ok(false) => {}
            Err(message) => {
                summary.rejected += 1;
                let _ = writeln!(stderr, "nixl-telemetry process: line {number}: {message}");
            }
        }
        // Look at the clock only every 4096 lines.
        if number & 4095 == 0 {
            let now = Instant::now();
            if now >= next_progress {
                next_progress = now + PROGRESS_EVERY;
                let secs = now.duration_since(start).as_secs_f64();
                let _ = writeln!(
                    stderr,
                    "nixl-telemetry process: {number} lines read ({} applied, {} rejected), {:.0} lines/s",
                    summary.applied,
                    summary.rejected,
                    number as f64 / secs
                );
            }
        }
    }
    Ok(summary)
}

/// Applies one line; `Ok(false)` for a blank line, `Err` with the reason for a
/// rejected one.
fn apply_line(
    line: &[u8],
    processor: &mut MetricProcessor,
    metrics: &mut Metrics,
    default_now: Option<Timestamp>,
) -> Result<bool, String> {
    let text = std::str::from_utf8(line).map_err(|e| format!("not UTF-8 text ({e})"))?;
    let text = text.trim();
    if text.is_empty() {
        return Ok(false);
    }
    let context = Context {
        now: default_now,
        old_now: None,
    };
    processor
        .process_line(metrics, text, &context)
        .map_err(|e| e.to_string())?;
    Ok(true)
}
