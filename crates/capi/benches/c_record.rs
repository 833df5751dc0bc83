//! The C API's record cost against the Rust fast path and the reference
//! design in C, in one run:
//!
//! ```sh
//! cargo bench -p nixl-telemetry-capi --bench c_record            # 2001 rounds, about a minute
//! cargo bench -p nixl-telemetry-capi --bench c_record -- --quick # 201 rounds
//! ```
//!
//! It compiles `bench/record_driver.c` (`cc -O2`) against the
//! `libnixl_telemetry` cargo built for the bench, starts it, and interleaves
//! rounds: each round times one repeat of the Rust handle record here (1 and
//! 2 threads), then asks the driver for one repeat of the C handle record (1
//! and 2 threads) and of a `pthread_mutex`-protected staging vector (2
//! threads), in a rotating order, so that the machine's load weighs on every
//! row alike. Every repeat records 8,192 events per thread into queues of
//! 16,384 that are flushed (nop exporter) between repeats. The two threads of
//! a 2-thread repeat start together (a barrier, then a spin); the repeat
//! counts only if their loops overlapped for at least 90 % of the longer one
//! (on a loaded machine the scheduler may run them one after the other, and a
//! mutex nobody contends is cheap). Rows give the median and the minimum over
//! the rounds that count; the ratios are of medians.
//! Targets: C handle record ≤ 1.3 × the Rust fast path, and ≤ 0.2 × the mutex
//! vector with two threads.

#[path = "../tests/it/support/mod.rs"]
mod support;

use std::hint::black_box;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use nixl_telemetry::{Category, EventHandle, ExporterChoice, Telemetry};

const OPS: u64 = 8192;
const STAGING_EVENTS: usize = 16384;
const WARM_UP_ROUNDS: usize = 5;
/// A 2-thread repeat counts when the loops overlapped this much.
const MIN_OVERLAP: f64 = 0.9;

fn rust_body(handle: &EventHandle, ops: u64) -> Duration {
    let start = Instant::now();
    for i in 0..ops {
        black_box(handle).record(black_box(i));
    }
    start.elapsed()
}

/// Two persistent Rust recording threads (each keeps its staging queue).
struct RustPair {
    start: Arc<Barrier>,
    done: Arc<Barrier>,
    stop: Arc<AtomicBool>,
    arrived: Arc<AtomicUsize>,
    /// Begin and end of each thread's loop, ns since `base`.
    spans: Arc<[AtomicU64; 4]>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl RustPair {
    fn new(handle: &EventHandle) -> RustPair {
        let start = Arc::new(Barrier::new(3));
        let done = Arc::new(Barrier::new(3));
        let stop = Arc::new(AtomicBool::new(false));
        let arrived = Arc::new(AtomicUsize::new(0));
        let spans = Arc::new([0; 4].map(AtomicU64::new));
        let base = Instant::now();
        let threads = (0..2)
            .map(|id| {
                let (start, done, stop, arrived, spans) = (
                    Arc::clone(&start),
                    Arc::clone(&done),
                    Arc::clone(&stop),
                    Arc::clone(&arrived),
                    Arc::clone(&spans),
                );
                let handle = handle.clone();
                std::thread::spawn(move || loop {
                    start.wait();
                    if stop.load(Ordering::Acquire) {
                        return;
                    }
                    arrived.fetch_add(1, Ordering::AcqRel);
                    while arrived.load(Ordering::Acquire) < 2 {
                        std::hint::spin_loop();
                    }
                    let begin = base.elapsed().as_nanos() as u64;
                    rust_body(&handle, OPS);
                    let end = base.elapsed().as_nanos() as u64;
                    spans[2 * id].store(begin, Ordering::Release);
                    spans[2 * id + 1].store(end, Ordering::Release);
                    done.wait();
                })
            })
            .collect();
        RustPair {
            start,
            done,
            stop,
            arrived,
            spans,
            threads,
        }
    }

    /// One repeat: ns per op of the slower thread, and the overlap.
    fn repeat(&self) -> (f64, f64) {
        self.arrived.store(0, Ordering::Release);
        self.start.wait();
        self.done.wait();
        let s: Vec<u64> = self
            .spans
            .iter()
            .map(|a| a.load(Ordering::Acquire))
            .collect();
        overlap_of(s[0], s[1], s[2], s[3], OPS)
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Release);
        self.start.wait();
        for t in self.threads {
            t.join().expect("a recording thread ends");
        }
    }
}

/// ns per op of the slower of two loops, and how much of it they overlapped.
fn overlap_of(begin0: u64, end0: u64, begin1: u64, end1: u64, ops: u64) -> (f64, f64) {
    let slower = (end0 - begin0).max(end1 - begin1).max(1);
    let shared = end0.min(end1).saturating_sub(begin0.max(begin1));
    (slower as f64 / ops as f64, shared as f64 / slower as f64)
}

struct Driver {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Driver {
    fn ask(&mut self, command: &str) -> String {
        writeln!(self.stdin, "{command}").expect("the driver reads its commands");
        self.stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .expect("the driver answers");
        assert!(
            !line.is_empty() && !line.starts_with("error"),
            "driver: {command}: {line:?}"
        );
        line.trim().to_owned()
    }

    /// One repeat: ns per op and overlap.
    fn repeat(&mut self, command: &str) -> (f64, f64) {
        let answer = self.ask(&format!("{command} {OPS}"));
        let mut fields = answer.split(' ').map(|f| f.parse::<f64>().ok());
        match (fields.next().flatten(), fields.next().flatten()) {
            (Some(ns), Some(overlap)) => (ns, overlap),
            _ => panic!("the driver answered {answer:?} to {command}"),
        }
    }
}

/// The repeats of one row: those whose threads overlapped enough, and all.
#[derive(Default)]
struct Samples(Vec<f64>, Vec<f64>);

impl Samples {
    /// Adds a repeat; it counts if its threads overlapped enough.
    fn push(&mut self, (ns, overlap): (f64, f64)) {
        self.1.push(ns);
        if overlap >= MIN_OVERLAP {
            self.0.push(ns);
        }
    }
    /// The repeats the row uses: the overlapped ones, or all when none was.
    fn used(&self) -> &[f64] {
        if self.0.is_empty() {
            &self.1
        } else {
            &self.0
        }
    }
    fn note(&self) -> String {
        if self.0.is_empty() {
            format!(
                "0/{} overlapped: the threads never ran at once, all repeats shown",
                self.1.len()
            )
        } else {
            format!("{}/{} overlapped", self.0.len(), self.1.len())
        }
    }
    fn median(&self) -> f64 {
        let mut v = self.used().to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }
    fn min(&self) -> f64 {
        self.used().iter().copied().fold(f64::INFINITY, f64::min)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut rounds = 2001;
    let mut i = 1;
    while i < args.len() {
        match args[i].as_str() {
            "--quick" => rounds = 201,
            "--rounds" => {
                i += 1;
                rounds = args
                    .get(i)
                    .and_then(|r| r.parse().ok())
                    .filter(|&r| r > 0)
                    .expect("--rounds takes a positive number");
            }
            // cargo bench passes --bench; nothing else is accepted.
            "--bench" => {}
            other => panic!("unknown argument {other:?}; accepted: --quick, --rounds N"),
        }
        i += 1;
    }

    let dir = tempfile::tempdir().unwrap();
    let driver_exe = dir.path().join("record_driver");
    support::build_c(
        &[std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/record_driver.c")],
        &driver_exe,
        &["-O2", "-pthread"],
    );
    let mut child = Command::new(&driver_exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the driver starts");
    let stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut driver = Driver {
        child,
        stdin,
        stdout,
    };

    let telemetry = Telemetry::builder("bench-rust")
        .buffer_size(STAGING_EVENTS)
        .and_then(|b| b.run_interval(Duration::from_secs(1)))
        .expect("valid settings")
        .exporter(ExporterChoice::Nop)
        .build()
        .expect("telemetry with the nop exporter");
    let handle = telemetry.handle(Category::PERFORMANCE, "agent_xfer_time");
    let pair = RustPair::new(&handle);

    let names = ["rust1", "c1", "rust2", "c2", "mutex2"];
    let mut samples: Vec<Samples> = names.iter().map(|_| Samples::default()).collect();
    for round in 0..WARM_UP_ROUNDS + rounds {
        for k in 0..names.len() {
            // Rotate the order so no row always follows the same one.
            let which = (k + round) % names.len();
            let repeat = match names[which] {
                "rust1" => {
                    let ns = rust_body(&handle, OPS).as_nanos() as f64 / OPS as f64;
                    telemetry.flush();
                    (ns, 1.0)
                }
                "rust2" => {
                    let repeat = pair.repeat();
                    telemetry.flush();
                    repeat
                }
                command => driver.repeat(command),
            };
            if round >= WARM_UP_ROUNDS {
                samples[which].push(repeat);
            }
        }
    }
    pair.stop();
    telemetry.flush();
    let rust_stats = telemetry.stats();
    let c_stats = driver.ask("stats");
    driver.ask_quit();

    let row = |label: &str, threads: u32, s: &Samples, note: &str| {
        let note = if threads == 2 {
            format!("{}; {note}", s.note())
        } else {
            note.to_owned()
        };
        println!(
            "{label:<55} {threads:>2} {:>9.2} {:>9.2} ns/op   {note}",
            s.median(),
            s.min()
        );
    };
    println!("c_record: {rounds} interleaved rounds of {OPS} records per thread (median, best)");
    row(
        "rust: fast-path handle record (EventHandle::record)",
        1,
        &samples[0],
        "",
    );
    row(
        "c: nixl_telemetry_handle_record",
        1,
        &samples[1],
        "libnixl_telemetry.so, cc -O2",
    );
    row(
        "rust: fast-path handle record (EventHandle::record)",
        2,
        &samples[2],
        "",
    );
    row("c: nixl_telemetry_handle_record", 2, &samples[3], "");
    row(
        "c reference: pthread_mutex-protected staging vector",
        2,
        &samples[4],
        "same cheap clock, read outside the lock",
    );
    let c_vs_rust_1t = samples[1].median() / samples[0].median();
    let c_vs_rust_2t = samples[3].median() / samples[2].median();
    let c_vs_mutex_2t = samples[3].median() / samples[4].median();
    println!(
        "  c_handle_vs_rust_1t {c_vs_rust_1t:.3} (target <= 1.3)   c_handle_vs_rust_2t {c_vs_rust_2t:.3}   c_handle_vs_mutex_2t {c_vs_mutex_2t:.3} (target <= 0.2)"
    );
    println!(
        "  books: rust recorded={} delivered={} dropped={}; c recorded/delivered/dropped (incl. mutex vector) = {c_stats}",
        rust_stats.recorded,
        rust_stats.delivered,
        rust_stats.dropped.total()
    );
}

impl Driver {
    fn ask_quit(mut self) {
        writeln!(self.stdin, "quit").ok();
        drop(self.stdin);
        let status = self.child.wait().expect("the driver exits");
        assert!(status.success(), "the driver exited with {status}");
    }
}
