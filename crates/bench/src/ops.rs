//! Per-operation benchmarks: our record paths, their floors, and what a Rust
//! user would pick instead, each on 1 and 2 threads.
//!
//! Every body calls through `black_box(&handle)` with a `black_box`ed value, so
//! the compiler can neither hoist the enabled check out of the loop nor drop
//! the work. Bounded buffers (our staging, the mutex vector, the floor's
//! thread-local buffer) all hold [`STAGING_EVENTS`] events, one repeat never
//! records more than that per thread, and they are drained between repeats:
//! the timed loop never takes a drop path.

use std::cell::{Cell, UnsafeCell};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result};
use nixl_telemetry::{clock, Category, Direction, Event, Telemetry};

use crate::harness::{run_concurrent, Plan};
use crate::report::Row;

/// Events each staging queue (ours and the reference's) and the floor's buffer hold.
pub const STAGING_EVENTS: usize = 1 << 14;
/// Operations per thread per repeat: half a queue, so a repeat never drops.
pub const OPS: u64 = (STAGING_EVENTS / 2) as u64;
/// Flush interval of the telemetry under test: long, so the timed loops see no
/// flusher; the harness drains between repeats instead.
const RUN_INTERVAL: Duration = Duration::from_secs(1);

/// The histogram bounds, µs: the exporters' default buckets (10 µs … 10 s),
/// the one list in `nixl_telemetry_abi::buckets`.
pub use nixl_telemetry_abi::buckets::DEFAULT_BUCKETS_US as HISTOGRAM_BUCKETS_US;

/// The event name every benchmark records.
pub const NAME: &str = nixl_telemetry::XFER_TIME;

/// Keeps a value on its own cache line (two lines: adjacent-line prefetch).
#[repr(align(128))]
struct Line<T>(T);

/// Measurements that share a plan and a thread count, and the rows they add
/// to: each measurement is its id, label and note plus its timed body.
struct Measure<'a> {
    /// How much to measure.
    plan: Plan,
    /// Threads recording at once.
    threads: usize,
    /// Where each measurement's row goes, in the order they run.
    rows: &'a mut Vec<Row>,
}

impl Measure<'_> {
    /// Times `body(thread, ops)` for [`OPS`] operations per thread per repeat
    /// ([`run_concurrent`]; `between` runs untimed after every repeat) and adds
    /// its nanoseconds-per-operation row.
    fn op<F, B>(&mut self, id: &str, label: &str, note: &str, body: F, between: B)
    where
        F: Fn(usize, u64) + Sync,
        B: Fn() + Sync,
    {
        self.op_n(OPS, id, label, note, body, between);
    }

    /// [`Measure::op`] with `ops` operations per thread per repeat.
    fn op_n<F, B>(&mut self, ops: u64, id: &str, label: &str, note: &str, body: F, between: B)
    where
        F: Fn(usize, u64) + Sync,
        B: Fn() + Sync,
    {
        let sample = run_concurrent(self.threads, ops, self.plan, body, between);
        self.rows
            .push(Row::from_ns(id, label, self.threads, sample, note));
    }
}

/// Builds the telemetry under test: enabled, the built-in ring (`buffer`)
/// exporter in `dir`, [`STAGING_EVENTS`]-event queues and ring.
pub fn telemetry_with_ring(dir: &std::path::Path, agent: &str) -> Result<Telemetry> {
    Ok(Telemetry::builder(agent)
        .buffer_size(STAGING_EVENTS)?
        .run_interval(RUN_INTERVAL)?
        .ring_directory(dir)
        .build()?)
}

// ---------------------------------------------------------------- floors ---

/// The floor's thread-local buffer: a raw pointer into a buffer the benchmark
/// owns, and a position. No destructor, so access has no registration check.
struct FloorBuf {
    slots: Cell<*mut Event>,
    pos: Cell<usize>,
}

thread_local! {
    static FLOOR: FloorBuf = const {
        FloorBuf { slots: Cell::new(std::ptr::null_mut()), pos: Cell::new(0) }
    };
}

/// One buffer per benchmark thread, owned by the benchmark.
pub(crate) struct FloorPool(Vec<Box<[UnsafeCell<Event>]>>);

// SAFETY: each buffer is written only by the one thread it is handed to
// (thread index t gets buffer t) and read only by `FloorPool::consume`, which
// the harness runs between repeats while every writer waits at its barrier
// (the barrier orders the writes before the reads and the reads before the
// next writes); the pool outlives those threads.
unsafe impl Sync for FloorPool {}

impl FloorPool {
    pub(crate) fn new(threads: usize) -> FloorPool {
        FloorPool(
            (0..threads)
                .map(|_| {
                    (0..STAGING_EVENTS)
                        .map(|_| UnsafeCell::new(Event::ZERO))
                        .collect()
                })
                .collect(),
        )
    }

    /// Points the calling thread's buffer at buffer `t` (once per repeat, untimed).
    pub(crate) fn attach(&self, t: usize) {
        FLOOR.with(|f| f.slots.set(self.0[t].as_ptr() as *mut Event));
    }

    /// Reads every event of every buffer, as the staging's consumer reads the
    /// queues it drains: afterwards the lines sit in the reading core's cache,
    /// and a writer on another core must take them back before it writes.
    /// Call only between repeats (see the `Sync` impl).
    fn consume(&self) {
        let mut sum = 0u64;
        for buffer in &self.0 {
            for cell in buffer.iter() {
                // SAFETY: no writer runs while the harness calls `between`
                // (every other thread waits at the barrier), so nothing
                // writes the event during this read.
                sum = sum.wrapping_add(unsafe { (*cell.get()).value });
            }
        }
        black_box(sum);
    }
}

/// Writes one event into the calling thread's floor buffer.
#[inline(always)]
pub(crate) fn floor_write(event: Event) {
    FLOOR.with(|f| {
        let pos = f.pos.get();
        // SAFETY: `slots` points at a live buffer of STAGING_EVENTS events that
        // only this thread writes (FloorPool::attach), and the index is masked.
        unsafe { f.slots.get().add(pos & (STAGING_EVENTS - 1)).write(event) };
        f.pos.set(pos.wrapping_add(1));
    });
}

/// The floor of `record_at`: `ops` 56-byte events written into thread `t`'s
/// buffer of `pool`, the loop counter as their timestamp.
pub(crate) fn write_only(pool: &FloorPool, t: usize, name: &[u8; 32], ops: u64) {
    pool.attach(t);
    let name = black_box(name);
    for i in 0..ops {
        floor_write(Event::with_encoded_name(
            black_box(i),
            Category::PERFORMANCE,
            *name,
            i,
        ));
    }
}

/// The floor of `record`: `ops` events stamped with [`cheapest_stamp`] and written
/// into thread `t`'s buffer of `pool`.
pub(crate) fn clock_and_write(pool: &FloorPool, t: usize, name: &[u8; 32], ops: u64) {
    pool.attach(t);
    let name = black_box(name);
    for i in 0..ops {
        floor_write(Event::with_encoded_name(
            cheapest_stamp(),
            Category::PERFORMANCE,
            *name,
            black_box(i),
        ));
    }
}

/// The cheapest timestamp a record can take: the reading our record paths
/// store (raw TSC ticks, converted to µs later, off the hot path), or the
/// system clock where there is no invariant TSC (as our record then reads).
#[inline(always)]
pub(crate) fn cheapest_stamp() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if clock::uses_tsc() {
        // SAFETY: RDTSC exists on every x86-64 CPU and has no memory effects.
        return unsafe { core::arch::x86_64::_rdtsc() };
    }
    clock::now_us()
}

fn floors(plan: Plan, threads: usize, rows: &mut Vec<Row>) {
    clock::init();
    let nothing = || {};
    let mut m = Measure {
        plan,
        threads,
        rows,
    };
    m.op(
        "floor_clock",
        "floor: cheap clock alone (RDTSC)",
        if clock::uses_tsc() {
            "the reading a record stores"
        } else {
            "no invariant TSC: system clock"
        },
        |_, ops| {
            for _ in 0..ops {
                black_box(cheapest_stamp());
            }
        },
        nothing,
    );

    m.op(
        "clock_now_us",
        "orientation: clock::now_us (TSC in µs)",
        "RDTSC + conversion: what Telemetry::now_us costs a caller",
        |_, ops| {
            for _ in 0..ops {
                black_box(clock::now_us());
            }
        },
        nothing,
    );

    m.op(
        "system_clock",
        "orientation: SystemTime::now in µs",
        "",
        |_, ops| {
            for _ in 0..ops {
                black_box(clock::system_now_us());
            }
        },
        nothing,
    );

    let pool = FloorPool::new(threads);
    let name = nixl_telemetry_name(NAME);
    m.op(
        "floor_tls_write",
        "floor: 56-byte event into a thread-local buffer",
        "",
        |t, ops| write_only(&pool, t, &name.0, ops),
        nothing,
    );

    // A record's work with nothing of ours: the cheapest stamp and one event
    // written into the thread's buffer.
    let floor_body = |t: usize, ops: u64| clock_and_write(&pool, t, &name.0, ops);
    m.op(
        "floor",
        "floor: cheap clock + thread-local write",
        "the floor of record_vs_floor",
        floor_body,
        nothing,
    );

    // The same, with the buffers read between repeats by thread 0 as our
    // staging's consumer reads its queues: with two threads, thread 1's writes
    // then take back lines another core holds, which costs anything from
    // nothing (both vCPUs on one physical core) to a cross-socket miss per line,
    // depending on where the host runs the vCPUs. `record_2t` pays the same.
    m.op(
        "floor_consumed",
        "floor: cheap clock + write into a buffer another thread reads",
        "read by thread 0 between repeats, as a drain reads the staging",
        floor_body,
        || pool.consume(),
    );

    let lines: Vec<Line<AtomicU64>> = (0..threads).map(|_| Line(AtomicU64::new(0))).collect();
    m.op(
        "floor_atomic_add",
        "floor: relaxed atomic add, per-thread line",
        "",
        |t, ops| {
            let line = &lines[t].0;
            for _ in 0..ops {
                black_box(line).fetch_add(black_box(1), Ordering::Relaxed);
            }
        },
        nothing,
    );
}

/// Two threads adding to one shared line: the cost of cross-core contention
/// right now. On this shared VM the host sometimes runs both vCPUs on sibling
/// hyperthreads of one core, where a shared line costs little and locks barely
/// contend; this row tells which case a run measured.
fn contention_probe(plan: Plan, rows: &mut Vec<Row>) {
    let shared = Line(AtomicU64::new(0));
    let mut m = Measure {
        plan,
        threads: 2,
        rows,
    };
    m.op(
        "shared_atomic_add",
        "analysis: relaxed atomic add, one shared line",
        "contention probe",
        |_, ops| {
            for _ in 0..ops {
                black_box(&shared.0).fetch_add(black_box(1), Ordering::Relaxed);
            }
        },
        || {},
    );
}

/// An event's 32-byte name field, on a cache line of its own as a handle's name
/// is ([`nixl_telemetry::EventHandle`] is cache-line aligned): wherever the
/// floor's caller keeps it, reading it never touches two lines.
#[repr(align(64))]
pub(crate) struct LineName(pub(crate) [u8; 32]);

/// The 32-byte name field for `name`.
pub(crate) fn nixl_telemetry_name(name: &str) -> LineName {
    LineName(Event::new(0, Category::PERFORMANCE, name, 0).event_name)
}

// ------------------------------------------------------------------- ours ---

fn ours(plan: Plan, threads: usize, rows: &mut Vec<Row>) -> Result<()> {
    let dir = tempfile::tempdir().context("temporary ring directory")?;
    let telemetry = telemetry_with_ring(dir.path(), &format!("bench-ours-{threads}t"))?;
    let handle = telemetry.handle(Category::PERFORMANCE, NAME);
    let flush = || telemetry.flush();
    let mut m = Measure {
        plan,
        threads,
        rows,
    };

    m.op(
        "record",
        "ours: fast-path record (handle, clock included)",
        "buffer exporter, drained between repeats",
        |_, ops| {
            for i in 0..ops {
                black_box(&handle).record(black_box(i));
            }
        },
        flush,
    );

    m.op(
        "record_at",
        "ours: handle record_at (caller's timestamp)",
        "record minus the clock",
        |_, ops| {
            for i in 0..ops {
                black_box(&handle).record_at(black_box(i), black_box(i));
            }
        },
        flush,
    );

    m.op(
        "generic_record",
        "ours: generic record(category, name, value)",
        "",
        |_, ops| {
            for i in 0..ops {
                black_box(&telemetry).record(Category::BACKEND, black_box("ucx_rdma_writes"), i);
            }
        },
        flush,
    );

    let calls = OPS / 2;
    m.op_n(
        calls,
        "transfer_completed",
        "ours: transfer_completed (3 events, 1 clock)",
        "per call",
        |_, ops| {
            for i in 0..ops {
                black_box(&telemetry).transfer_completed(black_box(i), Direction::Write, 4096);
            }
        },
        flush,
    );

    // Two agents recorded from one thread, alternately (the demo's target
    // event after each initiator transfer does this).
    let other = telemetry_with_ring(dir.path(), &format!("bench-other-{threads}t"))?;
    let other_handle = other.handle(Category::PERFORMANCE, NAME);
    m.op(
        "record_two_instances",
        "ours: record alternating between 2 agents",
        "per record; each switch of agent",
        |_, ops| {
            for i in 0..ops / 2 {
                black_box(&handle).record(black_box(i));
                black_box(&other_handle).record(black_box(i));
            }
        },
        || {
            telemetry.flush();
            other.flush();
        },
    );

    for t in [&telemetry, &other] {
        let stats = t.stats();
        anyhow::ensure!(
            stats.dropped.staging_full == 0 && stats.dropped.late == 0,
            "a timed loop took the staging drop path: {stats:?}"
        );
    }
    drop(other);
    drop(telemetry);

    if threads == 1 {
        disabled_and_filtered(plan, m.rows, dir.path())?;
    }
    Ok(())
}

fn disabled_and_filtered(plan: Plan, rows: &mut Vec<Row>, dir: &std::path::Path) -> Result<()> {
    let nothing = || {};
    let off = Telemetry::builder("bench-off").enabled(false).build()?;
    let filtered = Telemetry::builder("bench-filtered")
        .buffer_size(STAGING_EVENTS)?
        .run_interval(RUN_INTERVAL)?
        .ring_directory(dir)
        .enabled_metrics("agent_tx_*,agent_rx_*")
        .build()?;
    let cases: [(&str, &str, &Telemetry); 2] = [
        ("disabled", "ENABLE off", &off),
        ("filtered", "ENABLED_METRICS excludes it", &filtered),
    ];
    let mut m = Measure {
        plan,
        threads: 1,
        rows,
    };
    for (id, why, telemetry) in cases {
        let handle = telemetry.handle(Category::PERFORMANCE, NAME);
        anyhow::ensure!(!handle.is_enabled(), "{id} handle is enabled");
        m.op(
            &format!("{id}_record"),
            &format!("ours: handle record, {why}"),
            "",
            |_, ops| {
                for i in 0..ops {
                    black_box(&handle).record(black_box(i));
                }
            },
            nothing,
        );
        m.op(
            &format!("{id}_generic_record"),
            &format!("ours: generic record, {why}"),
            "",
            |_, ops| {
                for i in 0..ops {
                    black_box(telemetry).record(Category::PERFORMANCE, black_box(NAME), i);
                }
            },
            nothing,
        );
    }
    let stats = filtered.stats();
    anyhow::ensure!(
        stats.recorded == 0,
        "filtered-out records were recorded: {stats:?}"
    );
    Ok(())
}

// ---------------------------------------------------- the reference design ---

/// The reference design, in Rust: one mutex-protected vector of 56-byte events,
/// bounded, drained by a flusher thread. The clock is our cheap clock, taken
/// outside the lock, so the comparison isolates the staging structure.
struct MutexStaging {
    events: Mutex<Vec<Event>>,
    capacity: usize,
    dropped: AtomicU64,
}

impl MutexStaging {
    #[inline]
    fn record(&self, category: Category, name: &[u8; 32], value: u64) {
        let event = Event::with_encoded_name(clock::now_us(), category, *name, value);
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        if events.len() < self.capacity {
            events.push(event);
        } else {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Swaps the vector out under the lock and hands its events to a no-op sink.
    fn drain(&self, spare: &mut Vec<Event>) -> usize {
        {
            let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::swap(&mut *events, spare);
        }
        let n = spare.len();
        black_box(&spare[..]);
        spare.clear();
        n
    }
}

fn mutex_staging(plan: Plan, threads: usize, rows: &mut Vec<Row>) -> Result<()> {
    clock::init();
    let staging = Arc::new(MutexStaging {
        events: Mutex::new(Vec::with_capacity(STAGING_EVENTS)),
        capacity: STAGING_EVENTS,
        dropped: AtomicU64::new(0),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let flusher = {
        let (staging, stop) = (Arc::clone(&staging), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut spare = Vec::with_capacity(STAGING_EVENTS);
            let mut slept = Duration::ZERO;
            while !stop.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(10));
                slept += Duration::from_millis(10);
                if slept >= RUN_INTERVAL {
                    slept = Duration::ZERO;
                    staging.drain(&mut spare);
                }
            }
        })
    };
    let spare = Mutex::new(Vec::with_capacity(STAGING_EVENTS));
    let name = nixl_telemetry_name(NAME);
    let mut m = Measure {
        plan,
        threads,
        rows,
    };
    m.op(
        "mutex_staging",
        "reference: Mutex<Vec<Event>> staging + flusher",
        "same cheap clock, taken outside the lock",
        |_, ops| {
            for i in 0..ops {
                black_box(&*staging).record(Category::PERFORMANCE, &name.0, black_box(i));
            }
        },
        || {
            staging.drain(&mut spare.lock().unwrap());
        },
    );
    stop.store(true, Ordering::Release);
    flusher.join().ok();
    anyhow::ensure!(
        staging.dropped.load(Ordering::Relaxed) == 0,
        "the mutex staging dropped events in a timed loop"
    );
    Ok(())
}

// ---------------------------------------------------- the metrics crate ---

/// The global `metrics` recorder (Prometheus), installed once per process.
fn metrics_recorder() -> Result<&'static metrics_exporter_prometheus::PrometheusHandle> {
    static HANDLE: OnceLock<metrics_exporter_prometheus::PrometheusHandle> = OnceLock::new();
    if let Some(h) = HANDLE.get() {
        return Ok(h);
    }
    let buckets: Vec<f64> = HISTOGRAM_BUCKETS_US.to_vec();
    let handle = metrics_exporter_prometheus::PrometheusBuilder::new()
        .set_buckets(&buckets)
        .context("metrics-exporter-prometheus buckets")?
        .install_recorder()
        .context("install the metrics Prometheus recorder")?;
    Ok(HANDLE.get_or_init(|| handle))
}

fn metrics_crate(plan: Plan, threads: usize, rows: &mut Vec<Row>) -> Result<()> {
    let prom = metrics_recorder()?;
    let upkeep = || prom.run_upkeep();
    let mut m = Measure {
        plan,
        threads,
        rows,
    };
    let counter = metrics::counter!("agent_tx_bytes_total");
    m.op(
        "metrics_counter",
        "metrics + Prometheus recorder: counter increment",
        "registered handle, one shared series",
        |_, ops| {
            for i in 0..ops {
                black_box(&counter).increment(black_box(i));
            }
        },
        upkeep,
    );
    let histogram = metrics::histogram!("agent_xfer_time_us");
    m.op(
        "metrics_histogram",
        "metrics + Prometheus recorder: histogram record",
        "registered handle, upkeep between repeats",
        |_, ops| {
            for i in 0..ops {
                black_box(&histogram).record(black_box(i & 0xffff) as f64);
            }
        },
        upkeep,
    );
    Ok(())
}

// ------------------------------------------------------ prometheus-client ---

fn prometheus_client(plan: Plan, threads: usize, rows: &mut Vec<Row>) {
    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::metrics::histogram::Histogram;
    let nothing = || {};
    let mut m = Measure {
        plan,
        threads,
        rows,
    };
    let counter: Counter<u64> = Counter::default();
    m.op(
        "promclient_counter",
        "prometheus-client: counter inc_by",
        "one shared series",
        |_, ops| {
            for i in 0..ops {
                black_box(&counter).inc_by(black_box(i));
            }
        },
        nothing,
    );
    let histogram = Histogram::new(HISTOGRAM_BUCKETS_US.iter().copied());
    m.op(
        "promclient_histogram",
        "prometheus-client: histogram observe",
        "18 bounds 10 µs … 10 s and +Inf",
        |_, ops| {
            for i in 0..ops {
                black_box(&histogram).observe(black_box(i & 0xffff) as f64);
            }
        },
        nothing,
    );
}

/// Runs every per-operation benchmark on 1 and 2 threads.
pub fn run(plan: Plan, rows: &mut Vec<Row>) -> Result<()> {
    // Floors on 1 then 2 threads; then every contender on 1 thread, then every
    // contender on 2 threads after a contention probe: the ratios of medians
    // (`Report::ratios`) compare neighbours in time.
    for threads in [1, 2] {
        floors(plan, threads, rows);
    }
    for threads in [1, 2] {
        if threads == 2 {
            contention_probe(plan, rows);
        }
        ours(plan, threads, rows)?;
        mutex_staging(plan, threads, rows)?;
        metrics_crate(plan, threads, rows)?;
        prometheus_client(plan, threads, rows);
    }
    Ok(())
}
