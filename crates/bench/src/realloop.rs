//! The cost of telemetry in a real loop: the demo's transfer loop
//! (`nixl-telemetry-workload`, the code behind `nixl-telemetry demo`) with
//! telemetry off, with the `nop` exporter, with the ring, and with the
//! Prometheus plug-in, for 4 KiB and 1 MiB transfers.
//!
//! One initiator and one target agent per mode, each with its own telemetry;
//! one worker (this thread) posts transfers of one size that copy real bytes
//! between registered regions. Each transfer records five events in three
//! staging slots: post time, the three of a completed transfer (initiator;
//! one slot) and the target's backend event. In ring mode a reader thread
//! consumes the ring files every 2 ms (as a `telemetry_reader` would, only
//! often enough for this rate), so the rings never fill. The modes are measured in interleaved chunks (all modes in every
//! round, in rotating order), and the slowdown is the median over rounds of
//! the paired difference (mode − off) per transfer, so slow drifts of a shared
//! machine cancel.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nixl_telemetry::ring::{ReadMode, RingReader};
use nixl_telemetry::{Event, ExporterChoice, Telemetry, TelemetryConfig};
use nixl_telemetry_workload::{agent_roles, Workload, WorkloadConfig};
use serde_json::json;

use crate::exporters::{plugin_available, plugin_dirs};
use crate::harness::median;
use crate::report::{Row, Unit};

/// How long the loop runs.
#[derive(Debug, Clone, Copy)]
pub struct LoopPlan {
    /// Rounds (each times one chunk of every mode).
    pub rounds: usize,
    /// Target time of one chunk.
    pub chunk: Duration,
}

/// Buffer size of the telemetry under test (events per staging queue).
const BUFFER: usize = 1 << 16;
/// Warm-up transfers: each records at least one event into the initiator's
/// queue, so this wraps it.
const WARM_TRANSFERS: u64 = BUFFER as u64 + 1024;

#[derive(Clone)]
enum Mode {
    Off,
    Nop,
    Ring(PathBuf),
    Prometheus(Vec<PathBuf>),
}

impl Mode {
    fn name(&self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::Nop => "nop",
            Mode::Ring(_) => "ring",
            Mode::Prometheus(_) => "prometheus",
        }
    }

    fn telemetry(&self, agent: &str) -> Result<Telemetry> {
        let base = TelemetryConfig {
            // Room for 10 ms of the fastest loop, flushed every 10 ms: no drops.
            buffer_size: BUFFER,
            run_interval: Duration::from_millis(10),
            ..TelemetryConfig::default()
        };
        let config = match self {
            Mode::Off => return Ok(Telemetry::disabled()),
            Mode::Nop => TelemetryConfig {
                exporter: ExporterChoice::Nop,
                ..base
            },
            Mode::Ring(dir) => TelemetryConfig {
                exporter: ExporterChoice::Buffer { dir: dir.clone() },
                ..base
            },
            Mode::Prometheus(dirs) => TelemetryConfig {
                exporter: ExporterChoice::Plugin {
                    name: "prometheus".into(),
                },
                output_path: Some("127.0.0.1:0".into()),
                plugin_dirs: dirs.clone(),
                ..base
            },
        };
        Telemetry::new(agent, config).with_context(|| format!("telemetry for {agent}"))
    }
}

fn workload(size: usize, mode: &Mode) -> Result<Workload> {
    let config = WorkloadConfig {
        threads: 1,
        min_size: size,
        max_size: size,
        region_size: (size * 16).max(1 << 20),
        regions_per_agent: 2,
        failure_one_in: 0,
        seed: 0x5eed,
    };
    let agents = agent_roles(2)?
        .into_iter()
        .map(|(name, role)| {
            let agent = format!("loop-{}-{}-{name}", mode.name(), size);
            Ok((name, role, mode.telemetry(&agent)?))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Workload::new(config, agents)?)
}

/// Consumes every ring file in `dir` every 2 ms until `stop`; returns the
/// events read and the read errors met.
fn consume_rings(dir: &Path, stop: &AtomicBool) -> (u64, Vec<String>) {
    let mut readers: Vec<(PathBuf, RingReader)> = Vec::new();
    let mut batch: Vec<Event> = Vec::with_capacity(BUFFER);
    let mut read = 0u64;
    let mut errors = Vec::new();
    loop {
        let stopping = stop.load(Ordering::Acquire);
        if let Ok(entries) = std::fs::read_dir(dir) {
            for path in entries.flatten().map(|e| e.path()) {
                if !readers.iter().any(|(p, _)| *p == path) {
                    if let Ok(r) = RingReader::open(&path, ReadMode::Consume) {
                        readers.push((path, r));
                    }
                }
            }
        }
        for (_, reader) in &mut readers {
            loop {
                match reader.read_batch(&mut batch, BUFFER) {
                    Ok(0) => break,
                    Ok(n) => {
                        read += n as u64;
                        batch.clear();
                    }
                    Err(e) => {
                        errors.push(e.to_string());
                        break;
                    }
                }
            }
        }
        if stopping {
            return (read, errors);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Runs the loop for 4 KiB and 1 MiB transfers in every mode available.
pub fn run(plan: LoopPlan, rows: &mut Vec<Row>, notes: &mut Vec<String>) -> Result<()> {
    let ring_dir = tempfile::tempdir()?;
    let stop_reader = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| consume_rings(ring_dir.path(), &stop_reader));
        let result = measure(plan, ring_dir.path(), rows, notes);
        stop_reader.store(true, Ordering::Release);
        let (read, errors) = reader.join().unwrap_or_default();
        notes.push(format!(
            "real loop, ring mode: a reader thread consumed {read} events from the rings every 2 ms{}",
            if errors.is_empty() {
                String::new()
            } else {
                format!("; read errors: {}", errors.join("; "))
            }
        ));
        result
    })
}

fn measure(
    plan: LoopPlan,
    ring_dir: &Path,
    rows: &mut Vec<Row>,
    notes: &mut Vec<String>,
) -> Result<()> {
    let dirs = plugin_dirs();
    let mut modes = vec![Mode::Off, Mode::Nop, Mode::Ring(ring_dir.to_owned())];
    if plugin_available(&dirs, "prometheus") {
        modes.push(Mode::Prometheus(dirs));
    } else {
        notes.push("real loop without Prometheus: libtelemetry_exporter_prometheus.so not found (cargo build --release -p nixl-telemetry-exporter-prometheus)".into());
    }
    for (size, label) in [(4usize << 10, "4 KiB"), (1 << 20, "1 MiB")] {
        let workloads = modes
            .iter()
            .map(|m| workload(size, m))
            .collect::<Result<Vec<_>>>()?;
        let mut workers: Vec<_> = workloads.iter().map(|w| w.worker(0)).collect();
        // Size a chunk from a short untimed run of the off mode.
        let start = Instant::now();
        let mut probe = 0u64;
        while start.elapsed() < Duration::from_millis(20) {
            workers[0].step();
            probe += 1;
        }
        let per = start.elapsed().as_secs_f64() / probe as f64;
        let steps = ((plan.chunk.as_secs_f64() / per) as u64).max(4);
        // Warm up every mode until its staging queues have wrapped once (their
        // pages are touched: a long-running process pays those page faults
        // once), at most half a second each.
        for w in workers.iter_mut() {
            let start = Instant::now();
            let mut done = 0u64;
            while done < WARM_TRANSFERS && start.elapsed() < Duration::from_millis(500) {
                w.step();
                done += 1;
            }
        }
        let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(plan.rounds); modes.len()];
        for round in 0..plan.rounds {
            for k in 0..modes.len() {
                let m = (round + k) % modes.len();
                let start = Instant::now();
                for _ in 0..steps {
                    workers[m].step();
                }
                times[m].push(start.elapsed().as_nanos() as f64 / steps as f64);
            }
        }
        let off = median(&mut times[0].clone());
        rows.push(Row {
            id: format!("loop_{}_off", short(size)),
            label: format!("real loop {label}: telemetry off"),
            threads: 1,
            unit: Unit::NsPerTransfer,
            median: off,
            best: times[0].iter().copied().fold(f64::INFINITY, f64::min),
            repeats: plan.rounds,
            note: format!("{steps} transfers per chunk; absolute time per transfer"),
            extra: Default::default(),
        });
        for (m, mode) in modes.iter().enumerate().skip(1) {
            let mut diffs: Vec<f64> = times[m].iter().zip(&times[0]).map(|(a, b)| a - b).collect();
            let fastest = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
            let best_off = fastest(&times[0]);
            let best_diff = fastest(&times[m]) - best_off;
            let slowdown = median(&mut diffs);
            let mine = median(&mut times[m].clone());
            let stats: Vec<_> = workloads[m]
                .agents()
                .iter()
                .map(|a| {
                    let s = a.telemetry().stats();
                    json!({"agent": a.name(), "recorded": s.recorded, "delivered": s.delivered, "dropped": s.dropped.total(), "staging_full": s.dropped.staging_full, "exporter_full": s.dropped.exporter_full})
                })
                .collect();
            let mut row = Row {
                id: format!("loop_{}_{}", short(size), mode.name()),
                label: format!("real loop {label}: {} exporter", mode.name()),
                threads: 1,
                unit: Unit::Percent,
                median: 100.0 * slowdown / off,
                best: 100.0 * best_diff / best_off,
                repeats: plan.rounds,
                note: format!("{slowdown:+.0} ns per transfer ({mine:.0} vs {off:.0} ns)"),
                extra: Default::default(),
            };
            row.extra
                .insert("slowdown_ns_per_transfer".into(), json!(slowdown));
            row.extra.insert("ns_per_transfer".into(), json!(mine));
            row.extra.insert("telemetry".into(), json!(stats));
            rows.push(row);
        }
        drop(workers);
        for w in workloads {
            drop(w.shutdown());
        }
    }
    Ok(())
}

fn short(size: usize) -> String {
    if size >= 1 << 20 {
        format!("{}m", size >> 20)
    } else {
        format!("{}k", size >> 10)
    }
}
