//! Throughput benchmarks: the ring alone (one writer thread, one consuming
//! reader thread) and the whole pipeline (recording threads → staging → flush
//! thread → ring → consuming reader thread), with exact accounting.

use std::hint::black_box;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use nixl_telemetry::ring::layout::{self, HEADER_SIZE, READ_POS_OFFSET, WRITE_POS_OFFSET};
use nixl_telemetry::ring::{ReadMode, RingReader, RingWriter};
use nixl_telemetry::{Category, Event, Telemetry};
use serde_json::json;

use crate::harness::median;
use crate::ops::NAME;
use crate::report::{Row, Unit};

/// How long and how often the throughput benchmarks run.
#[derive(Debug, Clone, Copy)]
pub struct PipePlan {
    /// Events per ring-alone repeat.
    pub ring_events: u64,
    /// Repeats of each throughput measurement.
    pub repeats: usize,
    /// Recording time of one whole-pipeline repeat.
    pub pipeline_time: Duration,
}

/// A row of events per second from per-repeat rates (events/s).
pub fn rate_row(id: &str, label: &str, threads: usize, rates: &[f64], note: &str) -> Row {
    let mut v: Vec<f64> = rates.iter().map(|r| r / 1e6).collect();
    let best = v.iter().copied().fold(f64::MIN, f64::max);
    Row {
        id: id.to_owned(),
        label: label.to_owned(),
        threads,
        unit: Unit::MEventsPerSec,
        median: median(&mut v),
        best,
        repeats: rates.len(),
        note: note.to_owned(),
        extra: Default::default(),
    }
}

fn events(n: usize) -> Vec<Event> {
    (0..n as u64)
        .map(|i| Event::new(1_700_000_000_000_000 + i, Category::PERFORMANCE, NAME, i))
        .collect()
}

/// A minimal consuming reader, the way NIXL's own readers work: map the file,
/// acquire `write_pos`, copy the slots out, release `read_pos`. It isolates the
/// ring and its writer from the cost of [`RingReader`]'s checks.
struct RawConsumer {
    map: memmap2::MmapRaw,
    capacity: u64,
}

impl RawConsumer {
    fn open(path: &Path, capacity: u64) -> Result<RawConsumer> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)?;
        let len = layout::v1_size(capacity).context("ring size overflows")? as usize;
        let map = memmap2::MmapOptions::new().len(len).map_raw(&file)?;
        Ok(RawConsumer { map, capacity })
    }

    fn position(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: callers pass WRITE_POS_OFFSET or READ_POS_OFFSET, 8-aligned
        // u64 positions inside the header, which lies inside the mapping
        // (page-aligned, at least HEADER_SIZE bytes); the producer accesses
        // them atomically too.
        unsafe { &*(self.map.as_mut_ptr().add(offset) as *const AtomicU64) }
    }

    fn read(&mut self, out: &mut Vec<Event>) -> usize {
        let write = self.position(WRITE_POS_OFFSET).load(Ordering::Acquire);
        let read = self.position(READ_POS_OFFSET).load(Ordering::Relaxed);
        let mask = self.capacity - 1;
        if write >= self.capacity || read >= self.capacity {
            return 0;
        }
        let n = (write.wrapping_sub(read) & mask) as usize;
        let first = n.min((self.capacity - read) as usize);
        out.reserve(n);
        // SAFETY: both runs of slots lie inside the mapping (positions checked
        // against the capacity the file was created with); the producer does
        // not write slots in [read, write) until read_pos moves past them;
        // `out` has room for n more events and any bytes are a valid Event.
        unsafe {
            let slots = self.map.as_mut_ptr().add(HEADER_SIZE) as *const Event;
            let dst = out.as_mut_ptr().add(out.len());
            std::ptr::copy_nonoverlapping(slots.add(read as usize), dst, first);
            std::ptr::copy_nonoverlapping(slots, dst.add(first), n - first);
            out.set_len(out.len() + n);
        }
        self.position(READ_POS_OFFSET)
            .store((read + n as u64) & mask, Ordering::Release);
        n
    }
}

/// Which consumer reads the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Consumer {
    /// `nixl_telemetry::ring::RingReader` (the Rust reader's code).
    RingReader,
    /// [`RawConsumer`].
    Raw,
}

/// Waits a little before polling the ring's header again: both positions
/// share one cache line, and a side that polls it in a tight loop steals that
/// line from the other side on every poll. It also yields the CPU: when other
/// processes hold one of the two cores, writer and reader share the other, and
/// a spinning side would burn its whole time slice while the other cannot run.
fn backoff() {
    for _ in 0..32 {
        std::hint::spin_loop();
    }
    std::thread::yield_now();
}

/// One writer thread pushes `total` events in batches of `batch` (retrying what
/// did not fit: the ring's own drop counter then counts the retries, we count
/// deliveries), one thread consumes them. Returns events/s, writer start to
/// reader end.
fn ring_once(
    dir: &Path,
    agent: &str,
    capacity: usize,
    batch: usize,
    total: u64,
    consumer: Consumer,
) -> Result<f64> {
    let mut writer = RingWriter::create(dir, agent, capacity).context("create the ring")?;
    let mut reader = match consumer {
        Consumer::RingReader => Ok(RingReader::open(writer.path(), ReadMode::Consume)
            .context("open the ring to consume")?),
        Consumer::Raw => Err(RawConsumer::open(writer.path(), capacity as u64)?),
    };
    let source = events(batch);
    let go = AtomicBool::new(false);
    let (start, end) = std::thread::scope(|scope| -> Result<(Instant, Instant)> {
        let consumer = scope.spawn(|| -> Result<Instant> {
            let mut out = Vec::with_capacity(capacity);
            let mut got = 0u64;
            while !go.load(Ordering::Acquire) {
                std::hint::spin_loop();
            }
            while got < total {
                let n = match &mut reader {
                    Ok(reader) => reader.read_batch(&mut out, capacity)?,
                    Err(raw) => raw.read(&mut out),
                };
                got += n as u64;
                black_box(out.last());
                out.clear();
                if n == 0 {
                    backoff();
                }
            }
            Ok(Instant::now())
        });
        let start = Instant::now();
        go.store(true, Ordering::Release);
        let mut sent = 0u64;
        while sent < total {
            let len = batch.min((total - sent) as usize);
            let n = writer.push_batch(&source[..len]);
            sent += n as u64;
            if n == 0 {
                backoff();
            }
        }
        let end = consumer.join().expect("reader thread panicked")?;
        Ok((start, end))
    })?;
    Ok(total as f64 / (end - start).as_secs_f64())
}

/// The ring alone, for the default capacity and a large one.
pub fn ring_alone(plan: PipePlan, rows: &mut Vec<Row>) -> Result<()> {
    let dir = tempfile::tempdir().context("temporary ring directory")?;
    let cases = [
        ("ring_alone", 4096, 1024, Consumer::RingReader),
        ("ring_alone_64k", 1 << 16, 4096, Consumer::RingReader),
        ("ring_alone_raw", 4096, 1024, Consumer::Raw),
    ];
    for (id, capacity, batch, consumer) in cases {
        let mut rates = Vec::new();
        // One untimed run first: page faults of a new file.
        for r in 0..=plan.repeats {
            let agent = format!("{id}-{r}");
            let rate = ring_once(
                dir.path(),
                &agent,
                capacity,
                batch,
                plan.ring_events,
                consumer,
            )?;
            if r > 0 {
                rates.push(rate);
            }
        }
        let reader = match consumer {
            Consumer::RingReader => "RingReader",
            Consumer::Raw => "minimal mmap consumer",
        };
        rows.push(rate_row(
            id,
            &format!("ring alone: writer → {reader}, cap {capacity}"),
            1,
            &rates,
            &format!("push_batch of {batch}, reads of up to {capacity}"),
        ));
    }
    Ok(())
}

/// Each side of the ring alone, on one thread (no scheduling in the way): the
/// writer fills an empty ring of 65,536 slots with batches of 4,096 (timed),
/// then `RingReader` consumes it in one `read_batch` (timed). Per-stage CPU
/// cost, which on a loaded 2-core machine says more than wall-clock rates.
pub fn ring_stages(plan: PipePlan, rows: &mut Vec<Row>) -> Result<()> {
    let dir = tempfile::tempdir().context("temporary ring directory")?;
    let capacity = 1usize << 16;
    let mut writer = RingWriter::create(dir.path(), "stages", capacity)?;
    let mut reader = RingReader::open(writer.path(), ReadMode::Consume)?;
    let source = events(4096);
    let mut out = Vec::with_capacity(capacity);
    let (mut writes, mut reads) = (Vec::new(), Vec::new());
    let rounds = plan.repeats * 5;
    for round in 0..=rounds {
        let start = Instant::now();
        let mut written = 0;
        while written < capacity - 1 {
            let len = 4096.min(capacity - 1 - written);
            written += writer.push_batch(&source[..len]);
        }
        let wrote = start.elapsed();
        let start = Instant::now();
        let n = reader.read_batch(&mut out, capacity)?;
        let read = start.elapsed();
        ensure!(n == written, "read {n} of {written} events");
        black_box(out.last());
        out.clear();
        if round > 0 {
            writes.push(written as f64 / wrote.as_secs_f64());
            reads.push(n as f64 / read.as_secs_f64());
        }
    }
    rows.push(rate_row(
        "ring_write_only",
        "ring writer alone: push_batch into empty ring",
        1,
        &writes,
        "65,535 events in batches of 4,096, one thread",
    ));
    rows.push(rate_row(
        "ring_read_only",
        "RingReader alone: consume a full ring",
        1,
        &reads,
        "one read_batch of 65,535 events, one thread",
    ));
    Ok(())
}

/// How long the pipeline's consuming reader sleeps when the ring is empty.
const READER_POLL: Duration = Duration::from_micros(50);
/// A paced recorder sleeps once it is this far ahead of its schedule.
const PACE_SLACK: Duration = Duration::from_micros(200);

/// What one whole-pipeline run measured.
struct PipelineRun {
    delivered_per_s: f64,
    recorded_per_s: f64,
    recorded: u64,
    generated: u64,
    delivered: u64,
    dropped: u64,
    dropped_staging: u64,
    dropped_ring: u64,
    read: u64,
}

/// Recording threads record through a handle as fast as they can (or at `pace`
/// events/s each) for `time`; the flush thread moves staging into the ring; a
/// thread consumes the ring. Then a final flush, a final read, and the books
/// must balance exactly.
fn pipeline_once(
    dir: &Path,
    agent: &str,
    threads: usize,
    time: Duration,
    pace: Option<f64>,
) -> Result<PipelineRun> {
    let telemetry = Telemetry::builder(agent)
        .buffer_size(1 << 16)?
        .run_interval(Duration::from_millis(1))?
        .ring_directory(dir)
        .build()?;
    let handle = telemetry.handle(Category::PERFORMANCE, NAME);
    let mut reader = RingReader::open(&dir.join(agent), ReadMode::Consume)?;
    let read = AtomicU64::new(0);
    let recording = AtomicBool::new(true);
    let flushed = AtomicBool::new(false);
    let mut read_at_stop = 0;
    std::thread::scope(|scope| -> Result<()> {
        let consumer = scope.spawn(|| -> Result<()> {
            let mut out = Vec::with_capacity(1 << 16);
            loop {
                let done = flushed.load(Ordering::Acquire);
                let n = reader.read_batch(&mut out, 1 << 16)?;
                read.fetch_add(n as u64, Ordering::Release);
                black_box(out.last());
                out.clear();
                if n == 0 {
                    if done {
                        return Ok(());
                    }
                    // A reader polls; it does not spin (on 2 cores a spinning
                    // reader takes the flush thread's CPU).
                    std::thread::sleep(READER_POLL);
                }
            }
        });
        let start = Instant::now();
        let recorders: Vec<_> = (0..threads)
            .map(|_| {
                let (handle, recording) = (&handle, &recording);
                scope.spawn(move || {
                    let mut i = 0u64;
                    while recording.load(Ordering::Relaxed) {
                        for _ in 0..1024 {
                            handle.record(black_box(i));
                            i += 1;
                        }
                        if let Some(pace) = pace {
                            // Ahead of the offered rate: sleep (not spin), so the
                            // flush and reader threads get the CPU meanwhile.
                            let due = Duration::from_secs_f64(i as f64 / pace);
                            let now = start.elapsed();
                            if due > now + PACE_SLACK {
                                std::thread::sleep(due - now);
                            }
                        }
                    }
                })
            })
            .collect();
        std::thread::sleep(time);
        read_at_stop = read.load(Ordering::Acquire);
        recording.store(false, Ordering::Relaxed);
        for r in recorders {
            r.join().expect("recording thread panicked");
        }
        telemetry.flush();
        flushed.store(true, Ordering::Release);
        consumer.join().expect("reader thread panicked")?;
        Ok(())
    })?;
    let elapsed = time.as_secs_f64();
    telemetry.flush();
    let stats = telemetry.stats();
    let dropped = stats.dropped.total();
    ensure!(
        stats.pending == 0 && stats.recorded + stats.generated == stats.delivered + dropped,
        "pipeline books do not balance: {stats:?}"
    );
    let read = read.load(Ordering::Acquire);
    ensure!(
        read == stats.delivered,
        "the reader read {read} events, the exporter delivered {}",
        stats.delivered
    );
    Ok(PipelineRun {
        delivered_per_s: read_at_stop as f64 / elapsed,
        recorded_per_s: stats.recorded as f64 / elapsed,
        recorded: stats.recorded,
        generated: stats.generated,
        delivered: stats.delivered,
        dropped,
        dropped_staging: stats.dropped.staging_full + stats.dropped.late,
        dropped_ring: stats.dropped.exporter_full,
        read,
    })
}

/// The whole pipeline: 1 and 2 recording threads at full speed, and 1 thread
/// offering 20 M events/s.
pub fn whole_pipeline(plan: PipePlan, rows: &mut Vec<Row>) -> Result<()> {
    let dir = tempfile::tempdir().context("temporary ring directory")?;
    let cases: [(&str, usize, Option<f64>); 3] = [
        ("pipeline", 1, None),
        ("pipeline", 2, None),
        ("pipeline_paced_20m", 1, Some(20e6)),
    ];
    for (id, threads, pace) in cases {
        let mut rates = Vec::new();
        let mut recorded_rates = Vec::new();
        let mut runs = Vec::new();
        for r in 0..plan.repeats {
            let run = pipeline_once(
                dir.path(),
                &format!("{id}-{threads}t-{r}"),
                threads,
                plan.pipeline_time,
                pace,
            )?;
            rates.push(run.delivered_per_s);
            recorded_rates.push(run.recorded_per_s / 1e6);
            runs.push(run);
        }
        let total = |f: fn(&PipelineRun) -> u64| runs.iter().map(f).sum::<u64>();
        let (recorded, dropped) = (total(|r| r.recorded), total(|r| r.dropped));
        let drop_pct = 100.0 * dropped as f64 / recorded.max(1) as f64;
        let label = match pace {
            None => format!("pipeline: {threads} recorder(s) → ring → reader"),
            Some(p) => format!("pipeline: offered {:.0} M/s → ring → reader", p / 1e6),
        };
        let mut row = rate_row(
            id,
            &label,
            threads,
            &rates,
            &format!(
                "delivered; recorded {:.1} M/s, {drop_pct:.1}% dropped, books exact",
                median(&mut recorded_rates)
            ),
        );
        row.extra.insert(
            "accounting".into(),
            json!({
                "recorded": recorded,
                "generated": total(|r| r.generated),
                "delivered": total(|r| r.delivered),
                "dropped": dropped,
                "dropped_staging_full": total(|r| r.dropped_staging),
                "dropped_ring_full": total(|r| r.dropped_ring),
                "read_by_reader": total(|r| r.read),
                "recorded_plus_generated_equals_delivered_plus_dropped": true,
            }),
        );
        row.extra
            .insert("recorded_mevents_per_s".into(), json!(recorded_rates));
        row.extra.insert("dropped_percent".into(), json!(drop_pct));
        rows.push(row);
    }
    Ok(())
}
