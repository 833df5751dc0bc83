//! `nixl-telemetry top`: a live view of every agent on the node.
//!
//! Follows ring files of every layout (the files named, and every ring of
//! the directories named, `NIXL_TELEMETRY_DIR` by default), peeking unless
//! `--consume`, folds each agent's events into the one metric model
//! (`nixl-telemetry-metrics`), and shows, refreshed every interval, per
//! agent: events/s, bytes/s each way, requests/s, transfer time p50/p99,
//! errors by status, memory registered now and events lost.
//!
//! Peeking follows the writer, not the consumer: the events another
//! consumer (the export sidecar, NIXL's reader) took are read until the
//! writer comes round to them, each ring looked at at a pace of its own
//! (`pace.rs`). When the reader misses events all the same (the writer went
//! round the ring between two looks), the agent's rates are not shown and
//! the note says why.
//!
//! On a terminal the view is full-screen (ratatui); with `--plain`, or when
//! stdout is no terminal, a plain table is printed at every refresh.

mod agents;
mod feed;
mod pace;
mod plain;
mod plain_view;
mod row;
mod screen;
mod terminal_input;

use std::io::{IsTerminal, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use nixl_telemetry::ring::{ReadMode, ScanRules};
use ratatui::crossterm::event::Event as TermEvent;

pub use plain_view::PlainView;

use crate::local_date::local_date_time;
use crate::ring_files::RingSources;
use crate::signal::StopFlag;
use agents::Agents;
use screen::{Action, Screen};
use terminal_input::{Input, TerminalInput};

/// How often the directories are scanned for rings that appeared or went
/// (each ring is read at its own pace: `pace.rs`) when they were modified
/// since the last scan (one `stat` of each directory tells)...
const SCAN: Duration = Duration::from_millis(100);
/// ... and how often whatever that says (a ring created in place becomes
/// readable without its directory changing).
const SCAN_ALL: Duration = Duration::from_secs(1);
/// The sparkline's span.
const HISTORY: Duration = Duration::from_secs(60);

/// Options of `nixl-telemetry top`.
#[derive(Debug, Clone, clap::Args)]
pub struct TopArgs {
    /// Ring files, or directories of ring files (one per agent); default:
    /// the directory NIXL_TELEMETRY_DIR names.
    #[arg(value_name = "DIR|FILE")]
    pub paths: Vec<PathBuf>,
    /// Take the events out of the rings (be their consumer) instead of
    /// peeking: for rings nothing else reads, which fill up otherwise.
    #[arg(long)]
    pub consume: bool,
    /// Print a plain table at every refresh instead of the full-screen view
    /// (also when stdout is not a terminal).
    #[arg(long)]
    pub plain: bool,
    /// Seconds between refreshes (0.1 to 3600).
    #[arg(long, default_value = "1", value_parser = parse_interval, value_name = "SECONDS")]
    pub interval: Duration,
    /// Stop after this many refreshes.
    #[arg(long, value_name = "N")]
    pub iterations: Option<u64>,
}

/// Parses the refresh interval.
fn parse_interval(text: &str) -> Result<Duration, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && (0.1..=3600.0).contains(s))
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("{text:?}: accepted: a number of seconds from 0.1 to 3600"))
}

/// What `top` reads, and how it says so.
fn sources(args: &TopArgs) -> anyhow::Result<(RingSources, String)> {
    let paths = if args.paths.is_empty() {
        match std::env::var_os(nixl_telemetry_abi::env::DIR) {
            Some(dir) if !dir.is_empty() => vec![PathBuf::from(dir)],
            _ => bail!(
                "no ring directory: name ring files or directories, or set {} (the directory \
                 NIXL's ring exporter writes to)",
                nixl_telemetry_abi::env::DIR
            ),
        }
    } else {
        args.paths.clone()
    };
    let described = paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" ");
    // A directory others can write to: the confined rules (no link followed
    // out of it, FIFOs and devices refused, each refusal shown).
    let sources = RingSources::new(&paths, ScanRules::Confined).map_err(anyhow::Error::msg)?;
    Ok((sources, described))
}

/// Runs `nixl-telemetry top`.
pub fn run(args: TopArgs) -> anyhow::Result<ExitCode> {
    let (mut sources, described) = sources(&args)?;
    // A directory that cannot be listed at the start is an error; later, it
    // is reported while it lasts (and its agents are gone meanwhile).
    if let Some((_, message)) = sources.scan().unlisted.first() {
        bail!("{message}");
    }
    let stop = StopFlag::install().map_err(anyhow::Error::msg)?;
    let mode = if args.consume {
        ReadMode::Consume
    } else {
        ReadMode::Peek
    };
    let history_len = (HISTORY.as_secs_f64() / args.interval.as_secs_f64()).ceil() as usize;
    let mut agents = Agents::new(sources, mode, history_len);
    agents.scan();
    if args.plain || !std::io::stdout().is_terminal() {
        run_plain(&args, &mut agents, &stop)
    } else {
        run_screen(&args, &mut agents, &stop, described)
    }
}

/// When the directories are scanned, the rings read and the rows made next.
struct Clock {
    interval: Duration,
    next_scan: Instant,
    next_full_scan: Instant,
    next_look: Instant,
    next_refresh: Instant,
    last_refresh: Instant,
}

impl Clock {
    fn new(interval: Duration) -> Clock {
        let now = Instant::now();
        Clock {
            interval,
            next_scan: now + SCAN,
            next_full_scan: now + SCAN_ALL,
            next_look: now,
            next_refresh: now + interval,
            last_refresh: now,
        }
    }

    /// Scans and reads what is due; at a refresh, every ring is read first,
    /// so that the interval's rates hold everything written up to it.
    /// Returns, when a refresh is due, its time and the time since the
    /// last refresh.
    fn tick(&mut self, agents: &mut Agents) -> Option<(Instant, Duration)> {
        let now = Instant::now();
        if now >= self.next_scan {
            if now >= self.next_full_scan || !agents.sources_unchanged() {
                agents.scan();
                self.next_full_scan = now + SCAN_ALL;
            }
            self.next_scan = now + SCAN;
        }
        let refresh = now >= self.next_refresh;
        if refresh || now >= self.next_look {
            self.next_look = agents.look(now, refresh, now + SCAN);
        }
        if !refresh {
            return None;
        }
        // On schedule, unless far behind (a stopped process resumed).
        self.next_refresh = (self.next_refresh + self.interval).max(now);
        let elapsed = now - self.last_refresh;
        self.last_refresh = now;
        Some((now, elapsed))
    }

    /// Time until the next thing to do.
    fn wait(&self) -> Duration {
        self.next_scan
            .min(self.next_look)
            .min(self.next_refresh)
            .saturating_duration_since(Instant::now())
    }
}

fn now_text() -> String {
    local_date_time(nixl_telemetry::clock::system_now_us() / 1_000_000)
}

/// The refresh `now` as the plain table, titled with the time, the
/// interval, the agents and the read mode.
fn plain_refresh(agents: &mut Agents, now: Instant, elapsed: Duration) -> String {
    let rows = agents.refresh(now, elapsed);
    let gone = rows.iter().filter(|r| r.gone).count();
    let title = format!(
        "nixl-telemetry top at {}: interval {:.3} s, {} agents{}, {}",
        now_text(),
        elapsed.as_secs_f64(),
        rows.len(),
        if gone > 0 {
            format!(" ({gone} gone)")
        } else {
            String::new()
        },
        if agents.consuming() {
            "consuming"
        } else {
            "peeking"
        }
    );
    let mut sorted = rows;
    sorted.sort_by(|a, b| row::SortKey::Agent.compare(a, b, false));
    plain::table(&title, &sorted, agents.skipped(), agents.consuming())
}

fn run_plain(args: &TopArgs, agents: &mut Agents, stop: &StopFlag) -> anyhow::Result<ExitCode> {
    let mut clock = Clock::new(args.interval);
    let mut out = std::io::stdout().lock();
    let mut refreshes = 0u64;
    while !stop.is_set() {
        if let Some((now, elapsed)) = clock.tick(agents) {
            let text = plain_refresh(agents, now, elapsed);
            let separator = if refreshes > 0 { "\n" } else { "" };
            if out
                .write_all(format!("{separator}{text}").as_bytes())
                .and_then(|()| out.flush())
                .is_err()
            {
                // stdout closed (`top --plain | head`): done.
                return Ok(ExitCode::SUCCESS);
            }
            refreshes += 1;
            if args.iterations.is_some_and(|n| refreshes >= n) {
                break;
            }
        }
        stop.sleep(clock.wait());
    }
    Ok(ExitCode::SUCCESS)
}

fn run_screen(
    args: &TopArgs,
    agents: &mut Agents,
    stop: &StopFlag,
    described: String,
) -> anyhow::Result<ExitCode> {
    let mut screen = Screen::new(
        described,
        args.interval.as_secs_f64(),
        agents.consuming(),
        HISTORY.as_secs_f64(),
    );
    let mut input = TerminalInput::open().context("cannot read the terminal's keys")?;
    let mut terminal = ratatui::try_init().context("cannot set up the terminal")?;
    let result = (|| -> anyhow::Result<()> {
        let mut clock = Clock::new(args.interval);
        let mut refreshes = 0u64;
        let mut dirty = true;
        while !stop.is_set() {
            if let Some((now, elapsed)) = clock.tick(agents) {
                screen.update(
                    agents.refresh(now, elapsed),
                    agents.skipped().len(),
                    now_text(),
                );
                dirty = true;
                refreshes += 1;
                if args.iterations.is_some_and(|n| refreshes >= n) {
                    break;
                }
            }
            if dirty {
                terminal.draw(|frame| screen.draw(frame))?;
                dirty = false;
            }
            // Keys, or the next thing to do; at most 50 ms so that SIGTERM
            // is seen soon. A terminal that went away ends top.
            match input.wait(clock.wait().min(Duration::from_millis(50)))? {
                Input::Event(TermEvent::Key(key)) => match screen.key(key) {
                    Action::Quit => break,
                    Action::Redraw => dirty = true,
                    Action::Nothing => {}
                },
                Input::Event(TermEvent::Resize(..)) => dirty = true,
                Input::Event(_) | Input::Nothing => {}
                Input::Gone => break,
            }
        }
        Ok(())
    })();
    ratatui::restore();
    result?;
    Ok(ExitCode::SUCCESS)
}
