//! Records per second of `nixl-telemetry serve` as its clients grow, per store,
//! each beside its floor; the service run as its own process and driven over
//! its HTTP API only.
//!
//! ```text
//! cargo build --release -p nixl-telemetry-cli -p nixl-telemetry-bench --bin service_curve
//! target/release/service_curve [--clients 1,8,64] [--seconds 3] [--repeat 3] [--json FILE]
//!     [--stores sqlite,postgres-on,postgres-off]
//! ```
//!
//! Each client posts the corpus' accepted records one after another over its
//! own keep-alive loopback connection (the next only after the `201`), for a
//! window of `--seconds` after half a second of warm-up; records/s is what
//! every client got answered in the window. Each store starts empty for every
//! point (a new SQLite file, a new PostgreSQL database).
//!
//! The floor of each store, in the same commit mode and with as many
//! connections as clients, no service, no HTTP, no JSON: one transaction per
//! record that locks one shared row (every record touches the store's
//! `last_updated`), updates it and commits: what an exact service that
//! commits each record alone could at best do. SQLite: WAL,
//! `synchronous=normal` (the service's default), `BEGIN IMMEDIATE`.
//!
//! PostgreSQL needs `NIXL_TELEMETRY_TEST_POSTGRES_URL` (a server where
//! databases may be created, e.g. from `scripts/test-service.sh
//! --postgres-only`); without it the PostgreSQL stores are skipped, said so.
//! `postgres-on` and `postgres-off` set `synchronous_commit` per connection.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use nixl_telemetry_bench::flag_values::flag_values;
use nixl_telemetry_bench::harness::{self, load_average};
use nixl_telemetry_processor::AttributeRegistry;

/// The environment variable naming the PostgreSQL server.
const POSTGRES_URL_VARIABLE: &str = "NIXL_TELEMETRY_TEST_POSTGRES_URL";

struct Options {
    clients: Vec<usize>,
    seconds: f64,
    repeat: usize,
    stores: Vec<String>,
    json: Option<PathBuf>,
}

fn parse_options() -> anyhow::Result<Options> {
    let mut o = Options {
        clients: vec![1, 8, 64],
        seconds: 3.0,
        repeat: 3,
        stores: vec![
            "sqlite".to_owned(),
            "postgres-on".to_owned(),
            "postgres-off".to_owned(),
        ],
        json: None,
    };
    for (flag, value) in flag_values(std::env::args().skip(1))? {
        match flag.as_str() {
            "--clients" => {
                o.clients = value
                    .split(',')
                    .map(|n| match n.trim().parse::<usize>() {
                        Ok(n) if n > 0 => Ok(n),
                        _ => bail!(
                            "--clients {value}: accepted: counts of 1 or more, separated by commas"
                        ),
                    })
                    .collect::<anyhow::Result<_>>()?
            }
            "--seconds" => o.seconds = value.parse()?,
            "--repeat" => o.repeat = value.parse::<usize>()?.max(1),
            "--json" => o.json = Some(PathBuf::from(value)),
            "--stores" => {
                o.stores = value.split(',').map(|s| s.trim().to_owned()).collect();
                if let Some(bad) = o
                    .stores
                    .iter()
                    .find(|s| !["sqlite", "postgres-on", "postgres-off"].contains(&s.as_str()))
                {
                    bail!("--stores: unknown store '{bad}'; accepted: sqlite, postgres-on, postgres-off");
                }
            }
            _ => bail!(
                "unknown option {flag}; accepted: --clients, --seconds, --repeat, --stores, --json"
            ),
        }
    }
    Ok(o)
}

/// The corpus' records the service accepts, each in an envelope at one time
/// (applied in any order they give the same metrics).
fn records() -> anyhow::Result<Vec<String>> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/tao_processor/corpus.jsonl");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    // The service's built-in registry: corpus records with other keys are
    // refused, as TAO's server refuses them.
    let registry = AttributeRegistry::default();
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let value: serde_json::Value = serde_json::from_str(line)?;
        let record = &value["record"];
        let accepted = record.as_object().is_some_and(|r| {
            r.keys()
                .all(|k| registry.attributes().iter().any(|a| &a.raw_key == k))
        });
        if accepted {
            out.push(
                serde_json::json!({"now": "2025-01-13T12:00:00", "record": record}).to_string(),
            );
        }
    }
    if out.is_empty() {
        bail!("{}: no record the service accepts", path.display());
    }
    Ok(out)
}

/// A keep-alive HTTP/1.1 connection posting records.
struct Client {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
    line: String,
}

impl Client {
    fn open(addr: SocketAddr) -> anyhow::Result<Client> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(Client {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
            line: String::new(),
        })
    }

    /// Posts one record and returns the answer's status.
    fn post(&mut self, body: &str) -> anyhow::Result<u16> {
        write!(
            self.writer,
            "POST /api/v1/metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )?;
        self.line.clear();
        self.reader.read_line(&mut self.line)?;
        let status: u16 = self
            .line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .with_context(|| format!("a status line, got {:?}", self.line))?;
        let mut length = 0usize;
        loop {
            self.line.clear();
            if self.reader.read_line(&mut self.line)? == 0 {
                bail!("the connection closed in the headers");
            }
            let header = self.line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse()?;
                }
            }
        }
        let mut body = vec![0u8; length];
        self.reader.read_exact(&mut body)?;
        if status != 201 {
            bail!("answered {status}: {}", String::from_utf8_lossy(&body));
        }
        Ok(status)
    }
}

/// `nixl-telemetry serve` on a free loopback port.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(bin: &Path, store: &str, log: &Path) -> anyhow::Result<Server> {
        let addr = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
        let mut cmd = Command::new(bin.join("nixl-telemetry"));
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("NIXL_") {
                cmd.env_remove(k);
            }
        }
        let child = cmd
            .args(["serve", "--listen", &addr.to_string(), "--store", store])
            // The records' envelopes are of a fixed day of the past.
            .args(["--max-envelope-skew", "any"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log)?)
            .spawn()
            .context("starting nixl-telemetry serve")?;
        let mut server = Server { child, addr };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(addr).is_err() {
            if let Some(status) = server.child.try_wait()? {
                bail!(
                    "nixl-telemetry serve exited {status}: {}",
                    std::fs::read_to_string(log).unwrap_or_default()
                );
            }
            if Instant::now() > deadline {
                server.stop().ok();
                bail!("nixl-telemetry serve did not listen on {addr} within 20 s");
            }
            thread::sleep(Duration::from_millis(20));
        }
        Ok(server)
    }

    fn stop(&mut self) -> anyhow::Result<()> {
        Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status()?;
        self.child.wait()?;
        Ok(())
    }
}

/// Records/s and latency of one window.
struct Window {
    per_second: f64,
    p99_ms: f64,
}

/// `clients` threads each running `operation` in a loop: half a second of
/// warm-up, then a window of `seconds`; operations completed in the window
/// per second, and their p99.
fn run_clients<S: Send>(
    clients: usize,
    seconds: f64,
    open: impl Fn(usize) -> anyhow::Result<S> + Sync,
    operation: impl Fn(&mut S, usize) -> anyhow::Result<()> + Sync,
) -> anyhow::Result<Window> {
    let measuring = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    let count = AtomicU64::new(0);
    let latencies = Mutex::new(Vec::new());
    let failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    let mut elapsed = 0.0;
    thread::scope(|scope| {
        for client in 0..clients {
            let (measuring, done, count, latencies, failure) =
                (&measuring, &done, &count, &latencies, &failure);
            let (open, operation) = (&open, &operation);
            scope.spawn(move || {
                let mut mine = Vec::new();
                let result = (|| -> anyhow::Result<()> {
                    let mut state = open(client)?;
                    let mut i = client;
                    while !done.load(Ordering::Relaxed) {
                        let start = Instant::now();
                        operation(&mut state, i)?;
                        i += clients;
                        if measuring.load(Ordering::Relaxed) && !done.load(Ordering::Relaxed) {
                            count.fetch_add(1, Ordering::Relaxed);
                            mine.push(start.elapsed());
                        }
                    }
                    Ok(())
                })();
                if let Err(e) = result {
                    failure.lock().unwrap().get_or_insert(e);
                    done.store(true, Ordering::Relaxed);
                }
                latencies.lock().unwrap().extend(mine);
            });
        }
        thread::sleep(Duration::from_millis(500));
        measuring.store(true, Ordering::Relaxed);
        let start = Instant::now();
        thread::sleep(Duration::from_secs_f64(seconds));
        done.store(true, Ordering::Relaxed);
        elapsed = start.elapsed().as_secs_f64();
    });
    if let Some(e) = failure.into_inner().unwrap() {
        return Err(e);
    }
    let mut latencies = latencies.into_inner().unwrap();
    latencies.sort_unstable();
    let p99 = latencies
        .get(((latencies.len() as f64 * 0.99) as usize).min(latencies.len().saturating_sub(1)))
        .map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
    Ok(Window {
        per_second: count.load(Ordering::Relaxed) as f64 / elapsed,
        p99_ms: p99,
    })
}

/// A PostgreSQL database made for one point, dropped afterwards.
struct Database {
    admin: String,
    name: String,
    url: String,
}

impl Database {
    fn create(admin: &str, serial: usize) -> anyhow::Result<Database> {
        let name = format!("service_curve_{}_{serial}", std::process::id());
        let mut client = postgres::Client::connect(admin, postgres::NoTls)
            .context("connecting to the PostgreSQL server")?;
        client.batch_execute(&format!("CREATE DATABASE {name}"))?;
        let (base, _) = admin.split_once('?').map_or((admin, ""), |(b, q)| (b, q));
        let (server, _) = base
            .rsplit_once('/')
            .context("a PostgreSQL URL ending in /database")?;
        Ok(Database {
            admin: admin.to_owned(),
            url: format!("{server}/{name}"),
            name,
        })
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.admin, postgres::NoTls) {
            let _ = client.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// The service's store URL and the floor's connection for one point.
enum Store {
    Sqlite(PathBuf),
    Postgres { url: String, mode: &'static str },
}

impl Store {
    fn service_url(&self) -> String {
        match self {
            Store::Sqlite(path) => format!("sqlite:{}", path.display()),
            Store::Postgres { url, mode } => {
                format!("{url}?options=-c%20synchronous_commit%3D{mode}")
            }
        }
    }
}

/// The floor: one locked-row commit per operation, `clients` connections.
fn floor(store: &Store, clients: usize, seconds: f64) -> anyhow::Result<Window> {
    match store {
        Store::Sqlite(path) => {
            let setup = rusqlite::Connection::open(path)?;
            setup.pragma_update(None, "journal_mode", "WAL")?;
            setup.execute_batch(
                "CREATE TABLE IF NOT EXISTS floor_row (id INTEGER PRIMARY KEY, value INTEGER NOT NULL);
                 INSERT OR IGNORE INTO floor_row VALUES (1, 0);",
            )?;
            run_clients(
                clients,
                seconds,
                |_| {
                    let c = rusqlite::Connection::open(path)?;
                    c.pragma_update(None, "synchronous", "NORMAL")?;
                    c.busy_timeout(Duration::from_secs(30))?;
                    Ok(c)
                },
                |c, _| {
                    c.execute_batch(
                        "BEGIN IMMEDIATE; UPDATE floor_row SET value = value + 1 WHERE id = 1; COMMIT;",
                    )?;
                    Ok(())
                },
            )
        }
        Store::Postgres { url, mode } => {
            let url = format!("{url}?options=-c%20synchronous_commit%3D{mode}");
            let mut setup = postgres::Client::connect(&url, postgres::NoTls)?;
            setup.batch_execute(
                "CREATE TABLE IF NOT EXISTS floor_row (id integer PRIMARY KEY, value bigint NOT NULL);
                 INSERT INTO floor_row VALUES (1, 0) ON CONFLICT (id) DO NOTHING;",
            )?;
            run_clients(
                clients,
                seconds,
                |_| {
                    let mut client = postgres::Client::connect(&url, postgres::NoTls)?;
                    let lock =
                        client.prepare("SELECT value FROM floor_row WHERE id = 1 FOR UPDATE")?;
                    let update =
                        client.prepare("UPDATE floor_row SET value = value + 1 WHERE id = 1")?;
                    Ok((client, lock, update))
                },
                |(client, lock, update), _| {
                    let mut transaction = client.transaction()?;
                    transaction.query_one(&*lock, &[])?;
                    transaction.execute(&*update, &[])?;
                    transaction.commit()?;
                    Ok(())
                },
            )
        }
    }
}

/// One measured point.
struct Point {
    store: String,
    clients: usize,
    round: usize,
    service: Window,
    floor: Window,
}

/// The median of `values`; NaN when empty.
fn median(mut values: Vec<f64>) -> f64 {
    harness::median(&mut values)
}

fn main() -> anyhow::Result<()> {
    let o = parse_options()?;
    let exe = std::env::current_exe()?;
    let bin = exe.parent().context("program directory")?.to_owned();
    if !bin.join("nixl-telemetry").is_file() {
        bail!(
            "{} missing: cargo build --release -p nixl-telemetry-cli",
            bin.join("nixl-telemetry").display()
        );
    }
    let records = Arc::new(records()?);
    let admin = std::env::var(POSTGRES_URL_VARIABLE).ok();
    let stores: Vec<&str> = o
        .stores
        .iter()
        .map(String::as_str)
        .filter(|s| {
            let keep = !s.starts_with("postgres") || admin.is_some();
            if !keep {
                println!("{s}: skipped (no {POSTGRES_URL_VARIABLE})");
            }
            keep
        })
        .collect();
    println!(
        "service curve: {} records in the corpus, clients {:?}, {} s windows after 0.5 s of warm-up, {} rounds, \
         stores {stores:?}; {} cores; load average {}",
        records.len(),
        o.clients,
        o.seconds,
        o.repeat,
        thread::available_parallelism().map_or(0, |n| n.get()),
        load_average()
    );
    let tmp = tempfile::tempdir()?;
    let mut points = Vec::new();
    let mut serial = 0usize;
    for round in 0..o.repeat {
        for (i, _) in o.clients.iter().enumerate() {
            let clients = o.clients[(i + round) % o.clients.len()];
            for &store_name in &stores {
                serial += 1;
                let database;
                let (service_store, floor_store) = match store_name {
                    "sqlite" => (
                        Store::Sqlite(tmp.path().join(format!("service-{serial}.db"))),
                        Store::Sqlite(tmp.path().join(format!("floor-{serial}.db"))),
                    ),
                    _ => {
                        let mode = if store_name == "postgres-on" {
                            "on"
                        } else {
                            "off"
                        };
                        database = Database::create(admin.as_deref().unwrap_or_default(), serial)?;
                        (
                            Store::Postgres {
                                url: database.url.clone(),
                                mode,
                            },
                            Store::Postgres {
                                url: database.url.clone(),
                                mode,
                            },
                        )
                    }
                };
                let log = tmp.path().join(format!("serve-{serial}.log"));
                let mut server = Server::start(&bin, &service_store.service_url(), &log)?;
                let addr = server.addr;
                let records = &records;
                let service = run_clients(
                    clients,
                    o.seconds,
                    |_| Client::open(addr),
                    |client, i| client.post(&records[i % records.len()]).map(drop),
                );
                server.stop()?;
                let service = service.with_context(|| {
                    format!(
                        "{store_name}, {clients} clients; the service's log: {}",
                        std::fs::read_to_string(&log).unwrap_or_default()
                    )
                })?;
                let floor = floor(&floor_store, clients, o.seconds)
                    .with_context(|| format!("the floor of {store_name}, {clients} clients"))?;
                println!(
                    "  round {} {store_name:<13} clients {clients:>3}  service {:>8.0} records/s (p99 {:>7.2} ms)  \
                     floor {:>8.0}/s (p99 {:>7.2} ms)  service/floor {:>5.2}  load {}",
                    round + 1,
                    service.per_second,
                    service.p99_ms,
                    floor.per_second,
                    floor.p99_ms,
                    service.per_second / floor.per_second,
                    load_average()
                );
                points.push(Point {
                    store: store_name.to_owned(),
                    clients,
                    round,
                    service,
                    floor,
                });
            }
        }
    }
    println!("median (min .. max) of {} rounds, records/s:", o.repeat);
    let mut curve = Vec::new();
    for &store in &stores {
        for &clients in &o.clients {
            let mine: Vec<&Point> = points
                .iter()
                .filter(|p| p.store == store && p.clients == clients)
                .collect();
            let stats = |values: Vec<f64>| {
                let min = values.iter().copied().fold(f64::INFINITY, f64::min);
                let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                (median(values), min, max)
            };
            let service = stats(mine.iter().map(|p| p.service.per_second).collect());
            let floor = stats(mine.iter().map(|p| p.floor.per_second).collect());
            let ratio = stats(
                mine.iter()
                    .map(|p| p.service.per_second / p.floor.per_second)
                    .collect(),
            );
            let p99 = median(mine.iter().map(|p| p.service.p99_ms).collect());
            println!(
                "  {store:<13} clients {clients:>3}  service {:>8.0} ({:.0}..{:.0})  floor {:>8.0} ({:.0}..{:.0})  \
                 service/floor {:.2} ({:.2}..{:.2})  service p99 {p99:.2} ms",
                service.0, service.1, service.2, floor.0, floor.1, floor.2, ratio.0, ratio.1, ratio.2
            );
            curve.push(serde_json::json!({
                "store": store,
                "clients": clients,
                "service": {"median": service.0, "min": service.1, "max": service.2},
                "floor": {"median": floor.0, "min": floor.1, "max": floor.2},
                "service_vs_floor": {"median": ratio.0, "min": ratio.1, "max": ratio.2},
                "service_p99_ms": p99,
            }));
        }
    }
    if let Some(path) = &o.json {
        let json = serde_json::json!({
            "seconds": o.seconds,
            "rounds": o.repeat,
            "cores": thread::available_parallelism().map_or(0, |n| n.get()),
            "load_average_at_end": load_average(),
            "unit": "records per second answered 201 in the window",
            "curve": curve,
            "points": points.iter().map(|p| serde_json::json!({
                "store": p.store,
                "clients": p.clients,
                "round": p.round + 1,
                "service": p.service.per_second,
                "service_p99_ms": p.service.p99_ms,
                "floor": p.floor.per_second,
                "floor_p99_ms": p.floor.p99_ms,
            })).collect::<Vec<_>>(),
        });
        std::fs::write(path, serde_json::to_string_pretty(&json)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
