//! `nixl-telemetry process`: turn usage records (JSON lines) into metrics.
//!
//! Each input line is a raw record or `{"now": "<ISO time>", "record": {…}}`. The
//! metrics start from `--state` when given (and the file exists), every line is
//! applied wholly or not at all, and the result is written as sorted JSON or as
//! Prometheus text. The state file is replaced atomically. Bad lines are reported on
//! standard error with their line numbers; the others are still applied, and the exit
//! status is 1 when any line was rejected.

use std::fs;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use clap::{Args, ValueEnum};
use nixl_telemetry_processor::{
    builders_from_list, parse_input_line, render_prometheus, AttributeRegistry, Context,
    MetricProcessor, Metrics, Timestamp, DEFAULT_BUILDERS,
};

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

    let mut metrics = match &args.state {
        Some(path) => load_state(path)?,
        None => Metrics::new(),
    };

    let input: Box<dyn Read> = if args.input.as_os_str() == "-" {
        Box::new(io::stdin().lock())
    } else {
        Box::new(
            fs::File::open(&args.input)
                .with_context(|| format!("cannot open input {}", args.input.display()))?,
        )
    };
    let summary = apply_lines(input, &mut processor, &mut metrics, default_now)?;

    let rendered = match args.format {
        Format::Json => metrics.to_json_string(),
        Format::Prometheus => render_prometheus(&metrics, |family| processor.metric_kind(family))?,
    };
    if let Some(path) = &args.state {
        replace_atomically(path, metrics.to_json_string().as_bytes())
            .with_context(|| format!("cannot write state {}", path.display()))?;
    }
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
    let mut reader = BufReader::with_capacity(1 << 20, input);
    let mut line = Vec::with_capacity(4096);
    let mut number = 0u64;
    let mut summary = Summary {
        applied: 0,
        rejected: 0,
    };
    let start = Instant::now();
    let mut next_progress = start + PROGRESS_EVERY;
    let mut stderr = io::stderr();
    loop {
        line.clear();
        if reader
            .read_until(b'\n', &mut line)
            .context("cannot read input")?
            == 0
        {
            break;
        }
        number += 1;
        let result = apply_line(&line, processor, metrics, default_now);
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
    let input = parse_input_line(text).map_err(|e| e.to_string())?;
    let context = Context {
        now: input.now.or(default_now),
        old_now: None,
    };
    processor
        .process(metrics, &input.record, &context)
        .map_err(|e| e.to_string())?;
    Ok(true)
}

/// Reads a state file; a missing file is empty metrics.
fn load_state(path: &Path) -> anyhow::Result<Metrics> {
    match fs::read_to_string(path) {
        Ok(text) => Metrics::from_json_str(&text)
            .with_context(|| format!("state file {} cannot be loaded", path.display())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Metrics::new()),
        Err(e) => Err(e).with_context(|| format!("cannot read state {}", path.display())),
    }
}

/// Replaces `path` with `bytes` so that a reader (or a crash) sees the old file or the
/// new one, never a mix: write a temporary file in the same directory, flush it to
/// disk, rename it over `path`, then flush the directory entry.
fn replace_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let Some(name) = path.file_name() else {
        bail!("{} is not a file path", path.display());
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{}.", name.to_string_lossy()))
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    fs::File::open(dir)?.sync_all()?;
    Ok(())
}
