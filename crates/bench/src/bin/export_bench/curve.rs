//! `export_bench curve`: the sidecar's CPU per event as the number of rings
//! grows, at one fixed total event rate, beside the floor of reading the
//! same rings on the same schedule with nothing else done.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use nixl_telemetry::ring::{layout, ReadMode, RingReader, RingWriter};
use nixl_telemetry::{Category, Event};
use nixl_telemetry_bench::harness::{self, load_average, MillisecondTicker};
use nixl_telemetry_export::schedule::{next_delay, remembered_rate, RingLoad};

use super::{Options, Sidecar};

/// What reads the rings in one measurement.
#[derive(Clone, Copy, PartialEq)]
enum Consumer {
    /// `nixl-telemetry export` into this exporter.
    Sidecar(&'static str),
    /// A thread of this program on the sidecar's schedule, copying the
    /// waiting slots out and dropping them.
    Floor,
}

impl Consumer {
    fn name(self) -> &'static str {
        match self {
            Consumer::Sidecar(exporter) => exporter,
            Consumer::Floor => "floor",
        }
    }
}

const CONSUMERS: [Consumer; 3] = [
    Consumer::Sidecar("prometheus"),
    Consumer::Sidecar("nop"),
    Consumer::Floor,
];

/// The CPU time a thread has run so far, in seconds, from its
/// `/proc/.../schedstat` (nanoseconds, unlike `stat`'s 1/100 s ticks).
fn thread_run_seconds(schedstat: &Path) -> f64 {
    std::fs::read_to_string(schedstat)
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |ns| ns / 1e9)
}

/// The CPU time of every live thread of process `pid`, in seconds (schedstat).
fn process_run_seconds(pid: u32) -> f64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0.0;
    };
    tasks
        .filter_map(Result::ok)
        .map(|task| thread_run_seconds(&task.path().join("schedstat")))
        .sum()
}

/// The id of the calling thread, for its `/proc/self/task/<tid>` files.
fn current_tid() -> i32 {
    rustix::thread::gettid().as_raw_nonzero().get()
}

/// One writer thread: `rate` events/s spread evenly over `rings` rings, in
/// batches every ms (the rings served in turn when there are more rings
/// than events in a ms).
struct SpreadWriter {
    written: Arc<AtomicU64>,
    dropped: Arc<AtomicU64>,
    tid: Arc<AtomicI32>,
    handle: std::thread::JoinHandle<()>,
}

fn spawn_spread_writer(
    dir: &Path,
    rings: usize,
    capacity: usize,
    rate: u64,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<SpreadWriter> {
    let mut writers = (0..rings)
        .map(|i| {
            RingWriter::create_with_layout(dir, &format!("agent-{i:04}"), capacity, &layout::V4)
        })
        .collect::<Result<Vec<_>, _>>()
        .context("creating the rings")?;
    let written = Arc::new(AtomicU64::new(0));
    let dropped = Arc::new(AtomicU64::new(0));
    let tid = Arc::new(AtomicI32::new(0));
    let (w, d, t) = (written.clone(), dropped.clone(), tid.clone());
    let per_ms = rate.div_ceil(1000) as usize;
    let handle = std::thread::Builder::new()
        .name("spread-writer".to_owned())
        .spawn(move || {
            t.store(current_tid(), Ordering::Relaxed);
            let kinds = [
                Event::new(0, Category::TRANSFER, "agent_tx_bytes", 4096),
                Event::new(0, Category::TRANSFER, "agent_tx_requests_num", 1),
                Event::new(0, Category::PERFORMANCE, "agent_xfer_time", 120),
                Event::new(0, Category::PERFORMANCE, "agent_xfer_post_time", 7),
            ];
            let batch: Vec<Event> = (0..per_ms.max(1)).map(|i| kinds[i % kinds.len()]).collect();
            let (base, extra) = (per_ms / rings, per_ms % rings);
            let mut cursor = 0usize;
            let mut ticker = MillisecondTicker::start();
            while !stop.load(Ordering::Relaxed) {
                let mut total = 0u64;
                if base > 0 {
                    for ring in writers.iter_mut() {
                        total += ring.push(&batch[..base]).written as u64;
                    }
                }
                for k in 0..extra {
                    let ring = &mut writers[(cursor + k) % rings];
                    total += ring.push(&batch[..1]).written as u64;
                }
                cursor = (cursor + extra) % rings;
                w.fetch_add(total, Ordering::Relaxed);
                d.store(
                    writers.iter().map(RingWriter::dropped_ring_full).sum(),
                    Ordering::Relaxed,
                );
                ticker.wait();
            }
        })?;
    Ok(SpreadWriter {
        written,
        dropped,
        tid,
        handle,
    })
}

/// Slots the floor reads at once (the sidecar's default batch).
const BATCH: usize = 4096;

/// The floor reader: every ring read on the sidecar's schedule, the waiting
/// slots' bytes copied out and dropped.
struct FloorReader {
    tid: Arc<AtomicI32>,
    handle: std::thread::JoinHandle<anyhow::Result<u64>>,
}

fn spawn_floor(
    dir: &Path,
    rings: usize,
    interval: Duration,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<FloorReader> {
    let mut readers = (0..rings)
        .map(|i| RingReader::open(&dir.join(format!("agent-{i:04}")), ReadMode::Consume))
        .collect::<Result<Vec<_>, _>>()
        .context("opening the rings for the floor")?;
    let tid = Arc::new(AtomicI32::new(0));
    let t = tid.clone();
    let handle = std::thread::Builder::new()
        .name("floor-reader".to_owned())
        .spawn(move || {
            t.store(current_tid(), Ordering::Relaxed);
            let mut rates = vec![0.0f64; readers.len()];
            let mut loads = Vec::with_capacity(readers.len());
            let mut slots: Vec<u8> = Vec::new();
            let mut read = 0u64;
            // As the sidecar, no rate from the first pass (nothing to divide by).
            let mut last: Option<Instant> = None;
            while !stop.load(Ordering::Relaxed) {
                let now = Instant::now();
                let elapsed = last.map(|last| now.duration_since(last));
                last = Some(now);
                loads.clear();
                for (reader, rate) in readers.iter_mut().zip(rates.iter_mut()) {
                    // What the sidecar does with a ring in a pass, less the
                    // conversion and the export: the waiting slots' bytes
                    // copied out, the read position advanced.
                    let pending = reader.pending()?;
                    let mut left = pending;
                    while left > 0 {
                        let n = reader.peek_slot_bytes(&mut slots, (left as usize).min(BATCH))?;
                        if n == 0 {
                            break;
                        }
                        reader.commit(n)?;
                        read += n as u64;
                        left -= n as u64;
                    }
                    if let Some(elapsed) = elapsed.filter(|e| !e.is_zero()) {
                        *rate =
                            remembered_rate(*rate, pending as f64 / elapsed.as_secs_f64(), elapsed);
                    }
                    loads.push(RingLoad {
                        pending,
                        room: reader.capacity() - 1,
                        rate: *rate,
                    });
                }
                let delay = next_delay(loads.iter().copied(), interval);
                if !delay.is_zero() {
                    std::thread::sleep(delay);
                }
            }
            Ok(read)
        })?;
    Ok(FloorReader { tid, handle })
}

/// One measured point.
struct Point {
    rings: usize,
    consumer: &'static str,
    events: u64,
    seconds: f64,
    dropped: u64,
    /// The consumer's CPU seconds in the window (schedstat, ns resolution).
    cpu: f64,
    /// The same from `/proc/<pid>/stat` utime + stime (1/100 s ticks);
    /// the floor's own thread has no process of its own: NaN.
    cpu_ticks: f64,
    writer_cpu: f64,
}

impl Point {
    fn per_million(&self, cpu: f64) -> f64 {
        cpu / (self.events as f64 / 1e6).max(1e-9)
    }
}

fn measure(o: &Options, bin: &Path, rings: usize, consumer: Consumer) -> anyhow::Result<Point> {
    let tmp = tempfile::tempdir()?;
    let stop = Arc::new(AtomicBool::new(false));
    let writer = spawn_spread_writer(tmp.path(), rings, o.capacity, o.rate, stop.clone())?;
    let reader_stop = Arc::new(AtomicBool::new(false));
    let (sidecar, floor) = match consumer {
        Consumer::Sidecar(exporter) => {
            (Some(Sidecar::start(bin, tmp.path(), exporter, &[])?), None)
        }
        Consumer::Floor => (
            None,
            Some(spawn_floor(
                tmp.path(),
                rings,
                Duration::from_millis(100),
                reader_stop.clone(),
            )?),
        ),
    };
    // The rings filled before the consumer started: measure from when it
    // has caught up.
    std::thread::sleep(Duration::from_millis(1500));
    let consumer_cpu = || match (&sidecar, &floor) {
        (Some(s), _) => (process_run_seconds(s.child.id()), s.cpu_seconds()),
        (None, Some(f)) => (
            thread_run_seconds(Path::new(&format!(
                "/proc/self/task/{}/schedstat",
                f.tid.load(Ordering::Relaxed)
            ))),
            f64::NAN,
        ),
        (None, None) => unreachable!("a consumer runs"),
    };
    let writer_schedstat = format!(
        "/proc/self/task/{}/schedstat",
        writer.tid.load(Ordering::Relaxed)
    );
    let (cpu0, ticks0) = consumer_cpu();
    let writer0 = thread_run_seconds(Path::new(&writer_schedstat));
    let written0 = writer.written.load(Ordering::Relaxed);
    let dropped0 = writer.dropped.load(Ordering::Relaxed);
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(o.seconds));
    let (cpu1, ticks1) = consumer_cpu();
    let writer1 = thread_run_seconds(Path::new(&writer_schedstat));
    let seconds = t0.elapsed().as_secs_f64();
    let point = Point {
        rings,
        consumer: consumer.name(),
        events: writer.written.load(Ordering::Relaxed) - written0,
        seconds,
        dropped: writer.dropped.load(Ordering::Relaxed) - dropped0,
        cpu: cpu1 - cpu0,
        cpu_ticks: ticks1 - ticks0,
        writer_cpu: writer1 - writer0,
    };
    stop.store(true, Ordering::Relaxed);
    writer.handle.join().ok();
    std::thread::sleep(Duration::from_millis(300));
    if let Some(sidecar) = sidecar {
        sidecar.stop()?;
    }
    if let Some(floor) = floor {
        reader_stop.store(true, Ordering::Relaxed);
        floor
            .handle
            .join()
            .map_err(|_| anyhow::anyhow!("the floor reader panicked"))??;
    }
    Ok(point)
}

/// The median of `values`; NaN when empty.
fn median(mut values: Vec<f64>) -> f64 {
    harness::median(&mut values)
}

/// Runs the curve: every ring count with every consumer, `o.repeat` times,
/// the order of the ring counts rotated each round.
pub fn run(o: &Options, bin: &Path) -> anyhow::Result<()> {
    println!(
        "curve: {} events/s in all, spread over {:?} v4 rings of {} slots (one writer thread); \
         {} s windows, {} rounds; consumers: sidecar into prometheus, sidecar into nop, floor; \
         load average {}",
        o.rate,
        o.rings,
        o.capacity,
        o.seconds,
        o.repeat,
        load_average()
    );
    let mut points = Vec::new();
    for round in 0..o.repeat {
        for i in 0..o.rings.len() {
            let rings = o.rings[(i + round) % o.rings.len()];
            for consumer in CONSUMERS {
                let p = measure(o, bin, rings, consumer)?;
                println!(
                    "  round {} rings {:>5} {:<10} {:>9.0} events/s  cpu {:.4} s (stat {} s) = {:.4} s per M events  \
                     writer {:.4} s per M  ring-full drops {}  load {}",
                    round + 1,
                    p.rings,
                    p.consumer,
                    p.events as f64 / p.seconds,
                    p.cpu,
                    if p.cpu_ticks.is_nan() {
                        "-".to_owned()
                    } else {
                        format!("{:.2}", p.cpu_ticks)
                    },
                    p.per_million(p.cpu),
                    p.per_million(p.writer_cpu),
                    p.dropped,
                    load_average()
                );
                points.push(p);
            }
        }
    }
    println!(
        "median (min .. max) of {} rounds, CPU s per million events:",
        o.repeat
    );
    println!(
        "{:>6} {:>26} {:>26} {:>26} {:>10} {:>10}",
        "rings", "sidecar prometheus", "sidecar nop", "floor", "prom/floor", "drops"
    );
    let mut summary = Vec::new();
    for &rings in &o.rings {
        let mut row = serde_json::Map::new();
        row.insert("rings".to_owned(), rings.into());
        let mut line = format!("{rings:>6}");
        let mut medians = Vec::new();
        for consumer in CONSUMERS {
            let values: Vec<f64> = points
                .iter()
                .filter(|p| p.rings == rings && p.consumer == consumer.name())
                .map(|p| p.per_million(p.cpu))
                .collect();
            let min = values.iter().copied().fold(f64::INFINITY, f64::min);
            let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let m = median(values.clone());
            medians.push(m);
            line += &format!(" {:>10.4} ({:.4}..{:.4})", m, min, max);
            row.insert(
                consumer.name().to_owned(),
                serde_json::json!({"median": m, "min": min, "max": max, "values": values}),
            );
        }
        let drops: u64 = points
            .iter()
            .filter(|p| p.rings == rings)
            .map(|p| p.dropped)
            .sum();
        let writer = median(
            points
                .iter()
                .filter(|p| p.rings == rings)
                .map(|p| p.per_million(p.writer_cpu))
                .collect(),
        );
        row.insert(
            "prometheus_vs_floor".to_owned(),
            (medians[0] / medians[2]).into(),
        );
        row.insert("ring_full_drops".to_owned(), drops.into());
        row.insert("writer_cpu_s_per_million".to_owned(), writer.into());
        println!("{line} {:>10.2} {drops:>10}", medians[0] / medians[2]);
        summary.push(serde_json::Value::Object(row));
    }
    if let Some(path) = &o.json {
        let json = serde_json::json!({
            "rate": o.rate,
            "capacity": o.capacity,
            "seconds": o.seconds,
            "rounds": o.repeat,
            "cores": std::thread::available_parallelism().map_or(0, |n| n.get()),
            "load_average_at_end": load_average(),
            "unit": "CPU seconds per million events (schedstat of every thread of the consumer)",
            "curve": summary,
            "points": points.iter().map(|p| serde_json::json!({
                "rings": p.rings,
                "consumer": p.consumer,
                "events": p.events,
                "seconds": p.seconds,
                "dropped": p.dropped,
                "cpu_s": p.cpu,
                "cpu_s_stat": if p.cpu_ticks.is_nan() { serde_json::Value::Null } else { p.cpu_ticks.into() },
                "cpu_s_per_million": p.per_million(p.cpu),
                "writer_cpu_s_per_million": p.per_million(p.writer_cpu),
            })).collect::<Vec<_>>(),
        });
        std::fs::write(path, serde_json::to_string_pretty(&json)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
