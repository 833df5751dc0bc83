//! The Prometheus endpoint under abuse, measured (docs/testing.md, "HTTP under
//! abuse").
//!
//! ```text
//! cargo run --release -p nixl-telemetry-bench --bin prometheus-abuse -- measure [--scrapes N] [--interval-ms I] [--pause-ms P] [--agents A] [--no-nice]
//! prometheus-abuse serve [--request-timeout-ms T] [--write-timeout-ms T] [--linger-ms T] [--max-connections N] [--agents A] [--publish-ms P]
//! ```
//!
//! `serve` runs an endpoint (a real `PrometheusExporter` per agent on one
//! loopback port, 256 series names each, the server's default limits unless
//! given), prints `listening <addr> <plain body bytes>` and serves until its
//! standard input closes. `measure` starts `serve` as a child process (so
//! what it measures is that process alone: `/proc/<pid>/status` `VmRSS`,
//! `/proc/<pid>/fd`, its CPU time), then times well-formed scrapes (the head
//! a real Prometheus 2.42.0 sends, each on a new connection, one every
//! `--interval-ms` (20), the answer checked: 200, gzip, every agent's
//! series), `--scrapes` (300) per phase: under each abuse of `abuse.rs`
//! alone and under all of them at once, each abuse phase preceded by a quiet
//! phase (the quiet reference pools them all, so it is sampled across the
//! run as the machine's load drifts). It reports the scrapes'
//! p50/p99, the child's RSS and descriptors before, during (peak) and after
//! each abuse, and exits non-zero if a scrape fails, an abuser got an answer
//! it must not get, the p99 under an abuse exceeds twice the quiet p99, the
//! RSS peak exceeds the stated bound, or the descriptors do not return to
//! their baseline after the abusers leave.

#![forbid(unsafe_code)]

mod abuse;

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use abuse::{percentile, Abuse, Intensity, Kind, ServeOptions, Server};
use nixl_telemetry_abi::{Category, Event};
use nixl_telemetry_prometheus::{Format, PrometheusExporter, ServerLimits, Settings};

/// RSS growth allowed during abuse, KiB: the server holds at most
/// `max_connections` (256) request buffers of at most `max_request_bytes`
/// (8 KiB; at most 16 KiB of capacity with the vector's growth: 4 MiB), plus
/// the allocator's slack and the one-time rendering of the plain body the
/// vanishing clients ask for; 16 MiB bounds all of it with room.
const RSS_BOUND_KIB: u64 = 16 * 1024;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("serve") => serve(&args[1..]),
        Some("measure") => measure(&args[1..]),
        _ => Err(
            "usage: prometheus-abuse serve [options] | measure [options] (see the source's header)"
                .into(),
        ),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("prometheus-abuse: {e}");
            ExitCode::from(2)
        }
    }
}

/// The value of `--name=V` or `--name V` in `args`, parsed.
fn flag<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> Result<T, String> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = if let Some(v) = a.strip_prefix(&format!("--{name}=")) {
            Some(v.to_owned())
        } else if a == &format!("--{name}") {
            it.next().cloned()
        } else {
            None
        };
        if let Some(v) = value {
            return v
                .parse()
                .map_err(|_| format!("--{name}: {v:?} is not a valid value"));
        }
    }
    Ok(default)
}

fn serve(args: &[String]) -> Result<bool, String> {
    let defaults = ServerLimits::default();
    let ms = |name: &str, d: Duration| -> Result<Duration, String> {
        flag(args, name, d.as_millis() as u64).map(Duration::from_millis)
    };
    let limits = ServerLimits {
        max_connections: flag(args, "max-connections", defaults.max_connections)?,
        request_timeout: ms("request-timeout-ms", defaults.request_timeout)?,
        write_timeout: ms("write-timeout-ms", defaults.write_timeout)?,
        linger_timeout: ms("linger-ms", defaults.linger_timeout)?,
        ..defaults
    };
    let agents: usize = flag(args, "agents", 64)?;
    let publish_ms: u64 = flag(args, "publish-ms", 0)?;
    let mut settings = Settings::new(([127, 0, 0, 1], 0).into());
    settings.limits = limits;
    let mut exporters = Vec::new();
    for a in 0..agents.max(1) {
        let mut e = PrometheusExporter::with_settings(&format!("abuse-{a}"), &settings)
            .map_err(|e| format!("cannot open the endpoint: {e}"))?;
        settings.listen = e.local_addr();
        let events: Vec<Event> = (0..256u64)
            .map(|n| {
                Event::new(
                    1 + n,
                    Category::PERFORMANCE,
                    &format!("abuse_series_{n}"),
                    n * 37,
                )
            })
            .collect();
        e.record(&events);
        exporters.push(e);
    }
    let body = exporters[0].render(Format::Text).len();
    println!("listening {} {body}", settings.listen);
    // Until the parent closes our standard input.
    let done = Arc::new(AtomicBool::new(false));
    {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            done.store(true, Ordering::Relaxed);
        });
    }
    let mut n = 0u64;
    while !done.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(if publish_ms > 0 {
            publish_ms
        } else {
            100
        }));
        if publish_ms > 0 {
            n += 1;
            exporters[0].record(&[Event::new(n, Category::PERFORMANCE, "abuse_series_0", n)]);
        }
    }
    Ok(true)
}

/// Scrape latencies and the child's resources over one phase.
struct Phase {
    name: String,
    scrapes: Vec<Duration>,
    failures: Vec<String>,
    rss_before: u64,
    rss_peak: u64,
    rss_after: u64,
    fds_before: usize,
    fds_peak: usize,
    fds_after: usize,
    cpu_seconds: f64,
    load: f64,
    tally: abuse::Tally,
}

impl Phase {
    fn p(&self, q: f64) -> Duration {
        let mut s = self.scrapes.clone();
        s.sort();
        percentile(&s, q)
    }
}

/// Samples the child's RSS and descriptors every 20 ms while it runs.
struct Sampler {
    stop: Arc<AtomicBool>,
    rss_peak: Arc<AtomicU64>,
    fds_peak: Arc<AtomicUsize>,
    thread: std::thread::JoinHandle<()>,
}

impl Sampler {
    fn start(pid: u32) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let rss_peak = Arc::new(AtomicU64::new(0));
        let fds_peak = Arc::new(AtomicUsize::new(0));
        let (s, r, f) = (
            Arc::clone(&stop),
            Arc::clone(&rss_peak),
            Arc::clone(&fds_peak),
        );
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let status =
                    std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
                let rss = status
                    .lines()
                    .find_map(|l| l.strip_prefix("VmRSS:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                    .unwrap_or(0);
                r.fetch_max(rss, Ordering::Relaxed);
                let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
                f.fetch_max(fds, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Sampler {
            stop,
            rss_peak,
            fds_peak,
            thread,
        }
    }

    fn stop(self) -> (u64, usize) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
        (
            self.rss_peak.load(Ordering::Relaxed),
            self.fds_peak.load(Ordering::Relaxed),
        )
    }
}

#[allow(clippy::too_many_arguments)]
fn run_phase(
    server: &Server,
    name: &str,
    kinds: &[Kind],
    scrapes: usize,
    interval: Duration,
    intensity: Intensity,
    settle: Duration,
    fds_baseline: usize,
) -> Phase {
    let (rss_before, fds_before) = (server.rss_kib(), server.fds());
    let cpu_before = server.cpu_seconds();
    let sampler = Sampler::start(server.pid);
    let abuse = (!kinds.is_empty()).then(|| Abuse::start(kinds, server.addr, intensity));
    if abuse.is_some() {
        // Let the abusers build up (1 000 connections, 200 slow ones).
        std::thread::sleep(Duration::from_secs(2));
    }
    let mut times = Vec::with_capacity(scrapes);
    let mut failures = Vec::new();
    let start = std::time::Instant::now();
    for i in 0..scrapes {
        // One scrape per interval, so the scrapes sample the whole phase.
        let at = start + interval * i as u32;
        std::thread::sleep(at.saturating_duration_since(std::time::Instant::now()));
        match abuse::scrape(server.addr) {
            Ok(t) => times.push(t),
            Err(e) => failures.push(e),
        }
    }
    let load = abuse::load_average();
    let tally = abuse.map(Abuse::stop).unwrap_or_default();
    let fds_after = server.wait_for_fds(fds_baseline, settle);
    let (rss_peak, fds_peak) = sampler.stop();
    Phase {
        name: name.to_owned(),
        scrapes: times,
        failures,
        rss_before,
        rss_peak,
        rss_after: server.rss_kib(),
        fds_before,
        fds_peak,
        fds_after,
        cpu_seconds: server.cpu_seconds() - cpu_before,
        load,
        tally,
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn measure(args: &[String]) -> Result<bool, String> {
    let scrapes: usize = flag(args, "scrapes", 300)?;
    let interval = Duration::from_millis(flag(args, "interval-ms", 20)?);
    let intensity = Intensity {
        pause: Duration::from_millis(flag(args, "pause-ms", 10)?),
        nice: !args.iter().any(|a| a == "--no-nice"),
        ..Intensity::default()
    };
    let limits = ServerLimits::default();
    let options = ServeOptions {
        request_timeout_ms: limits.request_timeout.as_millis() as u64,
        write_timeout_ms: limits.write_timeout.as_millis() as u64,
        linger_ms: limits.linger_timeout.as_millis() as u64,
        max_connections: limits.max_connections,
        agents: flag(args, "agents", 64)?,
    };
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let server = Server::start(&exe, &options)?;
    println!(
        "endpoint {} (pid {}), plain body {} bytes, limits {limits:?}",
        server.addr, server.pid, server.body_bytes
    );
    println!(
        "{scrapes} scrapes per phase, one every {} ms; load average at start {:.1}",
        interval.as_millis(),
        abuse::load_average()
    );
    println!(
        "abuse: {} idle, {} slow-loris (1 byte/s), {} B request lines, {} headers, {} ms between repeats, abusers at nice {}",
        intensity.idle,
        intensity.slow_loris,
        intensity.line_bytes,
        intensity.headers,
        intensity.pause.as_millis(),
        if intensity.nice { 19 } else { 0 }
    );
    for _ in 0..20 {
        abuse::scrape(server.addr)?;
    }
    // The warm-up connections close once the server sees their end.
    let fds_baseline = server.settled_fds();
    let rss_baseline = server.rss_kib();
    let settle = limits.request_timeout + limits.linger_timeout + limits.write_timeout;
    // A quiet phase before each abuse phase and one at the end: the quiet
    // reference is sampled across the whole run, as the machine's load drifts.
    let mut phases = Vec::new();
    let mut abuses: Vec<(String, Vec<Kind>)> = Kind::ALL
        .iter()
        .map(|&k| (k.name().to_owned(), vec![k]))
        .collect();
    abuses.push(("all at once".to_owned(), Kind::ALL.to_vec()));
    for (name, kinds) in &abuses {
        for (phase, kinds) in [("quiet", &[][..]), (name.as_str(), &kinds[..])] {
            phases.push(run_phase(
                &server,
                phase,
                kinds,
                scrapes,
                interval,
                intensity,
                settle,
                fds_baseline,
            ));
        }
    }
    phases.push(run_phase(
        &server,
        "quiet",
        &[],
        scrapes,
        interval,
        intensity,
        settle,
        fds_baseline,
    ));

    let mut quiet: Vec<Duration> = phases
        .iter()
        .filter(|p| p.name == "quiet")
        .flat_map(|p| p.scrapes.iter().copied())
        .collect();
    quiet.sort();
    let quiet_p50 = percentile(&quiet, 50.0);
    let quiet_p99 = percentile(&quiet, 99.0);
    let mut ok = true;
    println!(
        "baseline: RSS {rss_baseline} KiB, {fds_baseline} fds; RSS bound: baseline + {RSS_BOUND_KIB} KiB"
    );
    println!(
        "quiet (all {} quiet scrapes): p50 {:.2} ms, p99 {:.2} ms",
        quiet.len(),
        ms(quiet_p50),
        ms(quiet_p99)
    );
    println!(
        "| phase | scrapes ok | p50 ms | p99 ms | p99 / quiet p99 | server CPU s | load avg | RSS KiB before / peak / after | fds before / peak / after | abuser connections | answered as expected | of which 431 lost to a reset | unexpected |"
    );
    println!(
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: |"
    );
    for p in &phases {
        let ratio = p.p(99.0).as_secs_f64() / quiet_p99.as_secs_f64();
        println!(
            "| {} | {} of {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1} | {} / {} / {} | {} / {} / {} | {} | {} | {} | {} |",
            p.name,
            p.scrapes.len(),
            p.scrapes.len() + p.failures.len(),
            ms(p.p(50.0)),
            ms(p.p(99.0)),
            ratio,
            p.cpu_seconds,
            p.load,
            p.rss_before,
            p.rss_peak,
            p.rss_after,
            p.fds_before,
            p.fds_peak,
            p.fds_after,
            p.tally.connections,
            p.tally.expected,
            p.tally.shed,
            p.tally.unexpected_count,
        );
        let mut fail = |why: String| {
            ok = false;
            println!("FAIL {}: {why}", p.name);
        };
        if !p.failures.is_empty() {
            fail(format!(
                "{} scrapes failed, first: {}",
                p.failures.len(),
                p.failures[0]
            ));
        }
        if p.tally.unexpected_count > 0 {
            fail(format!(
                "abusers got unexpected answers: {:?}",
                p.tally.unexpected
            ));
        }
        if p.name != "quiet" && ratio > 2.0 {
            fail(format!(
                "scrape p99 {:.2} ms > 2 x quiet p99 {:.2} ms",
                ms(p.p(99.0)),
                ms(quiet_p99)
            ));
        }
        if p.rss_peak > rss_baseline + RSS_BOUND_KIB {
            fail(format!(
                "RSS peak {} KiB > baseline {rss_baseline} + {RSS_BOUND_KIB} KiB",
                p.rss_peak
            ));
        }
        if p.fds_after > fds_baseline {
            fail(format!(
                "{} fds after the abusers left, baseline {fds_baseline} (waited up to {settle:?})",
                p.fds_after
            ));
        }
    }
    println!("{}", if ok { "PASS" } else { "FAIL" });
    Ok(ok)
}
