//! A ring directory others can write to: every kind of file that is no ring
//! the sidecar may follow is refused with one warning naming it and the
//! reason, never a crash, never unbounded memory, never a stall of the
//! other agents.

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::export_support::*;
use nixl_telemetry::ring::layout;
use nixl_telemetry::{Category, Event};

fn tx(bytes: u64) -> Event {
    Event::new(1, Category::TRANSFER, "agent_tx_bytes", bytes)
}

/// A ring header: (write_pos, read_pos, version, capacity, mask).
fn header(write: u64, read: u64, version: i32, capacity: u64, mask: u64) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend(write.to_le_bytes());
    h.extend(read.to_le_bytes());
    h.extend(version.to_le_bytes());
    h.extend(version.to_le_bytes());
    h.extend(capacity.to_le_bytes());
    h.extend(mask.to_le_bytes());
    h
}

fn with_slots(mut header: Vec<u8>, bytes: usize) -> Vec<u8> {
    header.resize(header.len() + bytes, 0);
    header
}

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

/// Lines of `log` that are warnings naming `name`.
fn warnings_about(log: &str, name: &str) -> usize {
    log.lines()
        .filter(|l| l.contains(" WARN ") && l.contains(&format!("/{name}:")))
        .count()
}

#[test]
fn every_hostile_file_is_refused_once_and_the_good_agent_is_exported() {
    let tmp = tempfile::tempdir().unwrap();
    let rings = tmp.path().join("rings");
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&rings).unwrap();
    std::fs::create_dir(&outside).unwrap();
    let plugins = csv_plugins(tmp.path());

    let mut good = ring(&rings, "good", &layout::V1, 64, &[tx(1)]);
    let secret = ring(&outside, "secret", &layout::V1, 64, &[tx(666)]);
    let garbage: Vec<u8> = (0..5000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(rings.join("garbage"), garbage).unwrap();
    std::fs::write(rings.join("short"), b"0123456789").unwrap();
    for (name, file) in [
        ("version9", with_slots(header(0, 0, 9, 8, 7), 8 * 56)),
        ("capacity3", with_slots(header(0, 0, 1, 3, 2), 3 * 56)),
        ("beyond", with_slots(header(0, 0, 1, 1024, 1023), 56)),
        ("v2-odd", with_slots(header(0, 0, 2, 8, 7), 8 * 30)),
        ("position", with_slots(header(9, 0, 4, 8, 7), 8 * 16)),
    ] {
        std::fs::write(rings.join(name), file).unwrap();
    }
    mkfifo(&rings.join("fifo"));
    symlink(outside.join("secret"), rings.join("link-out")).unwrap();
    symlink("/dev/zero", rings.join("link-dev")).unwrap();
    symlink("nowhere", rings.join("dangling")).unwrap();
    symlink("..", rings.join("link-up")).unwrap();
    std::fs::create_dir(rings.join("subdir")).unwrap();
    let hostile = [
        ("garbage", "ring version"),
        ("short", "too short"),
        ("version9", "ring version 9"),
        ("capacity3", "capacity 3 is not a power of two"),
        ("beyond", "needs"),
        ("v2-odd", "matches neither version-2 layout"),
        ("position", "write_pos 9 is outside"),
        ("fifo", "not a regular file (a FIFO)"),
        ("link-out", "symbolic link leading out of the directory"),
        ("link-dev", "symbolic link leading out of the directory"),
        ("dangling", "symbolic link to nothing"),
        ("link-up", "symbolic link leading out of the directory"),
    ];

    // Listed every 20 ms: dozens of scans see every file again.
    let (mut sidecar, csv) = csv_sidecar(tmp.path(), &rings, &plugins, &["--poll"]);
    sidecar.wait_for_log("Agent good: following", Duration::from_secs(20));
    // Files that are no valid ring yet are given a moment (a producer may be
    // creating one in place) before they are refused.
    for (name, _) in hostile {
        sidecar.wait_for_log(&format!("/{name}:"), Duration::from_secs(10));
    }
    // The good agent goes on while the hostile files stay.
    for i in 2..=50 {
        good.push_batch(&[tx(i)]);
        std::thread::sleep(Duration::from_millis(20));
    }
    let (status, log) = sidecar.stop("TERM");
    assert!(status.success(), "{log}");
    for (name, reason) in hostile {
        assert_eq!(warnings_about(&log, name), 1, "{name}: one warning:\n{log}");
        let line = log
            .lines()
            .find(|l| l.contains(&format!("/{name}:")))
            .unwrap();
        assert!(line.contains(reason), "{name}: {line}");
    }
    assert!(
        !log.contains("subdir"),
        "a subdirectory is passed over silently:\n{log}"
    );
    let got: Vec<u64> = read_csv(&csv.join("good.csv"))
        .into_iter()
        .filter(|e| e.name == "agent_tx_bytes")
        .map(|e| e.value)
        .collect();
    assert_eq!(got, (1..=50).collect::<Vec<u64>>());
    assert!(!csv.join("secret.csv").exists() && !csv.join("link-out.csv").exists());
    // The secret ring outside was never touched (not consumed).
    let (write, read) = positions(&outside.join("secret"));
    assert_eq!((write, read), (1, 0));
    drop(secret);
    // Files refused, by cause, among the sidecar's own figures.
    let own = read_csv(&csv.join("nixl-telemetry-export.csv"));
    let refused = |cause: &str| -> u64 {
        own.iter()
            .filter(|e| e.name == format!("export_refused_{cause}"))
            .map(|e| e.value)
            .sum()
    };
    assert_eq!(refused("symlink"), 4);
    assert_eq!(refused("not_regular_file"), 1);
    assert_eq!(refused("too_short"), 1);
    assert_eq!(refused("unknown_version"), 2);
    assert_eq!(refused("bad_header"), 4);
}

#[test]
fn files_truncated_or_grown_while_read() {
    let tmp = tempfile::tempdir().unwrap();
    let rings = tmp.path().join("rings");
    std::fs::create_dir(&rings).unwrap();
    let plugins = csv_plugins(tmp.path());
    // NIXL rings (no writer holds them): one to truncate, one to grow.
    let nixl = test_data().join("nixl_releases/1.5.1/initiator");
    std::fs::copy(&nixl, rings.join("cut")).unwrap();
    std::fs::copy(&nixl, rings.join("grown")).unwrap();
    let mut good = ring(&rings, "good", &layout::V4, 64, &[tx(1)]);
    let (mut sidecar, csv) = csv_sidecar(tmp.path(), &rings, &plugins, &[]);
    sidecar.wait_for_log("Agent grown: following", Duration::from_secs(20));
    sidecar.wait_for_log("Agent cut: following", Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(200));
    std::fs::OpenOptions::new()
        .write(true)
        .open(rings.join("cut"))
        .unwrap()
        .set_len(100)
        .unwrap();
    let grown = std::fs::OpenOptions::new()
        .write(true)
        .open(rings.join("grown"))
        .unwrap();
    grown.set_len(1 << 20).unwrap();
    sidecar.wait_for_log("/cut: file truncated to 100 bytes", Duration::from_secs(5));
    for i in 2..=20 {
        good.push_batch(&[tx(i)]);
        std::thread::sleep(Duration::from_millis(20));
    }
    let (status, log) = sidecar.stop("TERM");
    assert!(status.success(), "{log}");
    assert_eq!(warnings_about(&log, "cut"), 1, "{log}");
    assert_eq!(warnings_about(&log, "grown"), 0, "{log}");
    let got = read_csv(&csv.join("good.csv"))
        .into_iter()
        .filter(|e| e.name == "agent_tx_bytes")
        .count();
    assert_eq!(got, 20);
    // Both NIXL rings' events were exported before the one was cut.
    for agent in ["cut", "grown"] {
        let n = read_csv(&csv.join(format!("{agent}.csv")))
            .iter()
            .filter(|e| e.name == "agent_memory_registered")
            .count();
        assert_eq!(n, 1, "{agent}");
    }
}

/// `VmHWM` of process `pid`, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

#[test]
fn a_flooding_ring_neither_stalls_the_others_nor_grows_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let rings = tmp.path().join("rings");
    std::fs::create_dir(&rings).unwrap();
    let plugins = prometheus_plugins(tmp.path());
    // A version-4 ring of 2^20 slots, all full of events (type 2, value 1).
    let capacity: u64 = 1 << 20;
    let mut flood = header(capacity - 1, 0, 4, capacity, capacity - 1);
    let mut slot = [0u8; 16];
    slot[0..4].copy_from_slice(&2u32.to_le_bytes());
    slot[8..16].copy_from_slice(&1u64.to_le_bytes());
    flood.reserve(capacity as usize * 16);
    for _ in 0..capacity {
        flood.extend_from_slice(&slot);
    }
    std::fs::write(rings.join("flood"), flood).unwrap();
    let mut good = ring(&rings, "good", &layout::V1, 64, &[]);
    let addr = free_addr();
    let sidecar = Sidecar::start(
        export_command(&rings, "prometheus")
            .arg("--plugin-dir")
            .arg(&plugins)
            .arg("--output-path")
            .arg(addr.to_string())
            .args(["--interval", "20"]),
        &tmp.path().join("export.log"),
    );
    scrape_until(addr, "the flood started", Duration::from_secs(20), |b| {
        agent_value(b, "agent_tx_requests_num_total", "flood", None).is_some()
    });
    // While the flood is read, the good agent's event comes through.
    good.push_batch(&[tx(42)]);
    let start = Instant::now();
    let body = scrape_until(addr, "the good agent", Duration::from_secs(20), |b| {
        agent_value(b, "agent_tx_bytes_total", "good", None) == Some(42.0)
    });
    let flood_then = agent_value(&body, "agent_tx_requests_num_total", "flood", None).unwrap();
    eprintln!(
        "good agent exported {:?} after its event; the flood had {flood_then} of {} read",
        start.elapsed(),
        capacity - 1
    );
    scrape_until(addr, "the whole flood", Duration::from_secs(120), |b| {
        agent_value(b, "agent_tx_requests_num_total", "flood", None) == Some((capacity - 1) as f64)
    });
    // A 16 MiB ring read in bounded batches: the sidecar's memory is far
    // below the ring's size.
    let peak = peak_rss_kib(sidecar.pid());
    assert!(peak < 48 * 1024, "peak RSS {peak} KiB");
    let (status, log) = sidecar.stop("TERM");
    assert!(status.success(), "{log}");
}

#[test]
fn files_the_sidecar_may_not_read_or_write() {
    // As root every file is readable: run the sidecar as nobody.
    let root = rustix_is_root();
    if root
        && !Command::new("setpriv")
            .arg("--help")
            .output()
            .is_ok_and(|o| o.status.success())
    {
        panic!("setpriv (util-linux) is needed to run the sidecar as another user");
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let rings = tmp.path().join("rings");
    std::fs::create_dir(&rings).unwrap();
    std::fs::set_permissions(&rings, std::fs::Permissions::from_mode(0o755)).unwrap();
    let plugins = csv_plugins(tmp.path());
    std::fs::set_permissions(&plugins, std::fs::Permissions::from_mode(0o755)).unwrap();
    let nixl = test_data().join("nixl_releases/1.5.1/initiator");
    std::fs::copy(&nixl, rings.join("secret")).unwrap();
    std::fs::set_permissions(rings.join("secret"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::copy(&nixl, rings.join("readonly")).unwrap();
    std::fs::set_permissions(
        rings.join("readonly"),
        std::fs::Permissions::from_mode(0o444),
    )
    .unwrap();
    let csv = tmp.path().join("csv");
    std::fs::create_dir(&csv).unwrap();
    std::fs::set_permissions(&csv, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut cmd = if root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
        c.arg(env!("CARGO_BIN_EXE_nixl-telemetry"));
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_nixl-telemetry"))
    };
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("NIXL_") {
            cmd.env_remove(k);
        }
    }
    cmd.arg("export")
        .arg("--dir")
        .arg(&rings)
        .args(["--exporter", "csv", "--interval", "20", "--poll"])
        .arg("--plugin-dir")
        .arg(&plugins)
        .arg("--output-path")
        .arg(csv.join("{agent}.csv"));
    let mut sidecar = Sidecar::start(&mut cmd, &tmp.path().join("export.log"));
    sidecar.wait_for_log("Agent readonly: following", Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(300));
    let (status, log) = sidecar.stop("TERM");
    assert!(status.success(), "{log}");
    assert_eq!(warnings_about(&log, "secret"), 1, "{log}");
    assert!(log.contains("/secret: permission denied"), "{log}");
    assert_eq!(warnings_about(&log, "readonly"), 1, "{log}");
    assert!(log.contains("may read this ring but not write it"), "{log}");
    // Exported, but not consumed.
    assert_eq!(
        read_csv(&csv.join("readonly.csv"))
            .iter()
            .filter(|e| e.name == "agent_tx_bytes")
            .count(),
        3
    );
    let (write, read) = positions(&rings.join("readonly"));
    assert_ne!(write, read);
}

fn rustix_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|v| v.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

#[test]
fn a_ring_name_cannot_forge_log_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let rings = tmp.path().join("rings");
    std::fs::create_dir(&rings).unwrap();
    let plugins = csv_plugins(tmp.path());
    let forged = "nixl-telemetry export: warning: forged";
    let evil = ring(&rings, "evil", &layout::V1, 64, &[tx(1)]);
    std::fs::rename(
        rings.join("evil"),
        rings.join(format!("evil\n{forged}\u{1b}[2J")),
    )
    .unwrap();
    drop(evil);
    let (mut sidecar, _csv) = csv_sidecar(tmp.path(), &rings, &plugins, &[]);
    sidecar.wait_for_log("evil\\x0anixl-telemetry export", Duration::from_secs(20));
    let (status, log) = sidecar.stop("TERM");
    assert!(status.success(), "{log}");
    assert!(
        !log.lines().any(|l| l.starts_with(forged)),
        "a forged line:\n{log}"
    );
    assert!(!log.contains('\u{1b}'), "{log}");
    assert!(log.contains("\\x1b[2J"), "{log}");
}
