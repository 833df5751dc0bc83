//! The OTLP exporter's costs (figures in docs/PERFORMANCE.md):
//!
//! 1. absorb: events per second `OtlpExporter::record` + `publish` take on
//!    the flush thread (the target is ≥ 5 M/s);
//! 2. encode: one metrics request for 64 agents built and encoded (≤ 1 ms),
//!    and its gzip;
//! 3. recording: how fast an agent thread records through the host with the
//!    `otlp` plug-in exporting to an unreachable endpoint, against the
//!    built-in `nop` exporter, rounds alternating in one run (within 5%).
//!
//! Run: `cargo build --release -p nixl-telemetry-exporter-otlp && cargo bench -p nixl-telemetry-otlp`
//! (the third part loads `target/release/libtelemetry_exporter_otlp.so`).
//! `OTLP_BENCH_QUICK=1` shortens every part.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use nixl_telemetry::config::{ExporterChoice, TelemetryConfig};
use nixl_telemetry::{Direction, Telemetry};
use nixl_telemetry_abi::{Category, Event};
use nixl_telemetry_benchsupport::{pin, thread_cpu_time, unpin};
use nixl_telemetry_metrics::{AgentMetrics, SeriesNaming};
use nixl_telemetry_otlp::encode::{self, AgentView};
use nixl_telemetry_otlp::{Buckets, ExportStats, OtlpExporter, Settings};

/// An address nothing listens on (TCP port 9, discard, on loopback).
const UNREACHABLE: &str = "http://127.0.0.1:9";

fn quick() -> bool {
    std::env::var_os("OTLP_BENCH_QUICK").is_some()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// A flush batch as a busy agent produces it: transfers (time, bytes,
/// requests), a post time, now and then a backend event and an error.
fn batch(len: usize) -> Vec<Event> {
    let mut out = Vec::with_capacity(len);
    let mut i = 0u64;
    while out.len() < len {
        i += 1;
        let ts = 1_700_000_000_000_000 + i;
        match i % 16 {
            14 => out.push(Event::new(ts, Category::BACKEND, "ucx_rndv_ops", 1)),
            15 => out.push(Event::new(ts, Category::ERROR, "NIXL_ERR_BACKEND", 1)),
            13 => out.push(Event::new(
                ts,
                Category::PERFORMANCE,
                "agent_xfer_post_time",
                i % 300,
            )),
            _ => {
                out.push(Event::new(
                    ts,
                    Category::PERFORMANCE,
                    "agent_xfer_time",
                    (i * 37) % 20_000,
                ));
                out.push(Event::new(
                    ts,
                    Category::TRANSFER,
                    "agent_tx_bytes",
                    1 << (i % 24),
                ));
                out.push(Event::new(
                    ts,
                    Category::TRANSFER,
                    "agent_tx_requests_num",
                    1,
                ));
            }
        }
    }
    out.truncate(len);
    out
}

fn absorb() {
    let mut settings = Settings::new(UNREACHABLE).unwrap();
    settings.export_interval = Duration::from_secs(3600);
    let mut exporter = OtlpExporter::with_settings("bench-absorb", &settings).unwrap();
    let events = batch(4095);
    let rounds = if quick() { 3 } else { 9 };
    let per_round = if quick() { 200 } else { 1000 };
    let mut rates = Vec::new();
    for _ in 0..rounds {
        let start = Instant::now();
        for _ in 0..per_round {
            exporter.record(black_box(&events)).unwrap();
            exporter.publish();
        }
        let secs = start.elapsed().as_secs_f64();
        rates.push((events.len() * per_round) as f64 / secs);
    }
    let m = median(rates.clone());
    println!(
        "absorb (record + publish, batches of {}): median {:.1} M events/s (min {:.1}, max {:.1}) over {rounds} rounds",
        events.len(),
        m / 1e6,
        rates.iter().copied().fold(f64::INFINITY, f64::min) / 1e6,
        rates.iter().copied().fold(0.0, f64::max) / 1e6,
    );
}

fn encode_64_agents() {
    let buckets = Buckets::default();
    let events = batch(4095);
    let names: Vec<String> = (0..64).map(|i| format!("agent-{i:02}")).collect();
    let aggregators: Vec<AgentMetrics> = names
        .iter()
        .map(|name| {
            let mut a = AgentMetrics::new(name, buckets.clone(), SeriesNaming::Otlp);
            a.record(&events);
            a.record(&[
                Event::new(1, Category::CONNECTION, "agent_connect", 1),
                Event::new(1, Category::CUSTOM, "checkpoint_bytes", 1 << 30),
                Event::new(1, Category::ERROR, "NIXL_ERR_REMOTE_DISCONNECT", 1),
            ]);
            a
        })
        .collect();
    let views: Vec<AgentView<'_>> = names
        .iter()
        .zip(&aggregators)
        .map(|(name, a)| AgentView {
            name,
            start_time_ns: 1_700_000_000_000_000_000,
            totals: a.totals(),
        })
        .collect();
    let resource = encode::resource(
        &[("service.name".to_owned(), "nixl".to_owned())],
        "bench-host",
        std::process::id(),
    );
    let stats = ExportStats::default();
    let mut raw = Vec::new();
    let iterations = if quick() { 50 } else { 400 };
    let mut times = Vec::new();
    for i in 0..iterations {
        let start = Instant::now();
        let request = encode::metrics_request(
            &resource,
            black_box(&views),
            buckets.bounds(),
            &stats,
            1,
            1_700_000_000_000_000_000 + i,
        );
        encode::encode_into(&request, &mut raw);
        times.push(start.elapsed().as_secs_f64());
    }
    let points: usize = 17 + 2 + 12 + 1 + 2;
    let mut gzip_times = Vec::new();
    let mut gz = Vec::new();
    for _ in 0..if quick() { 5 } else { 50 } {
        use std::io::Write;
        let start = Instant::now();
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&raw).unwrap();
        gz = e.finish().unwrap();
        gzip_times.push(start.elapsed().as_secs_f64());
    }
    let gzip_time = Duration::from_secs_f64(median(gzip_times));
    println!(
        "encode one metrics request of 64 agents (~{} data points): median {:.3} ms (min {:.3}), {} bytes; gzip (fast, median) {:.3} ms → {} bytes",
        points * 64,
        median(times.clone()) * 1e3,
        times.iter().copied().fold(f64::INFINITY, f64::min) * 1e3,
        raw.len(),
        gzip_time.as_secs_f64() * 1e3,
        gz.len()
    );
}

/// `target/release`, where `cargo build --release` puts the plug-in.
fn plugin_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().and_then(|d| d.parent()).unwrap().to_owned()
}

/// How one recording round loops.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Loop {
    /// `transfer_completed` without pause.
    FullSpeed,
    /// An application's loop: copy 4 KiB, then `transfer_completed`.
    App,
}

/// One recording round: transfers per wall second, per second of the
/// recording thread's CPU time, and the fraction of events lost at staging.
struct Round {
    wall: f64,
    cpu: f64,
    lost: f64,
}

/// Records on one thread for `window` (a transfer is 3 events).
fn recording_rate(exporter: ExporterChoice, kind: Loop, window: Duration, pinned: bool) -> Round {
    let config = TelemetryConfig {
        exporter,
        output_path: Some(UNREACHABLE.to_owned()),
        plugin_dirs: vec![plugin_dir()],
        buffer_size: 65_536,
        run_interval: Duration::from_millis(10),
        ..TelemetryConfig::default()
    };
    // Pinned: the flush thread and the plug-in's export thread (created
    // now, they inherit this affinity) on CPU 1, the recorder on CPU 0.
    if pinned {
        pin(Some(1));
    }
    let telemetry = Telemetry::new("bench-record", config).expect("telemetry");
    pin(pinned.then_some(0));
    let src = vec![7u8; 4096];
    let mut dst = vec![0u8; 4096];
    // Warm up: the thread's staging queue, the first flushes.
    for _ in 0..10_000 {
        telemetry.transfer_completed(25, Direction::Write, 4096);
    }
    std::thread::sleep(Duration::from_millis(20));
    let before = telemetry.stats();
    let cpu_start = thread_cpu_time().as_secs_f64();
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < window {
        for _ in 0..256 {
            if kind == Loop::App {
                dst.copy_from_slice(black_box(&src));
                black_box(&mut dst);
            }
            telemetry.transfer_completed(black_box(25), Direction::Write, black_box(4096));
        }
        n += 256;
    }
    let wall = n as f64 / start.elapsed().as_secs_f64();
    let cpu = n as f64 / (thread_cpu_time().as_secs_f64() - cpu_start);
    let after = telemetry.stats();
    let lost = (after.dropped.staging_full - before.dropped.staging_full) as f64 / (3 * n) as f64;
    drop(telemetry);
    unpin();
    Round { wall, cpu, lost }
}

fn recording_vs_nop() {
    let so = plugin_dir().join("libtelemetry_exporter_otlp.so");
    if !so.is_file() {
        println!(
            "recording vs nop: skipped, {} is missing (cargo build --release -p nixl-telemetry-exporter-otlp)",
            so.display()
        );
        return;
    }
    // Keep the plug-in's thread busy: an export due every 100 ms, each refused.
    std::env::set_var("OTEL_METRIC_EXPORT_INTERVAL", "100");
    let rounds = if quick() { 3 } else { 15 };
    let window = Duration::from_millis(if quick() { 200 } else { 300 });
    let otlp = ExporterChoice::Plugin {
        name: "otlp".to_owned(),
    };
    let two_cpus = std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
    for (kind, label, pinned) in [
        (
            Loop::FullSpeed,
            "transfer_completed without pause, pinned",
            true,
        ),
        (
            Loop::App,
            "app loop (4 KiB copy + transfer_completed), pinned",
            true,
        ),
        (
            Loop::FullSpeed,
            "transfer_completed without pause, unpinned",
            false,
        ),
        (
            Loop::App,
            "app loop (4 KiB copy + transfer_completed), unpinned",
            false,
        ),
    ] {
        if pinned && !two_cpus {
            continue;
        }
        let (mut nop_rates, mut otlp_rates, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        let mut cpu_ratios = Vec::new();
        let mut lost: f64 = 0.0;
        for round in 0..rounds {
            // Alternate which goes first, so drift favours neither.
            let (a, b) = if round % 2 == 0 {
                let a = recording_rate(ExporterChoice::Nop, kind, window, pinned);
                (a, recording_rate(otlp.clone(), kind, window, pinned))
            } else {
                let b = recording_rate(otlp.clone(), kind, window, pinned);
                (recording_rate(ExporterChoice::Nop, kind, window, pinned), b)
            };
            lost = lost.max(a.lost).max(b.lost);
            nop_rates.push(a.wall);
            otlp_rates.push(b.wall);
            ratios.push(b.wall / a.wall);
            cpu_ratios.push(b.cpu / a.cpu);
        }
        println!(
            "recording, {label}: nop {:.2} M transfers/s, otlp (unreachable endpoint) {:.2} M/s (medians); otlp/nop per round: median {:.3} (min {:.3}, max {:.3}), per recording-thread CPU second: median {:.3} (min {:.3}, max {:.3}) over {rounds} rounds; at most {:.1}% of events lost at staging in a round",
            median(nop_rates) / 1e6,
            median(otlp_rates) / 1e6,
            median(ratios.clone()),
            ratios.iter().copied().fold(f64::INFINITY, f64::min),
            ratios.iter().copied().fold(0.0, f64::max),
            median(cpu_ratios.clone()),
            cpu_ratios.iter().copied().fold(f64::INFINITY, f64::min),
            cpu_ratios.iter().copied().fold(0.0, f64::max),
            lost * 100.0,
        );
    }
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported.
    absorb();
    encode_64_agents();
    recording_vs_nop();
}
