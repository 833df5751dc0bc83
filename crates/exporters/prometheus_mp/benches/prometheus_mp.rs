//! Speed of the multi-process plug-in (figures in docs/PERFORMANCE.md).
//!
//! ```text
//! cargo bench -p nixl-telemetry-prometheus-mp --bench prometheus_mp \
//!     [-- [write] [scrape] [--seconds S] [--processes N] [--scrapes K]]
//! ```
//!
//! * `write`: the flush thread's cost per event, `record` of a batch of
//!   4096, then of 64, events (transfers, post times, memory, errors,
//!   backend counters), for the single-process exporter and for this one
//!   (which publishes into its memory-mapped store, then, as the plug-in's
//!   `flush` does after every pass, stamps it and tries the owner lock), in
//!   alternating rounds of `--seconds` (default 1) each, 5 rounds; prints
//!   ns/event and the ratios.
//! * `scrape`: N (default 64) real processes (this binary re-run as writers),
//!   each with its own store holding the transfer families, 12 error statuses
//!   and 20 backend counters; this process owns the endpoint; K (default 500)
//!   sequential `GET /metrics` over loopback, each opening a connection;
//!   prints the latency percentiles, and those of the directory scan and
//!   rendering alone (wall clock and the thread's CPU time: on a shared
//!   machine the tail of the wall clock is mostly waiting for a CPU).

use std::io::{BufRead, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nixl_telemetry_abi::{Category, Event};
use nixl_telemetry_benchsupport::thread_cpu_time;
use nixl_telemetry_prometheus::{Format, PrometheusExporter, Settings};
use nixl_telemetry_prometheus_mp::{MpSettings, MultiProcessExporter};

const BATCH: usize = 4096;

fn arg_value(args: &[String], flag: &str) -> Option<f64> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse().expect("a number"))
}

fn batch() -> Vec<Event> {
    let mut events = Vec::with_capacity(BATCH);
    let mut i = 0u64;
    while events.len() < BATCH {
        events.push(Event::new(
            i,
            Category::TRANSFER,
            "agent_tx_bytes",
            4096 + i % 7,
        ));
        events.push(Event::new(
            i,
            Category::TRANSFER,
            "agent_tx_requests_num",
            1,
        ));
        events.push(Event::new(
            i,
            Category::PERFORMANCE,
            "agent_xfer_time",
            20 + i % 3000,
        ));
        events.push(Event::new(
            i,
            Category::PERFORMANCE,
            "agent_xfer_post_time",
            3 + i % 40,
        ));
        if i.is_multiple_of(8) {
            events.push(Event::new(
                i,
                Category::MEMORY,
                "agent_memory_registered",
                65536,
            ));
            events.push(Event::new(
                i,
                Category::BACKEND,
                &format!("ucx_op_{}", i % 20),
                1,
            ));
        }
        if i.is_multiple_of(64) {
            events.push(Event::new(i, Category::ERROR, "NIXL_ERR_BACKEND", 1));
        }
        i += 1;
    }
    events.truncate(BATCH);
    events
}

fn settings(dir: &Path) -> MpSettings {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    MpSettings::new(Settings::new(SocketAddr::from(([127, 0, 0, 1], port))), dir)
}

/// ns per event of `record` over `seconds`.
fn time_per_event(seconds: f64, mut record: impl FnMut(&[Event]), events: &[Event]) -> f64 {
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed().as_secs_f64() < seconds {
        for _ in 0..16 {
            record(events);
        }
        n += 16;
    }
    start.elapsed().as_nanos() as f64 / (n * events.len() as u64) as f64
}

fn write_path(seconds: f64) {
    let dir = tempfile::tempdir().unwrap();
    let all = batch();
    let mut single =
        PrometheusExporter::with_settings("single", &Settings::new("127.0.0.1:0".parse().unwrap()))
            .unwrap();
    // Not the owner: `tick` then tries the owner lock (one flock) per pass,
    // the most a writer ever does.
    let _owner = MultiProcessExporter::with_settings("owner", &settings(dir.path())).unwrap();
    let mut s = settings(dir.path());
    s.base.listen = _owner.local_addr().unwrap();
    let mut multi = MultiProcessExporter::with_settings("multi", &s).unwrap();
    assert!(!multi.is_owner());
    let start = Instant::now();
    for _ in 0..1_000_000 {
        multi.tick();
    }
    println!(
        "tick alone (stamp the store, maybe try the owner lock): {:.1} ns",
        start.elapsed().as_nanos() as f64 / 1e6
    );
    for size in [BATCH, 64] {
        let events = &all[..size];
        let (mut s_all, mut m_all) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            s_all.push(time_per_event(seconds, |e| single.record(e), events));
            m_all.push(time_per_event(
                seconds,
                |e| {
                    multi.record(e);
                    multi.tick();
                },
                events,
            ));
        }
        let ratios: Vec<String> = s_all
            .iter()
            .zip(&m_all)
            .map(|(s, m)| format!("{:.3}", m / s))
            .collect();
        s_all.sort_by(f64::total_cmp);
        m_all.sort_by(f64::total_cmp);
        let (s, m) = (s_all[2], m_all[2]);
        println!(
            "write, batches of {size}: single {s:.2} ns/event, prometheus_mp (record + tick) {m:.2} ns/event, median ratio {:.3}; per round {}",
            m / s,
            ratios.join(" ")
        );
    }
}

/// A writer process: one store with series, then waits for stdin to close.
fn writer(dir: &str, port: u16, rank: &str) {
    let mut s = MpSettings::new(Settings::new(SocketAddr::from(([127, 0, 0, 1], port))), dir);
    s.local_rank = Some(rank.to_owned());
    let mut exporter = MultiProcessExporter::with_settings(&format!("rank-{rank}"), &s).unwrap();
    exporter.record(&batch());
    println!("ready");
    std::io::stdout().flush().unwrap();
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

fn scrape(processes: usize, scrapes: usize) {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(dir.path());
    let port = s.base.listen.port();
    let owner = MultiProcessExporter::with_settings("owner", &s).unwrap();
    let addr = owner
        .local_addr()
        .expect("the first exporter owns the endpoint");
    let exe = std::env::current_exe().unwrap();
    let mut children = Vec::new();
    for r in 0..processes {
        let mut child = Command::new(&exe)
            .args([
                "--writer",
                &dir.path().to_string_lossy(),
                &port.to_string(),
                &r.to_string(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready");
        children.push(child);
    }
    let mut http = Vec::with_capacity(scrapes);
    let mut body_len = 0;
    for _ in 0..scrapes {
        let start = Instant::now();
        let mut s = TcpStream::connect(addr).unwrap();
        write!(
            s,
            "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).unwrap();
        http.push(start.elapsed());
        body_len = raw.len();
    }
    let mut render = Vec::with_capacity(scrapes);
    let mut render_cpu = Vec::with_capacity(scrapes);
    for _ in 0..scrapes {
        let start = Instant::now();
        let cpu = thread_cpu_time();
        let body = owner.render(Format::Text);
        render_cpu.push(thread_cpu_time() - cpu);
        render.push(start.elapsed());
        assert!(body.len() > 1000);
    }
    let text = String::from_utf8(owner.render(Format::Text)).unwrap();
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("agent_tx_bytes_total{"))
            .count(),
        processes + 1
    );
    http.sort();
    render.sort();
    render_cpu.sort();
    println!(
        "scrape over {} processes ({} stores, {body_len} bytes): HTTP p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; scan+render alone p50 {:.2} ms, p99 {:.2} ms, its CPU time p50 {:.2} ms, p99 {:.2} ms",
        processes,
        processes + 1,
        percentile(&http, 0.5),
        percentile(&http, 0.99),
        percentile(&http, 1.0),
        percentile(&render, 0.5),
        percentile(&render, 0.99),
        percentile(&render_cpu, 0.5),
        percentile(&render_cpu, 0.99),
    );
    for mut c in children {
        drop(c.stdin.take());
        let _ = c.wait();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--writer") {
        writer(&args[i + 1], args[i + 2].parse().unwrap(), &args[i + 3]);
        return;
    }
    let write = args.iter().any(|a| a == "write");
    let scrape_only = args.iter().any(|a| a == "scrape");
    let seconds = arg_value(&args, "--seconds").unwrap_or(1.0);
    if write || !scrape_only {
        write_path(seconds);
    }
    if scrape_only || !write {
        scrape(
            arg_value(&args, "--processes").map_or(64, |v| v as usize),
            arg_value(&args, "--scrapes").map_or(500, |v| v as usize),
        );
    }
}
