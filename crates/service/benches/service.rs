//! The service under load: 8 concurrent clients on loopback, each posting records
//! one after another over a keep-alive connection (the next only after the 201),
//! against the service in this process. Throughput and latency per store, beside
//! the library's own speed on the same records (what `nixl-telemetry process`
//! runs), so the cost of the service layer shows as a ratio.
//!
//! ```sh
//! cargo bench -p nixl-telemetry-service --bench service
//! # with PostgreSQL too: a URL of a server where databases may be created
//! NIXL_TELEMETRY_TEST_POSTGRES_URL=postgres://… cargo bench -p nixl-telemetry-service --bench service
//! ```
//!
//! Each PostgreSQL run is followed by its floor in the same commit mode: 8
//! connections committing one locked-row update per record, no service at all.
//!
//! `NIXL_TELEMETRY_BENCH_RECORDS` sets the records per run (default 40,000).

#[path = "../tests/it/support/http.rs"]
#[allow(dead_code)]
mod http;
#[path = "../tests/it/support/postgres.rs"]
#[allow(dead_code)]
mod postgres_db;
#[path = "../tests/it/support/records.rs"]
#[allow(dead_code)]
mod records;
#[path = "../tests/it/support/server.rs"]
#[allow(dead_code)]
mod server;

use std::io::Write as _;
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use nixl_telemetry_processor::{parse_input_line, Context, MetricProcessor, Metrics};
use nixl_telemetry_service::{ServiceConfig, StoreUrl, DEFAULT_MAX_BATCH};

const CLIENTS: usize = 8;

/// Records/s and latency percentiles of one run.
struct Run {
    records: usize,
    seconds: f64,
    p50: Duration,
    p99: Duration,
    max: Duration,
}

impl Run {
    fn per_second(&self) -> f64 {
        self.records as f64 / self.seconds
    }
}

/// Posts `records` from `CLIENTS` threads to `addr`.
fn load(addr: std::net::SocketAddr, records: &[String]) -> Run {
    let latencies = Mutex::new(Vec::with_capacity(records.len()));
    let start = Instant::now();
    thread::scope(|scope| {
        for client in 0..CLIENTS {
            let latencies = &latencies;
            scope.spawn(move || {
                let mut connection = http::Connection::open(addr).expect("connect");
                let mut mine = Vec::with_capacity(records.len() / CLIENTS + 1);
                for record in records.iter().skip(client).step_by(CLIENTS) {
                    let sent = Instant::now();
                    let response = connection
                        .request("POST", "/api/v1/metrics", &[], record.as_bytes())
                        .expect("an answer");
                    mine.push(sent.elapsed());
                    assert_eq!(response.status, 201, "{}", response.text());
                }
                latencies.lock().unwrap().extend(mine);
            });
        }
    });
    let seconds = start.elapsed().as_secs_f64();
    let mut latencies = latencies.into_inner().unwrap();
    latencies.sort_unstable();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    Run {
        records: latencies.len(),
        seconds,
        p50: at(0.50),
        p99: at(0.99),
        max: *latencies.last().unwrap(),
    }
}

/// The library alone: parse and apply every record, as `process` does.
fn library(records: &[String]) -> f64 {
    let mut processor = MetricProcessor::new();
    let mut metrics = Metrics::new();
    let start = Instant::now();
    for line in records {
        let input = parse_input_line(line).unwrap();
        processor
            .process(
                &mut metrics,
                &input.record,
                &Context {
                    now: input.now,
                    old_now: None,
                },
            )
            .unwrap();
    }
    records.len() as f64 / start.elapsed().as_secs_f64()
}

/// The time of one `fdatasync` of a rewritten 4 KiB block in `dir` (the floor
/// under a commit that waits for the disk).
fn fdatasync_floor(dir: &std::path::Path) -> Duration {
    let path = dir.join("fsync-probe");
    let mut file = std::fs::File::create(&path).unwrap();
    file.write_all(&[0u8; 4096]).unwrap();
    file.sync_all().unwrap();
    let rounds = 100;
    let start = Instant::now();
    for i in 0..rounds {
        use std::os::unix::fs::FileExt;
        file.write_all_at(&[i as u8; 4096], 0).unwrap();
        file.sync_data().unwrap();
    }
    let _ = std::fs::remove_file(&path);
    start.elapsed() / rounds
}

fn measure(
    name: &str,
    store: StoreUrl,
    max_batch: usize,
    records: &[String],
    library_rate: f64,
) -> Option<f64> {
    if !selected(name) {
        return None;
    }
    let server = server::TestServer::start(ServiceConfig {
        max_batch,
        ..server::config(store)
    });
    // Warm up: connections, statements, caches.
    load(server.addr, &records[..records.len().min(2000)]);
    let run = load(server.addr, records);
    println!(
        "{name:<44} {:>8.0} records/s  p50 {:>6.2} ms  p99 {:>6.2} ms  max {:>7.2} ms  library/service {:>5.1}",
        run.per_second(),
        run.p50.as_secs_f64() * 1e3,
        run.p99.as_secs_f64() * 1e3,
        run.max.as_secs_f64() * 1e3,
        library_rate / run.per_second()
    );
    server.stop();
    Some(run.per_second())
}

/// The floor under any exact service on this PostgreSQL server: `CLIENTS`
/// connections, each running one transaction per record that locks one shared
/// row (as every record touches `last_updated`), updates it and commits, in the
/// commit mode of `url`. No HTTP, no JSON, no processing: only the row lock and
/// the commit, serialised as the service's must be. Returns transactions/s.
fn postgres_floor(url: &str, transactions: usize) -> f64 {
    let mut setup = postgres::Client::connect(url, postgres::NoTls).expect("connect for the floor");
    setup
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS floor_row (id integer PRIMARY KEY, value bigint NOT NULL);
             INSERT INTO floor_row VALUES (1, 0) ON CONFLICT (id) DO NOTHING;",
        )
        .expect("create the floor's table");
    let run = |count: usize| {
        let start = Instant::now();
        thread::scope(|scope| {
            for _ in 0..CLIENTS {
                scope.spawn(|| {
                    let mut client = postgres::Client::connect(url, postgres::NoTls)
                        .expect("connect for the floor");
                    let lock = client
                        .prepare("SELECT value FROM floor_row WHERE id = 1 FOR UPDATE")
                        .unwrap();
                    let update = client
                        .prepare("UPDATE floor_row SET value = value + 1 WHERE id = 1")
                        .unwrap();
                    for _ in 0..count / CLIENTS {
                        let mut transaction = client.transaction().unwrap();
                        transaction.query_one(&lock, &[]).unwrap();
                        transaction.execute(&update, &[]).unwrap();
                        transaction.commit().unwrap();
                    }
                });
            }
        });
        (count / CLIENTS * CLIENTS) as f64 / start.elapsed().as_secs_f64()
    };
    run(transactions.min(2000)); // warm up
    run(transactions)
}

/// Whether a run is selected by the command line's filters (the arguments that are
/// not options: `cargo bench … -- postgres`); no filter selects every run.
fn selected(name: &str) -> bool {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str()))
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this once, small.
    let quick = std::env::args().all(|a| a != "--bench");
    let count: usize = std::env::var("NIXL_TELEMETRY_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 400 } else { 40_000 });
    let corpus = records::at_one_time(&records::accepted_corpus(), "2025-01-13T12:00:00");
    let records: Vec<String> = corpus.iter().cycle().take(count).cloned().collect();

    let library_rate = library(&records);
    println!(
        "machine: {} cores; {count} records ({} distinct), {CLIENTS} clients, keep-alive, loopback",
        thread::available_parallelism().map_or(0, |n| n.get()),
        corpus.len()
    );
    println!(
        "{:<44} {library_rate:>8.0} records/s",
        "library (parse + process, one thread)"
    );

    let dir = tempfile::tempdir().unwrap();
    let floor = fdatasync_floor(dir.path());
    println!(
        "fdatasync of 4 KiB here: {:.2} ms, so commits that wait for the disk cap {CLIENTS} clients at {:.0} records/s",
        floor.as_secs_f64() * 1e3,
        CLIENTS as f64 / floor.as_secs_f64()
    );
    let sqlite = |name: &str, query: &str| -> StoreUrl {
        format!("sqlite:{}{query}", dir.path().join(name).display())
            .parse()
            .unwrap()
    };
    measure(
        "sqlite, synchronous=normal (default)",
        sqlite("normal.db", ""),
        DEFAULT_MAX_BATCH,
        &records,
        library_rate,
    );
    measure(
        "sqlite, synchronous=full (fsync per commit)",
        sqlite("full.db", "?synchronous=full"),
        DEFAULT_MAX_BATCH,
        &records,
        library_rate,
    );
    measure(
        "sqlite, normal, one transaction per record",
        sqlite("single.db", ""),
        1,
        &records,
        library_rate,
    );
    // PostgreSQL, with each connection's commit mode set in its URL: `on` (the
    // server's default: a commit waits for the disk) and `off` (it does not; a
    // database crash may lose the last commits, the service's own crash loses none).
    if std::env::var_os(postgres_db::POSTGRES_URL_VARIABLE).is_none() {
        println!(
            "postgres: skipped (no {})",
            postgres_db::POSTGRES_URL_VARIABLE
        );
        return;
    }
    for (mode, max_batch, name) in [
        (
            "on",
            DEFAULT_MAX_BATCH,
            "postgres, synchronous_commit=on (default)",
        ),
        ("off", DEFAULT_MAX_BATCH, "postgres, synchronous_commit=off"),
        ("off", 1, "postgres, off, one transaction per record"),
    ] {
        if !selected(name) {
            continue;
        }
        let db = postgres_db::TestDatabase::create("the PostgreSQL runs of the benchmark")
            .expect("the PostgreSQL server");
        let separator = if db.url.contains('?') { '&' } else { '?' };
        let url = format!(
            "{}{separator}options=-c%20synchronous_commit%3D{mode}",
            db.url
        );
        let Some(service_rate) = measure(
            name,
            url.parse().unwrap(),
            max_batch,
            &records,
            library_rate,
        ) else {
            continue;
        };
        let floor_rate = postgres_floor(&url, records.len());
        println!(
            "{:<44} {floor_rate:>8.0} records/s  service/floor {:>5.2}",
            format!("  floor: one locked-row commit per record, {mode}"),
            service_rate / floor_rate
        );
    }
}
