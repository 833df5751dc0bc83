//! The Rust telemetry reader: `telemetry_reader <path>` and `nixl-telemetry read <path>`.
//!
//! Reads NIXL ring files of every version (1–4, the layout detected from the
//! header and the file size), one file or a directory of them (one per
//! agent), and prints each event as a text block, a JSON line, or a summary
//! table (the format is in the `format` module). stdout carries only events (or the table); every other line goes to
//! stderr. The output is byte-identical to `python/telemetry_reader.py` on the
//! same input; the format is fixed in that file's docstring and in
//! `docs/readers.md`.
//!
//! By default the reader consumes (advances `read_pos`) and polls every 100 ms
//! until SIGINT or SIGTERM; `--once` reads what is there and exits, `--peek`
//! never writes to the file. Exit status: 0 done, 1 stdout could not be
//! written, 2 usage error or a missing, broken or truncated file, 3 internal
//! error.

mod format;
mod source;
mod summary;

use std::fmt;
use std::fs::File;
use std::io::{ErrorKind, IsTerminal, Write};
use std::os::fd::AsFd;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use nixl_telemetry::ring::error_message as describe;
use nixl_telemetry::ring::{layout, ReadMode, RingRecord, TrailerInfo};
use nixl_telemetry_abi::{Category, Event};

use crate::local_date::{local_date_time, DateCache};
use crate::printable::escape_control;
use crate::signal::StopFlag;
use format::{NameCache, SlotView};
use source::{InputError, Ring, Source};
use summary::Summary;

/// Exit status: done, or stopped by SIGINT/SIGTERM.
pub const EXIT_OK: u8 = 0;
/// Exit status: stdout could not be written (e.g. the pipe was closed).
pub const EXIT_OUTPUT: u8 = 1;
/// Exit status: usage error, or a missing, broken or truncated file.
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit status: a bug in the reader.
pub const EXIT_INTERNAL: u8 = 3;

const POLL_INTERVAL: Duration = Duration::from_millis(100);
const SUMMARY_INTERVAL: Duration = Duration::from_secs(1);
/// Events taken from a ring at a time. A consuming read commits `read_pos`
/// only after the batch is written out, so when stdout fails nothing is lost:
/// the unwritten part stays unread (what was written of the batch is read
/// again next time).
const BATCH_EVENTS: usize = 8192;
/// Bytes of output collected before they are written.
const WRITE_CHUNK: usize = 256 * 1024;
/// Malformed slots warned about per ring; later ones are only counted.
const MAX_SLOT_WARNINGS: u32 = 10;

/// The reader's options (shared by `telemetry_reader` and `nixl-telemetry read`).
#[derive(Debug, Clone, clap::Args)]
pub struct ReadArgs {
    /// A ring file, or a directory of ring files (one per agent).
    #[arg(
        value_name = "PATH",
        required_unless_present = "telemetry_path",
        conflicts_with = "telemetry_path"
    )]
    pub path: Option<PathBuf>,
    /// The same as PATH (NIXL's reader spells it this way).
    #[arg(
        long = "telemetry_path",
        visible_alias = "telemetry-path",
        value_name = "PATH"
    )]
    pub telemetry_path: Option<PathBuf>,
    /// Read what is there now and exit instead of polling.
    #[arg(long)]
    pub once: bool,
    /// Never write to the file (opened read-only; read_pos is not advanced).
    #[arg(long)]
    pub peek: bool,
    /// One JSON object per event and line.
    #[arg(long, conflicts_with = "summary")]
    pub json: bool,
    /// Print per-agent, per-event statistics instead of events.
    #[arg(long)]
    pub summary: bool,
    /// Only events of this category (name as printed, or number); may be repeated.
    #[arg(long = "category", value_name = "NAME")]
    pub categories: Vec<String>,
    /// Only events whose name matches this glob (`*`, `?`; case-sensitive); may be repeated.
    #[arg(long = "name", value_name = "GLOB")]
    pub names: Vec<String>,
    /// No informational lines on stderr (warnings and errors stay).
    #[arg(short, long)]
    pub quiet: bool,
}

impl ReadArgs {
    fn path(&self) -> &Path {
        self.path
            .as_deref()
            .or(self.telemetry_path.as_deref())
            .expect("clap requires one of PATH and --telemetry_path")
    }
}

/// Informational lines, warnings and errors, all on stderr.
pub struct Log {
    prog: &'static str,
    quiet: bool,
}

impl Log {
    /// A log for the program `prog`; `quiet` drops informational lines.
    pub fn new(prog: &'static str, quiet: bool) -> Log {
        Log { prog, quiet }
    }

    /// Writes one line; control characters in it (a newline in a file or
    /// agent name, which would forge a line) are escaped as in text output.
    fn write(&self, line: fmt::Arguments<'_>) {
        let line = line.to_string();
        let _ = writeln!(std::io::stderr().lock(), "{}", escape_control(&line));
    }

    /// An informational line.
    pub fn info(&self, line: fmt::Arguments<'_>) {
        if !self.quiet {
            self.write(line);
        }
    }

    /// A warning.
    pub fn warn(&self, line: fmt::Arguments<'_>) {
        self.write(format_args!("{}: warning: {line}", self.prog));
    }

    /// An error.
    pub fn error(&self, line: fmt::Arguments<'_>) {
        self.write(format_args!("{}: error: {line}", self.prog));
    }
}

/// stdout could not be written.
#[derive(Debug)]
struct OutputError(String);

/// stdout as raw bytes: writes go straight to (a duplicate of) file descriptor 1.
struct Output {
    file: Result<File, String>,
    tty: bool,
}

impl Output {
    fn new() -> Output {
        let stdout = std::io::stdout();
        Output {
            tty: stdout.is_terminal(),
            file: stdout
                .as_fd()
                .try_clone_to_owned()
                .map(File::from)
                .map_err(|e| format!("cannot write to stdout ({e})")),
        }
    }

    fn write(&mut self, mut data: &[u8]) -> Result<(), OutputError> {
        let file = self.file.as_mut().map_err(|e| OutputError(e.clone()))?;
        while !data.is_empty() {
            match file.write(data) {
                Ok(0) => return Err(OutputError("stdout accepts no more data".into())),
                Ok(n) => data = &data[n..],
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                Err(e) if e.kind() == ErrorKind::BrokenPipe => {
                    return Err(OutputError("stdout was closed".into()))
                }
                Err(e) => return Err(OutputError(format!("cannot write to stdout ({e})"))),
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Text,
    Json,
    Summary,
}

/// Decodes batches of events and writes them out (or counts them for the summary).
struct Emitter {
    mode: Mode,
    names: NameCache,
    dates: DateCache,
    categories: Option<Vec<i32>>,
    summary: Summary,
    buf: Vec<u8>,
    matched: u64,
    bad_slots: Vec<usize>,
}

impl Emitter {
    fn new(mode: Mode, categories: Option<Vec<i32>>, globs: Option<Vec<String>>) -> Emitter {
        Emitter {
            mode,
            names: NameCache::new(globs),
            dates: DateCache::default(),
            categories,
            summary: Summary::default(),
            buf: Vec::with_capacity(WRITE_CHUNK + 4096),
            matched: 0,
            bad_slots: Vec::new(),
        }
    }

    /// Handles `events` read from `ring`; returns how many were malformed. The
    /// indexes of the first malformed ones are left in `bad_slots`.
    fn emit(
        &mut self,
        ring: &Ring,
        events: &[impl SlotView],
        out: &mut Output,
    ) -> Result<u64, OutputError> {
        self.bad_slots.clear();
        let want_bad = ring.warned_slots < MAX_SLOT_WARNINGS;
        let Emitter {
            mode,
            names,
            dates,
            categories,
            summary,
            buf,
            matched,
            bad_slots,
        } = self;
        let agent = (*mode == Mode::Summary).then(|| summary.agent_id(&ring.agent));
        let mut bad = 0u64;
        for (index, event) in events.iter().enumerate() {
            let info = names.get(event.name_field());
            let Some(name) = &info.decoded else {
                bad += 1;
                if want_bad && bad_slots.len() < MAX_SLOT_WARNINGS as usize {
                    bad_slots.push(index);
                }
                continue;
            };
            // An event without a category (ring versions 3, 4) matches no
            // --category filter.
            if !name.passes
                || categories
                    .as_ref()
                    .is_some_and(|c| event.category().is_none_or(|cat| !c.contains(&cat)))
            {
                continue;
            }
            *matched += 1;
            match mode {
                Mode::Text => {
                    format::push_text_event(buf, &ring.framing, dates, event, &name.shown)
                }
                Mode::Json => format::push_json_event(buf, &ring.framing, event, &name.json),
                Mode::Summary => {
                    let agent = agent.expect("summary mode has an agent id");
                    summary.add(agent, event.category(), name.id, event.value());
                }
            }
            if buf.len() >= WRITE_CHUNK {
                out.write(buf)?;
                buf.clear();
            }
        }
        if !buf.is_empty() {
            out.write(buf)?;
            buf.clear();
        }
        Ok(bad)
    }

    fn summary_text(&self, agents: &[String]) -> String {
        self.summary.render(agents, |id| self.names.shown(id))
    }
}

/// Why the run stopped early.
enum Failure {
    Input(String),
    Output(String),
}

impl From<InputError> for Failure {
    fn from(e: InputError) -> Self {
        Failure::Input(e.0)
    }
}

impl From<OutputError> for Failure {
    fn from(e: OutputError) -> Self {
        Failure::Output(e.0)
    }
}

/// The buffers a batch is read into: version-1 events, or records of the
/// other versions.
#[derive(Default)]
struct Batch {
    events: Vec<Event>,
    records: Vec<RingRecord>,
}

/// Reads the events `ring` holds now, in batches.
fn drain(
    ring: &mut Ring,
    emitter: &mut Emitter,
    out: &mut Output,
    stop: &StopFlag,
    batch: &mut Batch,
    log: &Log,
) -> Result<(), Failure> {
    let Some(reader) = ring.reader.as_mut() else {
        return Ok(());
    };
    let mode = reader.mode();
    let mask = ring.capacity - 1;
    let mut remaining = reader
        .pending()
        .map_err(|e| Failure::Input(describe(&e, mode)))?;
    while remaining > 0 && !stop.is_set() {
        let reader = ring.reader.as_mut().expect("checked above");
        if mode == ReadMode::Consume {
            ring.cursor = reader
                .header()
                .map_err(|e| Failure::Input(describe(&e, mode)))?
                .read_pos
                & mask;
        }
        let start = ring.cursor;
        let want = remaining.min(BATCH_EVENTS as u64) as usize;
        // Version 1 as the ABI's events (a plain copy of the slots), other
        // versions as records; one emitter for both.
        let version_1 = reader.layout() == &layout::V1;
        let n = if version_1 {
            batch.events.clear();
            reader.peek_batch(&mut batch.events, want)
        } else {
            batch.records.clear();
            reader.peek_records(&mut batch.records, want)
        }
        .map_err(|e| Failure::Input(describe(&e, mode)))?;
        if n == 0 {
            break;
        }
        let bad = if version_1 {
            emitter.emit(ring, &batch.events, out)?
        } else {
            emitter.emit(ring, &batch.records, out)?
        };
        // Consume only what was written out: a failed write leaves it unread.
        if let Some(reader) = ring.reader.as_mut() {
            reader
                .commit(n)
                .map_err(|e| Failure::Input(describe(&e, mode)))?;
        }
        if bad > 0 {
            report_malformed(ring, &emitter.bad_slots, start, log);
        }
        ring.malformed += bad;
        ring.events_read += n as u64 - bad;
        ring.cursor = (start + n as u64) & mask;
        remaining -= n as u64;
    }
    Ok(())
}

fn report_malformed(ring: &mut Ring, indexes: &[usize], start: u64, log: &Log) {
    let mask = ring.capacity - 1;
    for &index in indexes {
        if ring.warned_slots >= MAX_SLOT_WARNINGS {
            break;
        }
        ring.warned_slots += 1;
        let more = if ring.warned_slots == MAX_SLOT_WARNINGS {
            " (further malformed slots of this ring are only counted)"
        } else {
            ""
        };
        log.warn(format_args!(
            "{}: slot {}: event name has no NUL terminator in its 32 bytes; skipped (a name \
             is at most 31 bytes followed by NUL){more}",
            ring.path.display(),
            (start + index as u64) & mask
        ));
    }
}

/// Prints the summary unless it equals the one shown last; returns the tables
/// shown. While following, each print starts with a time line and prints are
/// separated by an empty line (on a terminal the screen is cleared instead).
fn show_summary(
    emitter: &mut Emitter,
    source: &mut Source,
    out: &mut Output,
    shown: Option<String>,
    following: bool,
) -> Result<Option<String>, OutputError> {
    let agents: Vec<String> = source
        .all_rings()
        .into_iter()
        .map(|r| r.agent.clone())
        .collect();
    let tables = emitter.summary_text(&agents);
    if shown.as_deref() == Some(tables.as_str()) {
        return Ok(shown);
    }
    let mut text = String::new();
    if following {
        if out.tty {
            text.push_str("\x1b[H\x1b[2J");
        } else if shown.is_some() {
            text.push('\n');
        }
        text.push_str(&format!(
            "Summary at {}\n\n",
            local_date_time(nixl_telemetry::clock::system_now_us() / 1_000_000)
        ));
    }
    text.push_str(&tables);
    if !text.is_empty() {
        out.write(text.as_bytes())?;
    }
    Ok(Some(tables))
}

fn print_totals(log: &Log, source: &mut Source, emitter: &Emitter, filtered: bool) {
    let tagged = source.tagged();
    let mut rings = source.all_rings();
    let total: u64 = rings.iter().map(|r| r.events_read).sum();
    let malformed: u64 = rings.iter().map(|r| r.malformed).sum();
    let mut trailers = Vec::new();
    for ring in rings.iter_mut() {
        let trailer = ring.trailer();
        if tagged {
            match trailer {
                Some(t) => log.info(format_args!(
                    "Agent {}: {} events read, {} lost by the producer",
                    ring.agent,
                    ring.events_read,
                    t.events_lost()
                )),
                None => log.info(format_args!(
                    "Agent {}: {} events read",
                    ring.agent, ring.events_read
                )),
            }
        }
        trailers.extend(trailer);
    }
    log.info(format_args!("Total events read: {total}"));
    if filtered {
        log.info(format_args!(
            "Events matching the filters: {}",
            emitter.matched
        ));
    }
    if malformed > 0 {
        log.info(format_args!("Malformed slots skipped: {malformed}"));
    }
    if !trailers.is_empty() {
        // Exact sums, as Python prints them: u128 holds 2^64 rings' worth.
        let sum = |field: fn(&TrailerInfo) -> u64| -> u128 {
            trailers.iter().map(|t| u128::from(field(t))).sum()
        };
        let staging = sum(|t| t.dropped_staging_full);
        let full = sum(|t| t.dropped_ring_full);
        let format = sum(|t| t.dropped_format);
        // The format cause only where a ring could have it (not version 1).
        let format_part = if rings.iter().any(|r| r.version != 1) {
            format!(", no event type in the ring version: {format}")
        } else {
            String::new()
        };
        log.info(format_args!(
            "Events lost by the producer: {} (staging buffer full: {staging}, ring full: {full}{format_part})",
            staging + full + format
        ));
    }
}

fn parse_categories(args: &ReadArgs, log: &Log) -> Result<Option<Vec<i32>>, ()> {
    if args.categories.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::new();
    for text in &args.categories {
        match Category::parse(text) {
            Some(c) => out.push(c.0),
            None => {
                let known: Vec<String> = Category::ALL.iter().map(|c| c.to_string()).collect();
                log.error(format_args!(
                    "--category {text:?}: unknown category; accepted: {}, \
                     UNKNOWN_CATEGORY_<n> or a number",
                    known.join(", ")
                ));
                return Err(());
            }
        }
    }
    Ok(Some(out))
}

/// Runs the reader; `prog` names it in warnings and errors.
pub fn run(args: &ReadArgs, prog: &'static str) -> ExitCode {
    let log = Log::new(prog, args.quiet);
    // A bug must still end in one line and status 3, never a backtrace.
    let previous_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| run_inner(args, &log)));
    std::panic::set_hook(previous_hook);
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".to_owned());
            log.error(format_args!("internal error: {what}"));
            ExitCode::from(EXIT_INTERNAL)
        }
    }
}

fn run_inner(args: &ReadArgs, log: &Log) -> u8 {
    let Ok(categories) = parse_categories(args, log) else {
        return EXIT_BAD_INPUT;
    };
    let stop = match StopFlag::install() {
        Ok(stop) => stop,
        Err(e) => {
            log.error(format_args!("{e}"));
            return EXIT_INTERNAL;
        }
    };
    let read_mode = if args.peek {
        ReadMode::Peek
    } else {
        ReadMode::Consume
    };
    let mut source = match Source::open(args.path(), read_mode, log) {
        Ok(source) => source,
        Err(e) => {
            log.error(format_args!("{}", e.0));
            return EXIT_BAD_INPUT;
        }
    };
    let mode = if args.summary {
        Mode::Summary
    } else if args.json {
        Mode::Json
    } else {
        Mode::Text
    };
    let globs = (!args.names.is_empty()).then(|| args.names.clone());
    let filtered = categories.is_some() || globs.is_some();
    let mut emitter = Emitter::new(mode, categories, globs);
    let mut out = Output::new();
    let ring_budget = Source::ring_budget();
    if !args.once {
        log.info(format_args!("Press Ctrl+C to stop reading telemetry..."));
    }
    let mut status = EXIT_OK;
    let mut batch = Batch::default();
    let mut shown: Option<String> = None;
    let mut next_summary = Instant::now();
    let result: Result<(), Failure> = (|| {
        while !stop.is_set() {
            let rings = source.rings(log)?;
            // More rings than descriptors to spare: each is opened for its
            // read and closed after it.
            let over_budget = rings.len() > ring_budget;
            for ring in rings.iter_mut() {
                ring.unpark(read_mode).map_err(Failure::Input)?;
                drain(ring, &mut emitter, &mut out, &stop, &mut batch, log)?;
                if over_budget {
                    ring.park();
                }
                if stop.is_set() {
                    break;
                }
            }
            source.retire(log);
            if args.once || stop.is_set() {
                break;
            }
            if mode == Mode::Summary && Instant::now() >= next_summary {
                shown = show_summary(&mut emitter, &mut source, &mut out, shown.take(), true)?;
                next_summary = Instant::now() + SUMMARY_INTERVAL;
            }
            stop.sleep(POLL_INTERVAL);
        }
        if mode == Mode::Summary {
            show_summary(
                &mut emitter,
                &mut source,
                &mut out,
                shown.take(),
                !args.once,
            )?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => {}
        Err(Failure::Input(message)) => {
            log.error(format_args!("{message}"));
            return EXIT_BAD_INPUT;
        }
        Err(Failure::Output(message)) => {
            log.error(format_args!(
                "{message}; stopped reading (the events of the unfinished batch stay unread)"
            ));
            status = EXIT_OUTPUT;
        }
    }
    if stop.is_set() {
        log.info(format_args!("Received a stop signal, shutting down..."));
    }
    print_totals(log, &mut source, &emitter, filtered);
    status
}
