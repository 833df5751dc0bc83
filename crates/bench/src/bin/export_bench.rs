//! The cost of `nixl-telemetry export`, measured on the real sidecar process.
//!
//! ```text
//! cargo build --release -p nixl-telemetry-cli -p nixl-telemetry-exporter-prometheus -p nixl-telemetry-bench
//! target/release/export_bench throughput [--agents 64] [--rate 100000] [--capacity 4096] [--seconds 20]
//! target/release/export_bench idle [--agents 64] [--seconds 30]
//! target/release/export_bench soak [--agents 32] [--seconds 600]
//! target/release/export_bench curve [--rings 1,16,256,1000] [--rate 200000] [--seconds 8] [--repeat 3] [--json FILE]
//! ```
//!
//! * `throughput`: `--agents` writer threads, each pushing `--rate` events/s
//!   (batches of 1/1000 s; a writer delayed more than 10 ms drops its
//!   schedule rather than burst) into a version-4 ring of `--capacity` slots (NIXL
//!   1.5's layout and default size), with this project's writer, whose drop
//!   counter says whether a ring was ever full; the sidecar (`--exporter
//!   prometheus`, then `nop`: the cost of reading alone) follows the
//!   directory. Reports the rate the writers reached (on a small machine
//!   they may not reach the target: the ratio is the floor of the machine),
//!   ring-full drops, and the sidecar's CPU per million events.
//! * `idle`: the rings exist, nothing is written: the sidecar's CPU share.
//! * `soak`: every second one agent's ring is removed and a new agent
//!   appears (each writing 1,000 events/s); the sidecar's RSS every 10 s.
//! * `curve`: the cost per event as the rings grow at a fixed total rate:
//!   `--rate` events/s spread evenly over each `--rings` count of rings (one
//!   writer thread), read by the sidecar into `prometheus`, by the sidecar
//!   into `nop`, and by the floor: a thread of this program that reads every
//!   ring with the project's reader on the sidecar's own schedule (its
//!   `next_delay`), copies the waiting slots out and drops them; no
//!   conversion, no exporter, no directory watch, no bookkeeping.
//!   Interleaved, `--repeat` times.
//!
//! The sidecar's CPU time is read from `/proc/<pid>/stat` (every thread of
//! it, user and system, in 1/100 s); the binary and the plug-in are taken
//! from the directory of this program.

#[path = "export_bench/curve.rs"]
mod curve;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use nixl_telemetry::ring::{layout, RingWriter};
use nixl_telemetry::{Category, Event};
use nixl_telemetry_bench::harness::MillisecondTicker;

/// `/proc` counts CPU time in these per second (USER_HZ, 100 on Linux).
const USER_HZ: f64 = 100.0;

struct Options {
    mode: String,
    agents: usize,
    rate: u64,
    capacity: usize,
    seconds: f64,
    rings: Vec<usize>,
    repeat: usize,
    json: Option<PathBuf>,
}

fn parse_options() -> anyhow::Result<Options> {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "--help".to_owned());
    if !["throughput", "idle", "soak", "curve"].contains(&mode.as_str()) {
        bail!("usage: export_bench throughput|idle|soak|curve [--agents N] [--rate EVENTS_PER_S] [--capacity SLOTS] [--seconds S] \
               [--rings N,N,…] [--repeat N] [--json FILE] (the last three: curve only)");
    }
    let mut o = Options {
        agents: if mode == "soak" { 32 } else { 64 },
        rate: if mode == "curve" { 200_000 } else { 100_000 },
        capacity: 4096,
        seconds: match mode.as_str() {
            "throughput" => 20.0,
            "idle" => 30.0,
            "curve" => 8.0,
            _ => 600.0,
        },
        rings: vec![1, 16, 256, 1000],
        repeat: 3,
        json: None,
        mode,
    };
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--agents" => o.agents = value.parse()?,
            "--rate" => o.rate = value.parse()?,
            "--capacity" => o.capacity = value.parse()?,
            "--seconds" => o.seconds = value.parse()?,
            "--rings" => {
                o.rings = value
                    .split(',')
                    .map(|n| match n.trim().parse::<usize>() {
                        Ok(n) if n > 0 => Ok(n),
                        _ => bail!("--rings {value}: accepted: ring counts of 1 or more, separated by commas"),
                    })
                    .collect::<anyhow::Result<_>>()?
            }
            "--repeat" => o.repeat = value.parse::<usize>()?.max(1),
            "--json" => o.json = Some(PathBuf::from(value)),
            _ => bail!("unknown option {flag}; accepted: --agents, --rate, --capacity, --seconds, --rings, --repeat, --json"),
        }
    }
    Ok(o)
}

/// The directory of this program (target/release), where the sidecar and
/// the plug-in are.
fn build_dir() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let dir = exe.parent().context("program directory")?.to_owned();
    for needed in ["nixl-telemetry", "libtelemetry_exporter_prometheus.so"] {
        if !dir.join(needed).is_file() {
            bail!(
                "{} missing: cargo build --release -p nixl-telemetry-cli -p nixl-telemetry-exporter-prometheus",
                dir.join(needed).display()
            );
        }
    }
    Ok(dir)
}

struct Sidecar {
    child: Child,
}

impl Sidecar {
    fn start(bin: &Path, rings: &Path, exporter: &str, extra: &[&str]) -> anyhow::Result<Sidecar> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let mut cmd = Command::new(bin.join("nixl-telemetry"));
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("NIXL_") {
                cmd.env_remove(k);
            }
        }
        let child = cmd
            .arg("export")
            .arg("--dir")
            .arg(rings)
            .args(["--exporter", exporter, "--plugin-dir"])
            .arg(bin)
            .arg("--output-path")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--quiet")
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()?;
        std::thread::sleep(Duration::from_millis(500));
        Ok(Sidecar { child })
    }

    /// CPU seconds used so far (every thread, user + system).
    fn cpu_seconds(&self) -> f64 {
        cpu_seconds_of(&format!("/proc/{}/stat", self.child.id()))
    }

    /// The reading thread's time waiting on a run queue (ns) and its number
    /// of runs (`/proc/<pid>/schedstat`).
    fn run_queue_wait(&self) -> (f64, f64) {
        let text = std::fs::read_to_string(format!("/proc/{}/schedstat", self.child.id()))
            .unwrap_or_default();
        let f: Vec<f64> = text
            .split_whitespace()
            .filter_map(|v| v.parse().ok())
            .collect();
        (
            f.get(1).copied().unwrap_or(0.0),
            f.get(2).copied().unwrap_or(0.0),
        )
    }

    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    }

    fn stop(mut self) -> anyhow::Result<()> {
        Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status()?;
        let status = self.child.wait()?;
        if !status.success() {
            bail!("the sidecar exited {status}");
        }
        Ok(())
    }
}

fn cpu_seconds_of(stat_path: &str) -> f64 {
    let stat = std::fs::read_to_string(stat_path).unwrap_or_default();
    // Fields after the command (which may hold spaces) start after ')'.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15: indices 11 and 12 after ')'.
    (ticks(11) + ticks(12)) / USER_HZ
}

/// A writer thread: `rate` events/s into its own ring, in batches every ms.
struct Writer {
    written: Arc<AtomicU64>,
    dropped: Arc<AtomicU64>,
    handle: std::thread::JoinHandle<()>,
}

fn spawn_writer(
    dir: &Path,
    agent: &str,
    capacity: usize,
    rate: u64,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<Writer> {
    let mut ring = RingWriter::create_with_layout(dir, agent, capacity, &layout::V4)?;
    let written = Arc::new(AtomicU64::new(0));
    let dropped = Arc::new(AtomicU64::new(0));
    let (w, d) = (written.clone(), dropped.clone());
    let per_ms = rate.div_ceil(1000) as usize;
    let handle = std::thread::Builder::new()
        .name(format!("writer-{agent}"))
        .spawn(move || {
            let kinds = [
                Event::new(0, Category::TRANSFER, "agent_tx_bytes", 4096),
                Event::new(0, Category::TRANSFER, "agent_tx_requests_num", 1),
                Event::new(0, Category::PERFORMANCE, "agent_xfer_time", 120),
                Event::new(0, Category::PERFORMANCE, "agent_xfer_post_time", 7),
            ];
            let batch: Vec<Event> = (0..per_ms).map(|i| kinds[i % kinds.len()]).collect();
            let mut ticker = MillisecondTicker::start();
            while !stop.load(Ordering::Relaxed) {
                if per_ms > 0 {
                    let outcome = ring.push(&batch);
                    w.fetch_add(outcome.written as u64, Ordering::Relaxed);
                    d.store(ring.dropped_ring_full(), Ordering::Relaxed);
                }
                ticker.wait();
            }
        })?;
    Ok(Writer {
        written,
        dropped,
        handle,
    })
}

/// `o.agents` writers of `rate` events/s each into `dir`.
fn spawn_writers(
    dir: &Path,
    o: &Options,
    rate: u64,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<Vec<Writer>> {
    (0..o.agents)
        .map(|i| {
            spawn_writer(
                dir,
                &format!("agent-{i:03}"),
                o.capacity,
                rate,
                stop.clone(),
            )
        })
        .collect()
}

/// The machine's steal time so far, in ms summed over its CPUs (`/proc/stat`,
/// in USER_HZ ticks of 10 ms); 0 where it cannot be read.
fn steal_ms() -> u64 {
    std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| {
            let line = s.lines().next()?.to_owned();
            line.split_whitespace().nth(8)?.parse::<u64>().ok()
        })
        .map_or(0, |ticks| ticks * 10)
}

/// Drops and steal time per sampling window of a throughput run.
#[derive(Default)]
struct Windows {
    count: u64,
    steal_ms: u64,
    with_drops: u64,
    steal_ms_with_drops: u64,
}

impl Windows {
    fn add(&mut self, dropped: u64, steal_ms: u64) {
        self.count += 1;
        self.steal_ms += steal_ms;
        if dropped > 0 {
            self.with_drops += 1;
            self.steal_ms_with_drops += steal_ms;
        }
    }

    fn describe(&self) -> String {
        let mean = |ms: u64, n: u64| ms as f64 / n.max(1) as f64;
        format!(
            "drops in {} of {} 50 ms windows; steal {:.1} ms per window with drops, {:.1} ms per window overall",
            self.with_drops,
            self.count,
            mean(self.steal_ms_with_drops, self.with_drops),
            mean(self.steal_ms, self.count)
        )
    }
}

fn throughput(o: &Options, bin: &Path) -> anyhow::Result<()> {
    println!(
        "throughput: {} agents x {} events/s target into v4 rings of {} slots, {} s per exporter",
        o.agents, o.rate, o.capacity, o.seconds
    );
    for exporter in ["prometheus", "nop"] {
        let tmp = tempfile::tempdir()?;
        let stop = Arc::new(AtomicBool::new(false));
        let writers = spawn_writers(tmp.path(), o, o.rate, &stop)?;
        let sidecar = Sidecar::start(bin, tmp.path(), exporter, &[])?;
        // The rings filled before the sidecar started: measure from when it
        // has caught up.
        std::thread::sleep(Duration::from_secs(1));
        let dropped0: u64 = writers
            .iter()
            .map(|w| w.dropped.load(Ordering::Relaxed))
            .sum();
        let cpu0 = sidecar.cpu_seconds();
        let wait0 = sidecar.run_queue_wait();
        let self0 = cpu_seconds_of("/proc/self/stat");
        let written0: u64 = writers
            .iter()
            .map(|w| w.written.load(Ordering::Relaxed))
            .sum();
        let t0 = Instant::now();
        // Sampled every 50 ms: the drops and the hypervisor's steal time, to
        // tell whether the windows with drops are those where the host took
        // this guest's CPUs away (no reader can drain a ring then).
        let mut windows = Windows::default();
        let mut last = (dropped0, steal_ms());
        while t0.elapsed().as_secs_f64() < o.seconds {
            std::thread::sleep(Duration::from_millis(50));
            let now = (
                writers
                    .iter()
                    .map(|w| w.dropped.load(Ordering::Relaxed))
                    .sum::<u64>(),
                steal_ms(),
            );
            windows.add(now.0 - last.0, now.1 - last.1);
            last = now;
        }
        let elapsed = t0.elapsed().as_secs_f64();
        let written1: u64 = writers
            .iter()
            .map(|w| w.written.load(Ordering::Relaxed))
            .sum();
        let cpu = sidecar.cpu_seconds() - cpu0;
        let wait1 = sidecar.run_queue_wait();
        let runs = (wait1.1 - wait0.1).max(1.0);
        let wait_ms = (wait1.0 - wait0.0) / runs / 1e6;
        let writers_cpu = cpu_seconds_of("/proc/self/stat") - self0;
        let dropped: u64 = writers
            .iter()
            .map(|w| w.dropped.load(Ordering::Relaxed))
            .sum::<u64>()
            - dropped0;
        stop.store(true, Ordering::Relaxed);
        for w in writers {
            w.handle.join().ok();
        }
        std::thread::sleep(Duration::from_millis(300));
        sidecar.stop()?;
        let events = (written1 - written0) as f64;
        let rate = events / elapsed;
        println!(
            "  {exporter:<10} writers reached {:.0} events/s = {:.1} % of the {} target ({:.2} cores of writers); \
             ring-full drops {dropped} ({:.4} %); sidecar {:.2} core-s over {:.1} s = {:.3} core-s per million events ({:.1} % of a core); \
             its reader waited {wait_ms:.2} ms on the run queue per run ({runs:.0} runs); {}; load average {}",
            rate,
            100.0 * rate / (o.agents as f64 * o.rate as f64),
            o.agents as u64 * o.rate,
            writers_cpu / elapsed,
            100.0 * dropped as f64 / events.max(1.0),
            cpu,
            elapsed,
            cpu / (events / 1e6).max(1e-9),
            100.0 * cpu / elapsed,
            windows.describe(),
            std::fs::read_to_string("/proc/loadavg")
                .unwrap_or_default()
                .split_whitespace()
                .next()
                .unwrap_or("?")
        );
    }
    Ok(())
}

fn idle(o: &Options, bin: &Path) -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let stop = Arc::new(AtomicBool::new(false));
    let writers = spawn_writers(tmp.path(), o, 0, &stop)?;
    let sidecar = Sidecar::start(bin, tmp.path(), "prometheus", &[])?;
    std::thread::sleep(Duration::from_secs(2));
    let cpu0 = sidecar.cpu_seconds();
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(o.seconds));
    let cpu = sidecar.cpu_seconds() - cpu0;
    let elapsed = t0.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.handle.join().ok();
    }
    sidecar.stop()?;
    println!(
        "idle: {} rings, nothing written, {:.0} s: sidecar {:.3} core-s = {:.3} % of one core (resolution 0.01 s)",
        o.agents,
        elapsed,
        cpu,
        100.0 * cpu / elapsed
    );
    Ok(())
}

fn soak(o: &Options, bin: &Path) -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let mut live: std::collections::VecDeque<(String, Arc<AtomicBool>, Writer)> =
        Default::default();
    let mut next = 0usize;
    let mut add = |live: &mut std::collections::VecDeque<_>| -> anyhow::Result<()> {
        let name = format!("agent-{next:06}");
        next += 1;
        let stop = Arc::new(AtomicBool::new(false));
        let w = spawn_writer(tmp.path(), &name, o.capacity, 1000, stop.clone())?;
        live.push_back((name, stop, w));
        Ok(())
    };
    for _ in 0..o.agents {
        add(&mut live)?;
    }
    let sidecar = Sidecar::start(bin, tmp.path(), "prometheus", &["--grace", "2"])?;
    println!(
        "soak: {} agents at 1000 events/s, one replaced every second, {} s; sidecar RSS (KiB) every 10 s:",
        o.agents, o.seconds
    );
    let t0 = Instant::now();
    let mut samples = Vec::new();
    let mut second = 0u64;
    while t0.elapsed().as_secs_f64() < o.seconds {
        second += 1;
        let due = t0 + Duration::from_secs(second);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        if let Some((name, stop, w)) = live.pop_front() {
            stop.store(true, Ordering::Relaxed);
            w.handle.join().ok();
            std::fs::remove_file(tmp.path().join(&name)).ok();
        }
        add(&mut live)?;
        if second.is_multiple_of(10) {
            let rss = sidecar.rss_kib();
            samples.push((second, rss));
            println!("  {second:>5} s  {rss}");
        }
    }
    let cpu = sidecar.cpu_seconds();
    for (_, stop, w) in live {
        stop.store(true, Ordering::Relaxed);
        w.handle.join().ok();
    }
    sidecar.stop()?;
    let warm: Vec<u64> = samples
        .iter()
        .filter(|(s, _)| *s >= 60)
        .map(|(_, r)| *r)
        .collect();
    if let (Some(first), Some(last), Some(max)) = (warm.first(), warm.last(), warm.iter().max()) {
        println!(
            "soak: {} agents came and went; RSS after 60 s {first} KiB, at the end {last} KiB, max {max} KiB; sidecar {:.1} core-s in all",
            next - o.agents,
            cpu
        );
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let o = parse_options()?;
    let bin = build_dir()?;
    match o.mode.as_str() {
        "throughput" => throughput(&o, &bin),
        "idle" => idle(&o, &bin),
        "curve" => curve::run(&o, &bin),
        _ => soak(&o, &bin),
    }
}
