//! Agents come and go under `nixl-telemetry export`: a new ring is picked up
//! (watched with inotify, and polled); an agent whose ring file is removed,
//! or whose producer exits, keeps its series for the grace time, then they
//! are dropped; a ring replaced by a restarted producer is followed from its
//! start with the counters going on, never reset.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::export_support::*;
use nixl_telemetry::ring::layout;
use nixl_telemetry::{Category, Event};

fn tx(bytes: u64) -> Event {
    Event::new(1, Category::TRANSFER, "agent_tx_bytes", bytes)
}

fn prometheus_sidecar(tmp: &Path, rings: &Path, extra: &[&str]) -> (Sidecar, SocketAddr) {
    let plugins = prometheus_plugins(tmp);
    let addr = free_addr();
    let sidecar = Sidecar::start(
        export_command(rings, "prometheus")
            .arg("--plugin-dir")
            .arg(&plugins)
            .arg("--output-path")
            .arg(addr.to_string())
            .args(extra),
        &tmp.join("export.log"),
    );
    (sidecar, addr)
}

fn tx_total(addr: SocketAddr, agent: &str) -> Option<f64> {
    let (_, body) = http_get(addr, "/metrics", None).ok()?;
    agent_value(&body, "agent_tx_bytes_total", agent, None)
}

fn new_ring_is_picked_up(poll: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let rings = tmp.path().join("rings");
    std::fs::create_dir(&rings).unwrap();
    let mut args = vec!["--interval", "200"];
    if poll {
        args.push("--poll");
    }
    let (mut sidecar, addr) = prometheus_sidecar(tmp.path(), &rings, &args);
    scrape_until(addr, "the endpoint", Duration::from_secs(20), |_| true);
    sidecar.wait_for_log(
        if poll {
            "polled every 200 ms"
        } else {
            "watched with inotify"
        },
        Duration::from_secs(5),
    );
    let created = Instant::now();
    let _late = ring(&rings, "late", &layout::V1, 64, &[tx(5)]);
    wait_for("the late agent", Duration::from_secs(10), || {
        (tx_total(addr, "late") == Some(5.0)).then_some(())
    });
    // Within an interval, give or take a scrape and a loaded machine.
    let took = created.elapsed();
    assert!(took < Duration::from_secs(2), "picked up after {took:?}");
}

#[test]
fn a_new_ring_is_picked_up_when_watched() {
    new_ring_is_picked_up(false);
}

#[test]
fn a_new_ring_is_picked_up_when_polled() {
    new_ring_is_picked_up(true);
}

#[test]
fn a_removed_agent_keeps_its_series_for_the_grace_time_then_loses_them() {
    let tmp = tempfile::tempdir().unwrap();
    let rings = tmp.path().join("rings");
    std::fs::create_dir(&rings).unwrap();
    let _gone = ring(&rings, "gone", &layout::V1, 64, &[tx(7)]);
    let _stays = ring(&rings, "stays", &layout::V4, 64, &[tx(9)]);
    let (mut sidecar, addr) =
        prometheus_sidecar(tmp.path(), &rings, &["--interval", "50", "--grace", "2"]);
    wait_for("both agents", Duration::from_secs(20), || {
        (tx_total(addr, "gone") == Some(7.0) && tx_total(addr, "stays") == Some(9.0)).then_some(())
    });
    let removed = Instant::now();
    std::fs::remove_file(rings.join("gone")).unwrap();
    sidecar.wait_for_log("Agent gone: gone for 2.0 s", Duration::from_secs(10));
    let dropped_after = removed.elapsed();
    assert!(
        dropped_after >= Duration::from_millis(1900),
        "dropped after {dropped_after:?}, before the grace time"
    );
    let body = scrape_until(addr, "the series dropped", Duration::from_secs(5), |b| {
        agent_value(b, "agent_tx_bytes_total", "gone", None).is_none()
    });
    assert_eq!(
        agent_value(&body, "agent_tx_bytes_total", "stays", None),
        Some(9.0)
    );
    scrape_until(addr, "the drop counted", Duration::from_secs(5), |b| {
        agent_value(
            b,
            "export_agents_dropped_total",
            "nixl-telemetry-export",
            None,
        ) == Some(1.0)
            && agent_value(
                b,
                "export_rings_closed_total",
                "nixl-telemetry-export",
                None,
            ) == Some(1.0)
    });
}

#[test]
fn an_exited_producer_is_dropped_after_the_grace_time_and_back_when_its_ring_is_taken_over() {
    let tmp = tempfile::tempdir().unwrap();
    let rings = tmp.path().join("rings");
    std::fs::create_dir(&rings).unwrap();
    let first = ring(&rings, "a", &layout::V1, 64, &[tx(3)]);
    let (mut sidecar, addr) =
        prometheus_sidecar(tmp.path(), &rings, &["--interval", "50", "--grace", "1"]);
    wait_for("agent a", Duration::from_secs(20), || {
        (tx_total(addr, "a") == Some(3.0)).then_some(())
    });
    // The producer exits cleanly: its file stays.
    drop(first);
    sidecar.wait_for_log("Agent a: gone for 1.0 s", Duration::from_secs(10));
    scrape_until(addr, "a's series dropped", Duration::from_secs(5), |b| {
        agent_value(b, "agent_tx_bytes_total", "a", None).is_none()
    });
    assert!(rings.join("a").exists());
    // A new producer of the agent adopts the file and records: the agent is
    // back, its counters starting over as the restarted producer's would.
    let _second = ring(&rings, "a", &layout::V1, 64, &[tx(4)]);
    wait_for("agent a back", Duration::from_secs(10), || {
        (tx_total(addr, "a") == Some(4.0)).then_some(())
    });
}

/// Scrapes while `during` runs, and checks the counter never went down.
fn never_decreasing(addr: SocketAddr, agent: &str, seen: &mut Vec<f64>) {
    if let Some(v) = tx_total(addr, agent) {
        if let Some(&last) = seen.last() {
            assert!(
                v >= last,
                "{agent}: agent_tx_bytes_total went from {last} to {v}"
            );
        }
        seen.push(v);
    }
}

#[test]
fn a_replaced_ring_is_followed_from_its_start_with_counters_going_on() {
    let tmp = tempfile::tempdir().unwrap();
    let rings = tmp.path().join("rings");
    std::fs::create_dir(&rings).unwrap();
    let first = ring(&rings, "a", &layout::V1, 64, &[tx(100), tx(20)]);
    // A NIXL ring (no trailer) that will be replaced by a copy of itself.
    let nixl = test_data().join("nixl_releases/1.5.1/initiator");
    std::fs::copy(&nixl, rings.join("n")).unwrap();
    let (mut sidecar, addr) = prometheus_sidecar(tmp.path(), &rings, &["--interval", "50"]);
    let mut seen = Vec::new();
    let mut seen_n = Vec::new();
    wait_for("both agents", Duration::from_secs(20), || {
        never_decreasing(addr, "a", &mut seen);
        never_decreasing(addr, "n", &mut seen_n);
        (seen.last() == Some(&120.0) && seen_n.last().is_some_and(|&v| v > 0.0)).then_some(())
    });
    let n_once = *seen_n.last().unwrap();
    // The producer restarts in another layout: the consumed ring cannot be
    // continued, so a new file takes the name.
    let old_inode = std::fs::metadata(rings.join("a")).unwrap();
    drop(first);
    let _second = ring(&rings, "a", &layout::V4, 64, &[tx(3)]);
    let new_inode = std::fs::metadata(rings.join("a")).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_ne!(
        old_inode.ino(),
        new_inode.ino(),
        "a new file at the same name"
    );
    // NIXL's ring replaced by a new file too (a restarted NIXL producer).
    let copy = rings.join(".n.tmp");
    std::fs::copy(&nixl, &copy).unwrap();
    std::fs::rename(&copy, rings.join("n")).unwrap();
    wait_for("the replacements read", Duration::from_secs(10), || {
        never_decreasing(addr, "a", &mut seen);
        never_decreasing(addr, "n", &mut seen_n);
        (seen.last() == Some(&123.0) && seen_n.last() == Some(&(2.0 * n_once))).then_some(())
    });
    for _ in 0..5 {
        never_decreasing(addr, "a", &mut seen);
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = sidecar.log();
    assert!(!log.contains(" WARN "), "{log}");
    sidecar.wait_for_log("Agent a: following", Duration::from_secs(1));
    let body = scrape_until(addr, "own figures", Duration::from_secs(5), |b| {
        agent_value(b, "export_rings_opened_total", "a", None) == Some(2.0)
    });
    assert_eq!(
        agent_value(&body, "export_rings_opened_total", "n", None),
        Some(2.0)
    );
}

#[test]
fn a_ring_moved_aside_by_a_restarted_producer_counts_for_its_agent() {
    let tmp = tempfile::tempdir().unwrap();
    let rings = tmp.path().join("rings");
    std::fs::create_dir(&rings).unwrap();
    // The first producer dies with events unread; the next one, in another
    // layout, moves its ring aside (`a.stale-<µs>`) and starts a new one.
    drop(ring(&rings, "a", &layout::V1, 64, &[tx(1000), tx(200)]));
    let _second = ring(&rings, "a", &layout::V4, 64, &[tx(30)]);
    let stale: Vec<String> = std::fs::read_dir(&rings)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("a.stale-"))
        .collect();
    assert_eq!(stale.len(), 1, "{stale:?}");
    let (_sidecar, addr) = prometheus_sidecar(tmp.path(), &rings, &["--interval", "50"]);
    let body = scrape_until(addr, "agent a", Duration::from_secs(20), |b| {
        agent_value(b, "agent_tx_bytes_total", "a", None) == Some(1230.0)
    });
    assert!(
        !body.contains("a.stale-"),
        "the moved ring is agent a's:\n{body}"
    );
}

/// Descriptors of process `pid` that lead to removed files.
fn deleted_descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.flatten()
                .filter(|fd| {
                    std::fs::read_link(fd.path())
                        .is_ok_and(|target| target.to_string_lossy().ends_with("(deleted)"))
                })
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn more_rings_than_descriptors_neither_silence_the_endpoint_nor_stay_held() {
    let tmp = tempfile::tempdir().unwrap();
    let rings = tmp.path().join("rings");
    std::fs::create_dir(&rings).unwrap();
    // 150 rings of 72-odd bytes under a limit of 96 descriptors, soft and
    // hard: 32 fit beside the 64 kept for the endpoint and the directory.
    let bytes = nixl_telemetry_testsupport::nixl_ring::ring_bytes(&layout::V1, 2, &[tx(1)]);
    for i in 0..150 {
        std::fs::write(rings.join(format!("a{i:03}")), &bytes).unwrap();
    }
    let plugins = prometheus_plugins(tmp.path());
    let addr = free_addr();
    let mut cmd = std::process::Command::new("prlimit");
    without_nixl_env(&mut cmd)
        .args(["--nofile=96:96", "--"])
        .arg(env!("CARGO_BIN_EXE_nixl-telemetry"))
        .arg("export")
        .arg("--dir")
        .arg(&rings)
        .args(["--exporter", "prometheus", "--plugin-dir"])
        .arg(&plugins)
        .arg("--output-path")
        .arg(addr.to_string())
        .args(["--interval", "50", "--grace", "1"]);
    let mut sidecar = Sidecar::start(&mut cmd, &tmp.path().join("export.log"));
    sidecar.wait_for_log(
        "--max-rings 1024 lowered to 32: the descriptor limit (RLIMIT_NOFILE) is 96",
        Duration::from_secs(20),
    );
    sidecar.wait_for_log("already follows 32 rings", Duration::from_secs(20));
    // The endpoint answers, scrape after scrape.
    for _ in 0..10 {
        scrape_until(addr, "the endpoint", Duration::from_secs(5), |b| {
            b.contains("agent_tx_bytes_total")
        });
        std::thread::sleep(Duration::from_millis(50));
    }
    // The rings go; a new one comes and is exported; nothing removed stays
    // open.
    for i in 0..150 {
        std::fs::remove_file(rings.join(format!("a{i:03}"))).unwrap();
    }
    let _late = ring(&rings, "late", &layout::V1, 64, &[tx(5)]);
    scrape_until(
        addr,
        "the ring after the others",
        Duration::from_secs(20),
        |b| agent_value(b, "agent_tx_bytes_total", "late", None) == Some(5.0),
    );
    wait_for("removed rings let go", Duration::from_secs(10), || {
        (deleted_descriptors(sidecar.pid()) == 0).then_some(())
    });
    let (status, log) = sidecar.stop("TERM");
    assert!(status.success(), "{log}");
    assert!(!log.contains("Too many open files"), "{log}");
}
