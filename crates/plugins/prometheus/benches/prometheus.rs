//! Speed of the Prometheus plug-in (numbers in docs/PERFORMANCE.md, "Scrape latency" and "Exporter throughput").
//!
//! ```text
//! cargo bench -p nixl-telemetry-exporter-prometheus --bench prometheus \
//!     [-- [absorb] [scrape] [--seconds S] [--rounds R] [--clients N] [--threads T] [--pin] [--rt] [--identity] [--nice-clients]]
//! ```
//!
//! * `absorb`: events per second `export_batch` takes on the flush thread,
//!   called through the plug-in's C descriptor with 4096-event batches.
//! * `scrape`: 20 agents with every series on one endpoint; N (default 50)
//!   keep-alive connections scrape `/metrics` in a loop over loopback, each
//!   sending its next request as soon as its response is in, driven by T
//!   (default 1) load-generator threads, while (a) an application thread
//!   records through the real collector at full speed, whose flush thread
//!   exports into one of the agents, (a2) the same thread runs an application
//!   loop (a 4 KiB copy between two 8 MiB regions and a `transfer_completed`
//!   per iteration, a rate the exporter keeps up with), and (b) a thread calls `export_batch` in a loop. Each is
//!   measured alone and under the scrapers; scrape latency percentiles are
//!   measured under load. `--pin` puts the endpoint's server thread and the
//!   scrapers on the last CPU and the recorder and flush thread on CPU 0, so
//!   interference through shared state is measured apart from CPU sharing.
//!   Scrapers send Prometheus's `Accept` and `Accept-Encoding: gzip` headers;
//!   `--identity` drops the gzip. `--rt` (root; use with `--pin`) runs every
//!   thread measured (server, scrapers, recorder, flush thread, export loop)
//!   `SCHED_RR`, so other processes on a shared machine cannot take their
//!   CPUs during the phases. `--nice-clients` runs the load threads (and the
//!   control's busy loop) at nice 19, standing in for a Prometheus on another
//!   machine: their own CPU is then not taken from the host, and what is left
//!   is the endpoint's cost.
//!   Every loop is bounded by time (`--seconds`, default 5 per phase) and by
//!   count.

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::ffi::{c_char, c_void, CString};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nixl_telemetry::{Direction, ExportOutcome, Exporter, Telemetry, TelemetryStats};
use nixl_telemetry_abi::c_abi::{CExporterParams, PluginDescriptor, EXPORT_OK};
use nixl_telemetry_abi::{Category, Event};
use nixl_telemetry_benchsupport::{lower_priority, pin, real_time, thread_cpu_time};
use nixl_telemetry_prometheus::{Format, PrometheusExporter, Settings};

const BATCH: usize = 4096;
/// Upper bound on scrapes per client per phase (the time bound usually ends it first).
const MAX_SCRAPES_PER_CLIENT: usize = 200_000;

struct Options {
    absorb: bool,
    scrape: bool,
    seconds: f64,
    clients: usize,
    threads: usize,
    pin: bool,
    identity: bool,
    rt: bool,
    rounds: usize,
    nice_clients: bool,
}

fn options() -> Options {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .map(|v| v.parse::<f64>().expect("a number"))
    };
    let absorb = args.iter().any(|a| a == "absorb");
    let scrape = args.iter().any(|a| a == "scrape");
    Options {
        absorb: absorb || !scrape,
        scrape: scrape || !absorb,
        seconds: value("--seconds").unwrap_or(5.0),
        clients: value("--clients").map_or(50, |c| c as usize),
        threads: value("--threads").map_or(1, |c| c as usize),
        pin: args.iter().any(|a| a == "--pin"),
        identity: args.iter().any(|a| a == "--identity"),
        rt: args.iter().any(|a| a == "--rt"),
        rounds: value("--rounds").map_or(5, |r| (r as usize).max(1)),
        nice_clients: args.iter().any(|a| a == "--nice-clients"),
    }
}

fn ev(category: Category, name: &str, value: u64) -> Event {
    Event::new(1, category, name, value)
}

/// A realistic flush batch: mostly completed transfers (3 events each), with
/// post times, memory, errors and backend events mixed in.
fn mixed_batch() -> Vec<Event> {
    let mut out = Vec::with_capacity(BATCH);
    let mut i = 0u64;
    while out.len() < BATCH {
        let us = 5 + (i * 7919) % 20_000;
        let write = i.is_multiple_of(2);
        out.push(ev(Category::PERFORMANCE, "agent_xfer_time", us));
        out.push(ev(
            Category::TRANSFER,
            if write {
                "agent_tx_bytes"
            } else {
                "agent_rx_bytes"
            },
            4096 + i,
        ));
        out.push(ev(
            Category::TRANSFER,
            if write {
                "agent_tx_requests_num"
            } else {
                "agent_rx_requests_num"
            },
            1,
        ));
        match i % 8 {
            0 => out.push(ev(Category::PERFORMANCE, "agent_xfer_post_time", us / 10)),
            1 => out.push(ev(Category::MEMORY, "agent_memory_registered", 1 << 20)),
            2 => out.push(ev(Category::ERROR, "NIXL_ERR_BACKEND", 1)),
            3 => out.push(ev(
                Category::BACKEND,
                &format!("ucx_backend_event_{}", i % 16),
                1,
            )),
            _ => {}
        }
        i += 1;
    }
    out.truncate(BATCH);
    out
}

/// Only per-name events over 64 names: the slowest path (hash lookup).
fn per_name_batch() -> Vec<Event> {
    (0..BATCH)
        .map(|i| ev(Category::BACKEND, &format!("backend_counter_{}", i % 64), 1))
        .collect()
}

fn descriptor() -> &'static PluginDescriptor {
    // SAFETY: the descriptor is a static built by export_plugin!.
    unsafe { &*telemetry_exporter_prometheus::nixl_telemetry_exporter_plugin_init() }
}

/// An exporter created through the C ABI on a fresh loopback port.
fn c_exporter(agent: &str) -> *mut c_void {
    let agent = CString::new(agent).unwrap();
    let output = CString::new("127.0.0.1:0").unwrap();
    let params = CExporterParams {
        agent_name: agent.as_ptr(),
        max_events_buffered: BATCH,
        output_path: output.as_ptr(),
    };
    let mut err = [0 as c_char; 256];
    // SAFETY: params and err are valid for the call.
    let h =
        unsafe { (descriptor().create_exporter.unwrap())(&params, err.as_mut_ptr(), err.len()) };
    assert!(!h.is_null(), "create_exporter failed");
    h
}

fn absorb(seconds: f64) {
    println!("## absorb: export_batch through the C descriptor, batches of {BATCH} events");
    let export = descriptor().export_batch.unwrap();
    for (label, batch) in [
        ("mixed", mixed_batch()),
        ("per-name only", per_name_batch()),
    ] {
        let h = c_exporter("absorb");
        let mut rates = Vec::new();
        let mut cpu_rates = Vec::new();
        for _ in 0..5 {
            let deadline = Instant::now() + Duration::from_secs_f64(seconds / 5.0);
            let started = Instant::now();
            let cpu_started = thread_cpu_time();
            let mut events = 0u64;
            while Instant::now() < deadline && events < 10_000_000_000 {
                for _ in 0..64 {
                    // SAFETY: h is live; batch is valid for its length.
                    let rc = unsafe { export(h, batch.as_ptr(), batch.len()) };
                    assert_eq!(rc, EXPORT_OK);
                }
                events += 64 * batch.len() as u64;
            }
            rates.push(events as f64 / started.elapsed().as_secs_f64());
            cpu_rates.push(events as f64 / (thread_cpu_time() - cpu_started).as_secs_f64());
        }
        rates.sort_by(f64::total_cmp);
        cpu_rates.sort_by(f64::total_cmp);
        println!(
            "{label:>14}: median {:.1} M events/s (min {:.1}, max {:.1}) over 5 runs; per CPU-second of the thread: median {:.1} M",
            rates[2] / 1e6,
            rates[0] / 1e6,
            rates[4] / 1e6,
            cpu_rates[2] / 1e6
        );
        // SAFETY: h came from create_exporter and is destroyed once.
        unsafe { (descriptor().destroy_exporter.unwrap())(h) };
    }
}

/// Every series of an agent: all built-in events, all known error statuses and
/// two more, and twelve backend/connection/custom names.
fn every_series_batch() -> Vec<Event> {
    let mut out = mixed_batch();
    for status in nixl_telemetry_abi::names::ERROR_STATUSES {
        out.push(ev(
            Category::ERROR,
            &format!("NIXL_ERR_{}", status.to_ascii_uppercase()),
            1,
        ));
    }
    out.push(ev(Category::ERROR, "NIXL_ERR_TIMEOUT", 1));
    out.push(ev(Category::ERROR, "NIXL_ERR_IO", 1));
    out.push(ev(Category::MEMORY, "agent_memory_deregistered", 4096));
    out.push(ev(Category::SYSTEM, "agent_telemetry_events_dropped", 3));
    for i in 0..4 {
        out.push(ev(
            Category::CONNECTION,
            &format!("connection_event_{i}"),
            1,
        ));
        out.push(ev(Category::CUSTOM, &format!("custom_event_{i}"), 1));
    }
    out
}

/// The collector's exporter, feeding one agent of the endpoint.
struct Feed(PrometheusExporter);

impl Exporter for Feed {
    fn name(&self) -> &str {
        "prometheus"
    }
    fn export(&mut self, events: &[Event]) -> ExportOutcome {
        self.0.record(events);
        ExportOutcome::delivered(events.len())
    }
}

/// One scraping connection of a load-generator thread.
struct Client {
    stream: mio::net::TcpStream,
    request: &'static [u8],
    buf: Vec<u8>,
    have: usize,
    wanted: Option<usize>,
    sent_at: Instant,
    ready: bool,
}

/// What a Prometheus 2.x server sends (less its User-Agent and scrape timeout).
const REQUEST_GZIP: &[u8] = b"GET /metrics HTTP/1.1\r\nHost: bench\r\nAccept: application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\nAccept-Encoding: gzip\r\n\r\n";
/// The same without gzip: every scrape moves the whole text.
const REQUEST_PLAIN: &[u8] = b"GET /metrics HTTP/1.1\r\nHost: bench\r\nAccept: application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n\r\n";

impl Client {
    fn send(&mut self) {
        // A short request always fits an empty socket buffer.
        let n = self.stream.write(self.request).expect("send a request");
        assert_eq!(n, self.request.len());
        self.sent_at = Instant::now();
        self.have = 0;
        self.wanted = None;
    }

    /// Reads what is there; `Some(latency)` when a whole response is in.
    fn receive(&mut self) -> Option<Duration> {
        loop {
            if self.have == self.buf.len() {
                self.buf.resize(self.buf.len() * 2, 0);
            }
            match self.stream.read(&mut self.buf[self.have..]) {
                Ok(0) => panic!("the server closed a scraping connection"),
                Ok(n) => self.have += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return None,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => panic!("read: {e}"),
            }
            if self.wanted.is_none() {
                if let Some(end) = self.buf[..self.have]
                    .windows(4)
                    .position(|w| w == b"\r\n\r\n")
                {
                    let head = std::str::from_utf8(&self.buf[..end]).unwrap();
                    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("Content-Length: "))
                        .expect("Content-Length")
                        .parse()
                        .unwrap();
                    self.wanted = Some(end + 4 + len);
                }
            }
            if let Some(total) = self.wanted {
                if self.have >= total {
                    assert_eq!(self.have, total, "one response at a time");
                    return Some(self.sent_at.elapsed());
                }
            }
        }
    }
}

/// One load-generator thread driving `connections` keep-alive connections,
/// each sending its next `GET /metrics` as soon as the previous response is
/// complete, until `stop`; returns the latencies in µs.
fn scraper(addr: SocketAddr, connections: usize, gzip: bool, stop: &AtomicBool) -> Vec<u32> {
    let mut poll = mio::Poll::new().unwrap();
    let mut clients: Vec<Client> = (0..connections)
        .map(|i| {
            let std = TcpStream::connect(addr).expect("connect");
            std.set_nodelay(true).unwrap();
            std.set_nonblocking(true).unwrap();
            let mut stream = mio::net::TcpStream::from_std(std);
            poll.registry()
                .register(&mut stream, mio::Token(i), mio::Interest::READABLE)
                .unwrap();
            Client {
                stream,
                request: if gzip { REQUEST_GZIP } else { REQUEST_PLAIN },
                buf: vec![0; 1 << 18],
                have: 0,
                wanted: None,
                sent_at: Instant::now(),
                ready: false,
            }
        })
        .collect();
    for c in &mut clients {
        c.send();
    }
    let mut latencies = Vec::with_capacity(1 << 16);
    let mut events = mio::Events::with_capacity(256);
    let limit = MAX_SCRAPES_PER_CLIENT * connections;
    while !stop.load(Ordering::Relaxed) && latencies.len() < limit {
        poll.poll(&mut events, Some(Duration::from_millis(50)))
            .unwrap();
        for e in events.iter() {
            clients[e.token().0].ready = true;
        }
        for c in clients.iter_mut().filter(|c| c.ready) {
            c.ready = false;
            if let Some(latency) = c.receive() {
                latencies.push(latency.as_micros().min(u128::from(u32::MAX)) as u32);
                c.send();
                // The response may already be complete again only after the
                // server answers: wait for the next readiness event.
            }
        }
    }
    latencies
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Runs `work` for `seconds` (it returns operations done per call), with or
/// without `clients` scrapers; returns (ops/s, sorted latencies).
/// Operations per second of wall time, and per second of the working
/// thread's own CPU time (which time-sharing with other threads and
/// processes does not dilute).
#[derive(Debug, Clone, Copy)]
struct Rate {
    wall: f64,
    cpu: f64,
}

fn phase(
    addr: SocketAddr,
    load: Load,
    seconds: f64,
    mut work: impl FnMut() -> u64 + Send,
) -> (Rate, Vec<u32>) {
    let stop = AtomicBool::new(false);
    let all = Mutex::new(Vec::new());
    let mut rate = Rate {
        wall: 0.0,
        cpu: 0.0,
    };
    let clients = load.clients;
    std::thread::scope(|scope| {
        if load.spinner {
            let stop = &stop;
            scope.spawn(move || {
                pin(load.scraper_cpu);
                if load.nice {
                    lower_priority();
                }
                let mut x = 1u64;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..10_000 {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                }
            });
        }
        for t in 0..load.threads.min(clients) {
            // Connections split as evenly as possible over the threads.
            let share = clients / load.threads + usize::from(t < clients % load.threads);
            let (stop, all) = (&stop, &all);
            scope.spawn(move || {
                pin(load.scraper_cpu);
                if load.nice {
                    lower_priority();
                }
                let l = scraper(addr, share, load.gzip, stop);
                all.lock().unwrap().extend(l);
            });
        }
        // Let the scrapers get going before measuring.
        let warm_up = clients > 0 || load.spinner;
        std::thread::sleep(Duration::from_millis(if warm_up { 300 } else { 0 }));
        let started = Instant::now();
        let cpu_started = thread_cpu_time();
        let deadline = started + Duration::from_secs_f64(seconds);
        let mut ops = 0u64;
        while Instant::now() < deadline {
            ops += work();
        }
        rate = Rate {
            wall: ops as f64 / started.elapsed().as_secs_f64(),
            cpu: ops as f64 / (thread_cpu_time() - cpu_started).as_secs_f64(),
        };
        stop.store(true, Ordering::Relaxed);
    });
    let mut latencies = all.into_inner().unwrap();
    latencies.sort_unstable();
    (rate, latencies)
}

/// Prints what share of a recorder's events (since `since`) were dropped
/// because its staging queue was full, and what share was delivered.
fn report_recorder(now: &TelemetryStats, since: Option<&TelemetryStats>) {
    let (recorded, dropped, delivered) = match since {
        Some(s) => (
            now.recorded - s.recorded,
            now.dropped.staging_full - s.dropped.staging_full,
            now.delivered - s.delivered,
        ),
        None => (now.recorded, now.dropped.staging_full, now.delivered),
    };
    let share = |n: u64| 100.0 * n as f64 / recorded.max(1) as f64;
    println!(
        "  recorder: {:.1}% of the events it recorded were dropped (staging full), {:.1}% delivered",
        share(dropped),
        share(delivered),
    );
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs `work` under each of `[alone, with scrapers, control]` in turn,
/// `--rounds` times (interleaved, so drift of the machine hits all three alike),
/// each for `--seconds / --rounds`; prints the medians and the median of the
/// per-round ratios; returns the scrape latencies of the loaded phases.
fn compare(
    what: &str,
    unit: &str,
    loads: [Load; 3],
    addr: SocketAddr,
    o: &Options,
    mut work: impl FnMut() -> u64 + Send,
) -> Vec<u32> {
    let each = o.seconds / o.rounds as f64;
    let mut rates: [Vec<Rate>; 3] = Default::default();
    let mut latencies = Vec::new();
    for _ in 0..o.rounds {
        for (i, load) in loads.iter().enumerate() {
            let (rate, l) = phase(addr, *load, each, &mut work);
            rates[i].push(rate);
            latencies.extend(l);
        }
    }
    latencies.sort_unstable();
    let wall = |i: usize| median(rates[i].iter().map(|r| r.wall).collect());
    let ratio = |i: usize, cpu: bool| {
        median(
            rates[0]
                .iter()
                .zip(&rates[i])
                .map(|(a, b)| if cpu { b.cpu / a.cpu } else { b.wall / a.wall } - 1.0)
                .collect(),
        ) * 100.0
    };
    let spread = |i: usize| {
        let r: Vec<f64> = rates[0]
            .iter()
            .zip(&rates[i])
            .map(|(a, b)| (b.wall / a.wall - 1.0) * 100.0)
            .collect();
        let lo = r.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = r.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        format!("{lo:+.1}%..{hi:+.1}%")
    };
    println!(
        "{what}: medians of {} interleaved rounds: alone {:.1} M {unit}/s; with {} scrapers {:.1} M/s ({:+.1}% [rounds {}], per CPU-second {:+.1}%); control, a busy loop on the other CPU instead: {:.1} M/s ({:+.1}% [rounds {}], per CPU-second {:+.1}%)",
        o.rounds,
        wall(0) / 1e6,
        loads[1].clients,
        wall(1) / 1e6,
        ratio(1, false),
        spread(1),
        ratio(1, true),
        wall(2) / 1e6,
        ratio(2, false),
        spread(2),
        ratio(2, true),
    );
    latencies
}

fn report_latency(label: &str, l: &[u32], seconds: f64) {
    println!(
        "{label}: {} scrapes ({:.0}/s): p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        l.len(),
        l.len() as f64 / seconds,
        percentile(l, 0.5) as f64 / 1e3,
        percentile(l, 0.9) as f64 / 1e3,
        percentile(l, 0.99) as f64 / 1e3,
        l.last().copied().unwrap_or(0) as f64 / 1e3,
    );
}

/// How the scrapers run.
#[derive(Debug, Clone, Copy)]
struct Load {
    /// Concurrent keep-alive connections, each scraping in a loop.
    clients: usize,
    /// Load-generator threads the connections are spread over.
    threads: usize,
    /// CPU the scrapers (and the endpoint's server thread) are pinned to.
    scraper_cpu: Option<usize>,
    /// Whether the scrapers ask for gzip, as Prometheus does (they do not
    /// inflate the bodies: a Prometheus server does that on its own machine).
    gzip: bool,
    /// Instead of scrapers: one thread spinning on `scraper_cpu` (a control
    /// that shows what merely keeping the other CPU busy costs).
    spinner: bool,
    /// Whether the load threads (scrapers or spinner) run at nice 19: they
    /// then stand in for a Prometheus on another machine, whose own CPU is not
    /// the host's, and what remains is the cost of the endpoint itself.
    nice: bool,
}

fn scrape(o: &Options) {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (work_cpu, scraper_cpu) = if o.pin && cpus >= 2 {
        (Some(0), Some(cpus - 1))
    } else {
        (None, None)
    };
    let load = Load {
        clients: o.clients,
        threads: o.threads.max(1),
        scraper_cpu,
        gzip: !o.identity,
        spinner: false,
        nice: o.nice_clients,
    };
    let seconds = o.seconds;
    let clients = o.clients;
    println!(
        "## scrape: 20 agents with every series; {clients} keep-alive clients scraping in a loop from {} load thread(s){}, {}; {}",
        load.threads,
        if load.nice { " at nice 19 (the control's busy loop too)" } else { "" },
        if load.gzip { "gzip (as Prometheus asks)" } else { "no gzip" },
        match scraper_cpu {
            Some(c) => format!("server and scrapers pinned to CPU {c}, recorder and flush thread to CPU 0"),
            None => "no pinning".to_owned(),
        }
    );
    // The endpoint's server thread inherits the affinity (and, with --rt, the
    // scheduling policy) of the thread that creates the first exporter.
    pin(scraper_cpu);
    if o.rt {
        // Every thread measured here runs SCHED_RR (inherited by the threads
        // created from this one): other processes on a shared machine cannot
        // take their CPUs, so what remains is the threads' effect on each other.
        println!(
            "SCHED_RR for the server, scrapers, recorder and flush thread: {}",
            match real_time() {
                Ok(()) => "set",
                Err(_) => "refused (not root?)",
            }
        );
    }
    let first = common::exporter("agent-00");
    let addr = first.local_addr();
    let mut agents = vec![first];
    for i in 1..20 {
        agents.push(
            PrometheusExporter::with_settings(&format!("agent-{i:02}"), &Settings::new(addr))
                .unwrap(),
        );
    }
    pin(work_cpu);
    let batch = every_series_batch();
    for a in &mut agents {
        a.record(&batch);
    }
    let body = agents[0].render(Format::Text);
    let text = String::from_utf8_lossy(&body);
    let samples = text.lines().filter(|l| !l.starts_with('#')).count();
    let om = agents[0].render(Format::OpenMetrics);
    let gzip = || {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&om).unwrap();
        e.finish().unwrap()
    };
    let zipped = gzip();
    let started = Instant::now();
    for _ in 0..100 {
        std::hint::black_box(gzip());
    }
    println!(
        "gzip of the OpenMetrics body: {:.0} µs",
        started.elapsed().as_secs_f64() * 1e6 / 100.0
    );
    println!(
        "body: {} bytes, {samples} samples (text format); OpenMetrics {} bytes, {} gzipped",
        body.len(),
        om.len(),
        zipped.len()
    );
    // Render cost alone (what a scrape does when something changed).
    let started = Instant::now();
    let mut renders = 0u32;
    while started.elapsed() < Duration::from_secs(1) && renders < 100_000 {
        std::hint::black_box(agents[0].render(Format::Text));
        renders += 1;
    }
    println!(
        "render of 20 agents alone: {:.1} µs",
        started.elapsed().as_secs_f64() * 1e6 / f64::from(renders)
    );
    let none = Load { clients: 0, ..load };

    // (a) An application thread recording through the real collector (default
    // buffer and interval), whose flush thread exports into agent-00.
    let recorder_agent = agents.remove(0);
    let config = Telemetry::builder("agent-00").as_config().clone();
    let telemetry =
        Telemetry::with_exporter("agent-00", config, Box::new(Feed(recorder_agent))).unwrap();
    let record = || {
        for i in 0..1000u64 {
            telemetry.transfer_completed(20 + (i & 1023), Direction::Write, 4096);
        }
        1000
    };
    let spinning = Load {
        clients: 0,
        spinner: true,
        ..load
    };
    let latencies = compare(
        "record()",
        "transfers",
        [none, load, spinning],
        addr,
        o,
        record,
    );
    report_latency("  scrape latency while recording", &latencies, seconds);
    // At full speed the recorder outpaces any exporter: say how many of its
    // calls found the staging queue full (that path reads no clock and writes
    // no slot).
    let before = telemetry.stats();
    report_recorder(&before, None);

    // (a2) The same thread as an application would be: each iteration moves
    // 4 KiB between two 8 MiB regions (as the demo's transfers do, so the copy
    // leaves the caches) and records the completed transfer; the exporter
    // keeps up with that rate.
    const REGION: usize = 8 << 20;
    const XFER: usize = 4096;
    let src = vec![7u8; REGION];
    let mut dst = vec![0u8; REGION];
    let mut offset = 0usize;
    let app = || {
        for i in 0..100u64 {
            dst[offset..offset + XFER]
                .copy_from_slice(std::hint::black_box(&src[offset..offset + XFER]));
            std::hint::black_box(&mut dst);
            offset = (offset + XFER) % REGION;
            telemetry.transfer_completed(20 + (i & 1023), Direction::Write, XFER as u64);
        }
        100
    };
    let latencies = compare(
        "app loop: 4 KiB copy + transfer_completed()",
        "transfers",
        [none, load, spinning],
        addr,
        o,
        app,
    );
    report_latency(
        "  scrape latency while the app loop runs",
        &latencies,
        seconds,
    );
    report_recorder(&telemetry.stats(), Some(&before));
    drop(telemetry);

    // (b) A thread calling export_batch in a loop (the flush side, continuously).
    let exporter = Arc::new(Mutex::new(agents.remove(0)));
    let mixed = mixed_batch();
    let flush = || {
        let mut e = exporter.lock().unwrap();
        for _ in 0..16 {
            e.record(&mixed);
        }
        16 * mixed.len() as u64
    };
    let latencies = compare(
        "export_batch",
        "events",
        [none, load, spinning],
        addr,
        o,
        flush,
    );
    report_latency("  scrape latency while exporting", &latencies, seconds);

    // (c) Scrapers alone, nothing changing (bodies served from the cache).
    let (_, latencies) = phase(addr, load, seconds, || {
        std::thread::sleep(Duration::from_millis(10));
        0
    });
    report_latency("  scrape latency, idle agents", &latencies, seconds);
}

fn main() {
    let o = options();
    if o.absorb {
        absorb(o.seconds);
    }
    if o.scrape {
        scrape(&o);
    }
}
