//! `nixl-telemetry demo`: two agents (an initiator and a target) in one
//! process, each with its own telemetry, moving real bytes between registered
//! memory regions, with a live table read back through the rings.
//!
//! With nothing set up, telemetry goes to rings in a fresh temporary
//! directory (kept at exit), and the export sidecar (`nixl-telemetry export`,
//! a process of its own) serves them on one Prometheus endpoint
//! ([`sidecar`]). The live table is the one `nixl-telemetry top --plain`
//! prints of those rings (peeking beside the sidecar; consuming, as
//! `top --consume`, with `--no-export` or without the Prometheus plug-in),
//! through the same metric model. When `NIXL_TELEMETRY_EXPORTER` or
//! `NIXL_TELEMETRY_DIR` is set, the environment's configuration is used (with
//! telemetry forced on); `--dir` always selects rings in that directory. An
//! exporter without rings gets a table of the telemetry's own counters
//! ([`counters_table`]).

mod counters_table;
mod sidecar;

use nixl_telemetry_abi::env::{DIR, EXPORTER};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use nixl_telemetry::ring::{ReadMode, RingReader};
use nixl_telemetry::{ExporterChoice, Telemetry, TelemetryConfig};
use nixl_telemetry_workload::{agent_roles, Workload, WorkloadConfig};

use counters_table::CountersTable;
use nixl_telemetry_views::signal::StopFlag;
use nixl_telemetry_views::top::PlainView;
use sidecar::DemoSidecar;

/// Events per ring (and per staging buffer) when the demo picks the settings.
const DEMO_BUFFER_SIZE: usize = 1 << 16;
/// How often the demo checks for a stop and for the table.
const POLL: Duration = Duration::from_millis(100);
/// How often the table is printed.
const TABLE_EVERY: Duration = Duration::from_secs(1);
/// Smallest registered region.
const MIN_REGION: usize = 16 << 20;

/// Options of `nixl-telemetry demo`.
#[derive(Debug, Clone, clap::Args)]
pub struct DemoArgs {
    /// Agents: half initiators (rounded up), half targets.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub agents: usize,
    /// Worker threads posting transfers.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub threads: usize,
    /// Smallest transfer: bytes, or with a K/KiB/M/MiB suffix.
    #[arg(long, default_value = "4KiB", value_parser = parse_size, value_name = "SIZE")]
    pub min_size: usize,
    /// Largest transfer: bytes, or with a K/KiB/M/MiB suffix.
    #[arg(long, default_value = "4MiB", value_parser = parse_size, value_name = "SIZE")]
    pub max_size: usize,
    /// Seconds to run (Ctrl+C stops earlier).
    #[arg(long, default_value = "10", value_parser = parse_seconds, value_name = "SECONDS")]
    pub duration: Duration,
    /// Directory for the ring files (default: a fresh temporary directory).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// No export sidecar: the live table consumes the rings itself (as
    /// `top --consume`) instead of peeking beside the sidecar.
    #[arg(long)]
    pub no_export: bool,
}

/// Parses `4096`, `4K`, `4KiB`, `4M`, `4MiB`, `1G`, `1GiB` (binary multiples).
pub fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" | "kb" => 10,
        "m" | "mib" | "mb" => 20,
        "g" | "gib" | "gb" => 30,
        _ => {
            return Err(format!(
                "{text:?}: accepted: a positive byte count with an optional K, KiB, M, MiB, G or GiB suffix"
            ))
        }
    };
    digits
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(1usize << shift))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("{text:?}: accepted: a positive byte count with an optional K, KiB, M, MiB, G or GiB suffix"))
}

/// Parses a positive number of seconds (fractions allowed).
pub fn parse_seconds(text: &str) -> Result<Duration, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 1e7)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("{text:?}: accepted: a positive number of seconds"))
}

fn env_set(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty())
}

/// Quotes `text` for a POSIX shell when it needs it.
fn shell_quote(text: &str) -> String {
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:@%,".contains(c))
    {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// How to run a binary of this build: its path when it sits next to this
/// program, else through cargo.
fn command_for(binary: &str) -> String {
    let sibling = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(binary)))
        .filter(|p| p.is_file());
    match sibling {
        Some(path) => shell_quote(&path.to_string_lossy()),
        None => format!("cargo run --release --bin {binary} --"),
    }
}

fn python_reader() -> String {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/telemetry_reader.py");
    match source.canonicalize() {
        Ok(path) => shell_quote(&path.to_string_lossy()),
        Err(_) => "python/telemetry_reader.py".to_owned(),
    }
}

/// The ring files of `names` in `dir`, quoted for a shell.
fn ring_paths(dir: &Path, names: &[String]) -> String {
    names
        .iter()
        .map(|n| shell_quote(&dir.join(n).to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What one ring's trailer and positions say once its producer closed it.
struct RingCount {
    agent: String,
    /// Events the producer wrote (the trailer's count).
    written: u64,
    /// Events written and not consumed yet.
    pending: u64,
}

impl RingCount {
    /// Events a consumer (the sidecar, or the table) read from the ring.
    fn consumed(&self) -> u64 {
        self.written.saturating_sub(self.pending)
    }
}

/// The counts of the rings of `names` in `dir` (peeked: nothing consumed).
fn ring_counts(dir: &Path, names: &[String]) -> Vec<RingCount> {
    names
        .iter()
        .filter_map(|name| {
            let mut reader = RingReader::open(&dir.join(name), ReadMode::Peek).ok()?;
            let written = reader.trailer()?.events_written;
            Some(RingCount {
                agent: name.clone(),
                written,
                pending: reader.pending().ok()?,
            })
        })
        .collect()
}

/// `agent n, agent n, ...`.
fn per_agent(counts: &[RingCount], n: impl Fn(&RingCount) -> u64) -> String {
    counts
        .iter()
        .map(|c| format!("{} {}", c.agent, n(c)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn print(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// Runs the demo.
pub fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let stop = StopFlag::install().map_err(anyhow::Error::msg)?;
    let roles = agent_roles(args.agents)?;
    let workload_config = WorkloadConfig {
        threads: args.threads,
        min_size: args.min_size,
        max_size: args.max_size,
        region_size: args.max_size.max(MIN_REGION),
        ..WorkloadConfig::default()
    };
    workload_config.validate()?;

    let from_env = env_set(EXPORTER) || env_set(DIR);
    let mut config = if from_env {
        let mut c =
            TelemetryConfig::from_env().context("reading the NIXL_TELEMETRY_* variables")?;
        c.enabled = true;
        c
    } else {
        TelemetryConfig {
            buffer_size: DEMO_BUFFER_SIZE,
            ..TelemetryConfig::default()
        }
    };
    if let Some(dir) = &args.dir {
        config.exporter = ExporterChoice::Buffer { dir: dir.clone() };
    } else if !from_env {
        let dir = tempfile::Builder::new()
            .prefix("nixl-telemetry-demo-")
            .tempdir()
            .context("creating a temporary directory for the rings")?
            .keep();
        config.exporter = ExporterChoice::Buffer { dir };
    }
    let ring_dir = match &config.exporter {
        ExporterChoice::Buffer { dir } => Some(dir.clone()),
        ExporterChoice::None => bail!(
            "the environment selects no exporter; accepted: {EXPORTER}=buffer|nop|<plug-in> or {DIR}=<dir>, or unset both"
        ),
        _ => None,
    };

    let agents = roles
        .iter()
        .map(|(name, role)| {
            let telemetry = Telemetry::new(name, config.clone())
                .with_context(|| format!("creating the telemetry of agent {name}"))?;
            Ok((name.clone(), *role, telemetry))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let names: Vec<String> = roles.iter().map(|(n, _)| n.clone()).collect();
    let exporter = match &config.exporter {
        ExporterChoice::Buffer { .. } => "buffer (shared-memory rings)".to_owned(),
        ExporterChoice::Nop => "nop".to_owned(),
        ExporterChoice::Plugin { name } => format!("plug-in {name}"),
        ExporterChoice::None => "none".to_owned(),
    };

    let started = Instant::now();
    let workload = Workload::new(workload_config.clone(), agents)?;
    print(&format!(
        "nixl-telemetry demo: {} agents ({}), {} worker threads, transfers {} to {} bytes, {} x {} MiB registered per agent, {:.1} s\n",
        names.len(),
        names.join(", "),
        workload_config.threads,
        workload_config.min_size,
        workload_config.max_size,
        workload_config.regions_per_agent,
        workload_config.region_size >> 20,
        args.duration.as_secs_f64(),
    ));
    match &ring_dir {
        Some(dir) => print(&format!(
            "Telemetry: {exporter} in {}, {} events per ring\n",
            dir.display(),
            config.buffer_size
        )),
        None => print(&format!(
            "Telemetry: {exporter} (live table from the telemetry's own counters)\n"
        )),
    }
    let initiators = roles
        .iter()
        .filter(|(_, r)| *r == nixl_telemetry_workload::Role::Initiator)
        .count();
    if workload_config.threads < initiators {
        print(&format!(
            "Note: {initiators} initiators but {} worker threads: initiators without a thread stay idle\n",
            workload_config.threads
        ));
    }
    // The rings exist now: the sidecar can serve them.
    let mut served = None;
    if let (Some(dir), false) = (&ring_dir, args.no_export) {
        match sidecar::find_plugin().or_else(sidecar::build_plugin_with_cargo) {
            Some(plugin_dir) => {
                let sidecar = DemoSidecar::start(dir, &plugin_dir)?;
                print(&format!(
                    "Export sidecar: `{cli} export` serves every agent on one Prometheus endpoint; \
                     while the demo runs: curl -s http://{addr}/metrics\n",
                    cli = command_for("nixl-telemetry"),
                    addr = sidecar.addr
                ));
                served = Some(sidecar);
            }
            None => print(&format!(
                "Export sidecar: not started ({} not found; build it with cargo build --release -p {}): \
                 the demo's table consumes the rings itself\n",
                sidecar::PLUGIN_FILE,
                sidecar::PLUGIN_PACKAGE
            )),
        }
    }
    let width = names.iter().map(String::len).max().unwrap_or(5);
    // The table `top --plain` prints of the rings (peeking beside the
    // sidecar, which consumes them), or the counters without rings.
    let mut view = match &ring_dir {
        Some(dir) => {
            let mode = if served.is_some() {
                ReadMode::Peek
            } else {
                ReadMode::Consume
            };
            Some(PlainView::open(dir, mode, TABLE_EVERY)?)
        }
        None => {
            print(&format!("{}\n", counters_table::header(width)));
            None
        }
    };
    let mut counters = CountersTable::new(&workload);
    let stop_workers = AtomicBool::new(false);
    let run_start = Instant::now();
    let mut interrupted = false;
    let totals = std::thread::scope(|scope| -> anyhow::Result<_> {
        let worker = std::thread::Builder::new()
            .name("xfer-workload".into())
            .spawn_scoped(scope, || workload.run(&stop_workers, Some(args.duration)))
            .context("starting the workload")?;
        let mut last_table = Instant::now();
        while !worker.is_finished() {
            let wait = view.as_ref().map_or(POLL, |v| v.wait().min(POLL));
            if stop.sleep(wait) && !interrupted {
                interrupted = true;
                stop_workers.store(true, Ordering::Relaxed);
            }
            match view.as_mut() {
                Some(view) => {
                    if let Some(table) = view.tick() {
                        print(&format!("\n{table}"));
                    }
                }
                None => {
                    let now = Instant::now();
                    if now - last_table >= TABLE_EVERY {
                        let label = format!("{:.0} s", (now - run_start).as_secs_f64());
                        print(&counters.render(&workload, now - last_table, &label));
                        last_table = now;
                    }
                }
            }
        }
        stop_workers.store(true, Ordering::Relaxed);
        Ok(worker.join().unwrap_or_default())
    })?;
    let run_time = run_start.elapsed();

    // Deregister, then flush and close every agent's telemetry.
    let telemetries = workload.shutdown();
    drop(telemetries);

    print(&format!(
        "\n{} after {:.1} s: {} transfers, {:.1} MB copied, {} failed on purpose\n",
        if interrupted { "Stopped" } else { "Done" },
        run_time.as_secs_f64(),
        totals.transfers,
        totals.bytes as f64 / 1e6,
        totals.failures,
    ));
    let Some(dir) = ring_dir else {
        print(&format!(
            "Total time {:.1} s. Telemetry went to the {exporter} exporter.\n",
            started.elapsed().as_secs_f64()
        ));
        return Ok(ExitCode::SUCCESS);
    };
    if let Some(sidecar) = served {
        // SIGTERM: the sidecar drains the rings, exports and exits.
        let addr = sidecar.addr;
        let plugin_dir = sidecar.plugin_dir.clone();
        sidecar.stop();
        let counts = ring_counts(&dir, &names);
        let all = counts.iter().all(|c| c.pending == 0);
        print(&format!(
            "\nEvents exported by the sidecar: {}{}.\n\
             Ring files (kept, read to their end): {}\n\
             The sidecar served http://{addr}/metrics while the demo ran, and has stopped. Serve the rings of\n\
             any NIXL job the same way (docs/export.md):\n  \
             {cli} export --dir {dir_text} --exporter prometheus --plugin-dir {plugins} --output-path 127.0.0.1:9464\nLook at agents live, or chart a run: {cli} top DIR, {cli} report --input DIR --output report.html (docs/top-and-report.md)\n",
            per_agent(&counts, |c| c.consumed()),
            if all { " (every event written)" } else { "" },
            ring_paths(&dir, &names),
            cli = command_for("nixl-telemetry"),
            dir_text = shell_quote(&dir.to_string_lossy()),
            plugins = shell_quote(&plugin_dir.to_string_lossy()),
        ));
        return Ok(ExitCode::SUCCESS);
    }
    let counts = ring_counts(&dir, &names);
    let left: u64 = counts.iter().map(|c| c.pending).sum();
    let dir_text = shell_quote(&dir.to_string_lossy());
    print(&format!(
        "\nEvents read back through the rings: {}.\n\
         Ring files (kept): {}\n\
         The table consumed the events up to its last refresh; {left} newer ones are still in the rings. Look at them with:\n  \
         {reader} --once {dir_text}\n  \
         python3 {python} --once --telemetry_path {dir_text}\n  \
         {cli} read --once --peek --summary {dir_text}\nLook at agents live, or chart a run: {cli} top DIR, {cli} report --input {dir_text} --output report.html (docs/top-and-report.md)\n",
        per_agent(&counts, |c| c.consumed()),
        ring_paths(&dir, &names),
        reader = command_for("telemetry_reader"),
        python = python_reader(),
        cli = command_for("nixl-telemetry"),
    ));
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("4 MiB"), Ok(4 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        for bad in ["", "0", "x", "4 parsecs", "-1", "99999999999999999999G"] {
            let err = parse_size(bad).unwrap_err();
            assert!(err.contains("accepted"), "{err}");
        }
    }

    #[test]
    fn seconds_and_quotes() {
        assert_eq!(parse_seconds("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_seconds("0.5"), Ok(Duration::from_millis(500)));
        assert!(parse_seconds("0").is_err());
        assert!(parse_seconds("nan").is_err());
        assert_eq!(shell_quote("/tmp/a-b.c"), "/tmp/a-b.c");
        assert_eq!(shell_quote("/tmp/a b"), "'/tmp/a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}
