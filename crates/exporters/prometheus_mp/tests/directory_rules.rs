//! The run's directory through the Rust API, in one process: stores read
//! back exactly, hostile files skipped and never reaped, released stores
//! reaped after the TTL, two addresses on one directory refused, a reader
//! never sees a publish half done, the owner serving what it reads.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};

use nixl_telemetry_abi::{Category, Event};
use nixl_telemetry_prometheus::{Buckets, Format, Settings};
use nixl_telemetry_prometheus_mp::layout::{self, FILE_SIZE};
use nixl_telemetry_prometheus_mp::scan::{open_store, read_store, Collector, Skip};
use nixl_telemetry_prometheus_mp::{MpError, MpSettings, MultiProcessExporter, TAKEOVER_INTERVAL};

fn settings(dir: &Path, port: u16) -> MpSettings {
    let mut base = Settings::new(SocketAddr::from(([127, 0, 0, 1], port)));
    base.buckets = Buckets::new(&[10.0, 100.0]).unwrap();
    let mut s = MpSettings::new(base, dir);
    s.local_rank = Some("0".to_owned());
    s
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn transfer(bytes: u64, us: u64) -> [Event; 3] {
    [
        Event::new(1, Category::TRANSFER, "agent_tx_bytes", bytes),
        Event::new(1, Category::TRANSFER, "agent_tx_requests_num", 1),
        Event::new(1, Category::PERFORMANCE, "agent_xfer_time", us),
    ]
}

fn uid_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().uid()
}

fn scrape(addr: SocketAddr) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    raw.split_once("\r\n\r\n").unwrap().1.to_owned()
}

#[test]
fn a_store_reads_back_what_was_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let mut exporter =
        MultiProcessExporter::with_settings("rank-a", &settings(dir.path(), free_port())).unwrap();
    exporter.record(&transfer(4096, 50));
    exporter.record(&[
        Event::new(1, Category::ERROR, "NIXL_ERR_BACKEND", 1),
        Event::new(1, Category::BACKEND, "ucx.rndv", 7),
    ]);
    let file = open_store(exporter.store_path(), uid_of(exporter.store_path())).unwrap();
    let store = read_store(&file).unwrap();
    assert_eq!(store.pid, std::process::id());
    assert_eq!(store.local_rank.as_deref(), Some("0"));
    assert_eq!(store.totals.histogram(0).bounds(), [10.0, 100.0]);
    assert_eq!(store.totals.histogram(0).counts(), [0, 1, 0]);
    let text = String::from_utf8(exporter.render(Format::Text)).unwrap();
    let labels = format!(
        "agent_name=\"rank-a\",hostname=\"{}\",pid=\"{}\",agent_instance=\"{}\",local_rank=\"0\"",
        nixl_telemetry_metrics::hostname(),
        std::process::id(),
        store.agent_instance
    );
    for line in [
        // NIXL's families: no category; per-name counters: category last.
        format!("agent_tx_bytes_total{{{labels}}} 4096"),
        format!("agent_xfer_time_us_bucket{{{labels},le=\"100\"}} 1"),
        format!("agent_errors_total{{{labels},status=\"backend\"}} 1"),
        format!("ucx_rndv_total{{{labels},category=\"BACKEND\"}} 7"),
    ] {
        assert!(
            text.contains(&format!("{line}\n")),
            "{line} missing in:\n{text}"
        );
    }
    // The owner serves the same over HTTP, after the HTTP server's own
    // families (as NIXL's prometheus_mp, whose come from its HTTP library).
    assert!(exporter.is_owner());
    let served = scrape(exporter.local_addr().unwrap());
    assert!(
        served.starts_with("# HELP exposer_transferred_bytes_total "),
        "{served}"
    );
    assert!(served.contains("\nexposer_scrapes_total 0\n"), "{served}");
    assert!(served.contains(&format!(
        "ucx_rndv_total{{{labels},category=\"BACKEND\"}} 7\n"
    )));
    // Stores are private.
    let mode = std::fs::metadata(exporter.store_path()).unwrap().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn the_second_exporter_of_an_address_only_writes_and_takes_over_when_the_first_ends() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut first = MultiProcessExporter::with_settings("a", &settings(dir.path(), port)).unwrap();
    let mut second = MultiProcessExporter::with_settings("b", &settings(dir.path(), port)).unwrap();
    assert!(first.is_owner());
    assert!(!second.is_owner());
    first.record(&transfer(100, 5));
    second.record(&transfer(200, 5));
    second.tick();
    assert!(!second.is_owner());
    let addr = first.local_addr().unwrap();
    let body = scrape(addr);
    assert_eq!(body.matches("agent_tx_bytes_total{").count(), 2, "{body}");
    drop(first);
    // Attempts are spaced by TAKEOVER_INTERVAL: the next one after it succeeds.
    std::thread::sleep(TAKEOVER_INTERVAL + Duration::from_millis(20));
    second.tick();
    assert!(second.is_owner());
    let body = scrape(addr);
    // The first's store stays published (released, not yet stale).
    assert!(
        body.contains("agent_name=\"a\"") && body.contains("} 100\n"),
        "{body}"
    );
    assert!(
        body.contains("agent_name=\"b\"") && body.contains("} 200\n"),
        "{body}"
    );
}

#[test]
fn two_addresses_on_one_directory_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (free_port(), free_port());
    let _owner = MultiProcessExporter::with_settings("a", &settings(dir.path(), a)).unwrap();
    let err = MultiProcessExporter::with_settings("b", &settings(dir.path(), b)).unwrap_err();
    assert!(matches!(err, MpError::Misconfigured { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains(&format!("127.0.0.1:{a}")) && text.contains(&format!("127.0.0.1:{b}")),
        "{text}"
    );
    // The refused exporter left no store behind.
    let stores = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".store")
        })
        .count();
    assert_eq!(stores, 1);
}

#[test]
fn creation_errors_name_the_problem() {
    let base = tempfile::tempdir().unwrap();
    let file = base.path().join("file");
    std::fs::write(&file, b"").unwrap();
    let e = MultiProcessExporter::with_settings("a", &settings(&file, free_port())).unwrap_err();
    assert!(e.to_string().contains("not a directory"), "{e}");
    let mut s = settings(base.path(), free_port());
    s.local_rank = Some("r".repeat(100));
    let e = MultiProcessExporter::with_settings("a", &s).unwrap_err();
    assert!(e.to_string().contains("local rank"), "{e}");
    let mut s = settings(base.path(), free_port());
    s.base.buckets = Buckets::new(&(1..=33).map(f64::from).collect::<Vec<_>>()).unwrap();
    let e = MultiProcessExporter::with_settings("a", &s).unwrap_err();
    assert!(matches!(e, MpError::TooManyBuckets { bounds: 33 }), "{e}");
}

#[test]
fn released_stores_stay_until_the_ttl_then_are_reaped() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut s = settings(dir.path(), port);
    s.stale_ttl = Duration::from_millis(600);
    let owner = MultiProcessExporter::with_settings("owner", &s).unwrap();
    let mut leaving = MultiProcessExporter::with_settings("leaving", &s).unwrap();
    leaving.record(&transfer(4096, 5));
    let path = leaving.store_path().to_owned();
    drop(leaving);
    let collector = Collector::new(
        dir.path().to_owned(),
        format!("127.0.0.1:{port}"),
        uid_of(&path),
        s.stale_ttl,
    );
    let seen = collector.scan().unwrap();
    assert_eq!(seen.stores.len(), 2, "released but fresh: still published");
    assert!(seen.reaped.is_empty());
    std::thread::sleep(Duration::from_millis(900));
    let later = collector.scan().unwrap();
    assert_eq!(later.reaped, std::slice::from_ref(&path));
    assert!(!path.exists());
    // The owner's own store is alive (locked) however old its last update.
    assert_eq!(later.stores.len(), 1);
    assert!(owner.store_path().exists());
    std::thread::sleep(Duration::from_millis(900));
    let alive = collector.scan().unwrap();
    assert_eq!(alive.stores.len(), 1);
    assert!(alive.reaped.is_empty());
}

/// Writes a file named like a store; returns its path.
fn plant(dir: &Path, tag: &str, bytes: &[u8]) -> std::path::PathBuf {
    let path = dir.join(format!("nixl-mp.1.0.{tag}.store"));
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn hostile_files_are_skipped_and_never_reaped() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut s = settings(dir.path(), port);
    s.stale_ttl = Duration::from_millis(1);
    let mut owner = MultiProcessExporter::with_settings("owner", &s).unwrap();
    owner.record(&transfer(1, 1));
    let real = std::fs::read(owner.store_path()).unwrap();
    let d = dir.path();

    let secret = d.join("secret");
    std::fs::write(&secret, &real).unwrap();
    let symlink = d.join("nixl-mp.1.0.symlink.store");
    std::os::unix::fs::symlink(&secret, &symlink).unwrap();
    let fifo = d.join("nixl-mp.1.0.fifo.store");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let mut foreign = real.clone();
    foreign[..8].copy_from_slice(b"NIXLMPS1");
    let foreign = plant(d, "magic", &foreign);
    let truncated = plant(d, "truncated", &real[..FILE_SIZE / 2]);
    let mut version = real.clone();
    version[layout::off::VERSION..layout::off::VERSION + 4].copy_from_slice(&9u32.to_ne_bytes());
    let version = plant(d, "version", &version);
    let mut count = real.clone();
    count[layout::off::SERIES_COUNT..layout::off::SERIES_COUNT + 4]
        .copy_from_slice(&u32::MAX.to_ne_bytes());
    let count = plant(d, "count", &count);
    let mut text = real.clone();
    text[layout::off::AGENT..layout::off::AGENT + 2].copy_from_slice(&u16::MAX.to_ne_bytes());
    let text = plant(d, "text", &text);
    let directory = d.join("nixl-mp.1.0.dir.store");
    std::fs::create_dir(&directory).unwrap();
    // Another user's copy of a valid store (the tests run as root).
    let other_user = plant(d, "nobody", &real);
    let chowned = std::os::unix::fs::chown(&other_user, Some(65534), Some(65534)).is_ok()
        && uid_of(&other_user) != uid_of(owner.store_path());

    let collector = Collector::new(
        d.to_owned(),
        format!("127.0.0.1:{port}"),
        uid_of(owner.store_path()),
        s.stale_ttl,
    );
    let outcome = collector.scan().unwrap();
    let reason = |p: &Path| {
        outcome
            .skipped
            .iter()
            .find(|(q, _)| q == p)
            .map(|(_, r)| r.clone())
            .unwrap_or_else(|| panic!("{} was not skipped: {outcome:?}", p.display()))
    };
    assert_eq!(reason(&symlink), Skip::NotRegular("a symbolic link"));
    assert_eq!(reason(&fifo), Skip::NotRegular("a FIFO"));
    assert_eq!(reason(&directory), Skip::NotRegular("a directory"));
    assert_eq!(reason(&foreign), Skip::Format("wrong magic".to_owned()));
    assert_eq!(reason(&truncated), Skip::Size((FILE_SIZE / 2) as u64));
    assert!(matches!(reason(&version), Skip::Format(w) if w.contains("version 9")));
    assert!(matches!(reason(&count), Skip::Format(w) if w.contains("series")));
    assert!(matches!(reason(&text), Skip::Format(w) if w.contains("agent name")));
    if chowned {
        assert_eq!(reason(&other_user), Skip::ForeignOwner(65534));
    } else {
        eprintln!("not root: the other user's file could not be made; that case is unchecked");
    }
    // Only the owner's own store is published; nothing hostile is reaped,
    // even with a TTL of a millisecond.
    assert_eq!(outcome.stores.len(), 1);
    assert!(outcome.reaped.is_empty());
    for p in [
        &symlink,
        &foreign,
        &truncated,
        &version,
        &count,
        &text,
        &other_user,
    ] {
        assert!(std::fs::symlink_metadata(p).is_ok(), "{}", p.display());
    }
    assert!(secret.exists() && fifo.exists());
    // And the endpoint still answers with the owner's series.
    let body = scrape(owner.local_addr().unwrap());
    assert_eq!(body.matches("agent_tx_bytes_total{").count(), 1, "{body}");
}

#[test]
fn readers_never_see_a_publish_half_done() {
    let dir = tempfile::tempdir().unwrap();
    let mut exporter =
        MultiProcessExporter::with_settings("busy", &settings(dir.path(), free_port())).unwrap();
    let path = exporter.store_path().to_owned();
    let uid = uid_of(&path);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let stop = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || {
            let file = open_store(&path, uid).unwrap();
            let mut reads = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                match read_store(&file) {
                    Ok(s) => {
                        let f = s.totals.fixed_readings();
                        // bytes and requests slots of the single-process table
                        assert_eq!(f[0], f[2] * 4096);
                        assert_eq!(s.totals.histogram(0).counts().iter().sum::<u64>(), f[2]);
                        reads += 1;
                    }
                    Err(Skip::Busy) => {}
                    Err(e) => panic!("{e}"),
                }
            }
            reads
        })
    };
    let batch: Vec<Event> = (0..50).flat_map(|_| transfer(4096, 20)).collect();
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        exporter.record(&batch);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0);
}

/// Counts the warnings logged while it is the default subscriber.
struct WarningCounter(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl tracing::Subscriber for WarningCounter {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        if *event.metadata().level() == tracing::Level::WARN {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn each_hostile_file_is_warned_about_once() {
    let dir = tempfile::tempdir().unwrap();
    let exporter =
        MultiProcessExporter::with_settings("owner", &settings(dir.path(), free_port())).unwrap();
    let real = std::fs::read(exporter.store_path()).unwrap();
    let mut foreign = real.clone();
    foreign[..8].copy_from_slice(b"NIXLMPS1");
    plant(dir.path(), "magic", &foreign);
    plant(dir.path(), "short", &real[..100]);
    std::os::unix::fs::symlink("/etc/hostname", dir.path().join("nixl-mp.1.0.link.store")).unwrap();
    let warnings = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = WarningCounter(std::sync::Arc::clone(&warnings));
    tracing::subscriber::with_default(counter, || {
        for _ in 0..3 {
            let body = String::from_utf8(exporter.render(Format::Text)).unwrap();
            assert_eq!(body.matches("agent_tx_bytes_total{").count(), 1);
        }
    });
    assert_eq!(warnings.load(std::sync::atomic::Ordering::Relaxed), 3);
}

#[test]
fn a_directory_others_can_write_is_warned_about() {
    use std::os::unix::fs::PermissionsExt;
    let base = tempfile::tempdir().unwrap();
    let open_dir = base.path().join("open");
    std::fs::create_dir(&open_dir).unwrap();
    std::fs::set_permissions(&open_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let private = base.path().join("private");
    std::fs::create_dir(&private).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    for (dir, expected) in [(&open_dir, 1), (&private, 0)] {
        let warnings = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = WarningCounter(std::sync::Arc::clone(&warnings));
        tracing::subscriber::with_default(counter, || {
            MultiProcessExporter::with_settings("a", &settings(dir, free_port())).unwrap();
        });
        assert_eq!(
            warnings.load(std::sync::atomic::Ordering::Relaxed),
            expected,
            "{}",
            dir.display()
        );
    }
}
