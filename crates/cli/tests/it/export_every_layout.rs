//! `nixl-telemetry export` follows every ring of a directory, whatever its
//! layout (our rings of versions 1–4 with their trailer, the rings the NIXL
//! releases wrote), consumes them, and feeds each agent's events to its own
//! exporter: exact with the CSV plug-in, one endpoint with an `agent_name`
//! series per agent with the Prometheus plug-in. SIGTERM and SIGINT drain,
//! flush and exit 0.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::export_support::*;
use nixl_telemetry::clock;
use nixl_telemetry::ring::layout;
use nixl_telemetry::{Category, Event};
use nixl_telemetry_testsupport::nixl_ring::ring_bytes;
use serde_json::Value;

const LAYOUTS: [(&str, &layout::RingLayout); 5] = [
    ("ours-v1", &layout::V1),
    ("ours-v2-named", &layout::V2_NAMED),
    ("ours-v2-typed", &layout::V2_TYPED),
    ("ours-v3", &layout::V3),
    ("ours-v4", &layout::V4),
];
const RELEASES: [&str; 5] = ["1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.5.1"];

/// What our reader reads from a ring: (timestamp, category, name, value),
/// the name as the exporter receives it (an error type as its status).
fn reference_events(path: &Path) -> Vec<(Option<u64>, Option<i64>, String, u64)> {
    let out = Command::new(env!("CARGO_BIN_EXE_telemetry_reader"))
        .args(["--once", "--peek", "--json", "--quiet"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).unwrap();
            let name = v["name"].as_str().unwrap();
            let name = match name.strip_prefix("agent_err_") {
                Some(status) => format!("NIXL_ERR_{}", status.to_ascii_uppercase()),
                None => name.to_owned(),
            };
            (
                v["timestamp_us"].as_u64(),
                v["category_id"].as_i64(),
                name,
                v["value"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn every_layout_is_exported_consumed_and_drained_at_sigterm() {
    let tmp = tempfile::tempdir().unwrap();
    let rings = tmp.path().join("rings");
    std::fs::create_dir(&rings).unwrap();
    let plugins = csv_plugins(tmp.path());
    // Our rings, their producers alive while the sidecar runs.
    let mut writers = Vec::new();
    for (agent, ring_layout) in LAYOUTS {
        writers.push(ring(&rings, agent, ring_layout, 64, &workload_events(1)));
    }
    // The rings the releases wrote, as they wrote them.
    for release in RELEASES {
        let from = test_data()
            .join("nixl_releases")
            .join(release)
            .join("initiator");
        std::fs::copy(from, rings.join(format!("nixl-{release}"))).unwrap();
    }
    let mut expected = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(&rings).unwrap() {
        let path = entry.unwrap().path();
        expected.insert(
            path.file_name().unwrap().to_string_lossy().into_owned(),
            reference_events(&path),
        );
    }

    let start_us = clock::system_now_us();
    let (mut sidecar, csv) = csv_sidecar(tmp.path(), &rings, &plugins, &[]);
    sidecar.wait_for_log("Agent ours-v4: following", Duration::from_secs(20));
    // More events while it runs, then SIGTERM at once: they are drained.
    let late = Event::new(99, Category::TRANSFER, "agent_rx_bytes", 777);
    for w in &mut writers {
        assert_eq!(w.push_batch(&[late]), 1);
    }
    let (status, log) = sidecar.stop("TERM");
    let end_us = clock::system_now_us();
    assert!(status.success(), "exit {status}:\n{log}");
    assert!(!log.contains(" WARN "), "{log}");
    assert!(log.contains("stopped; "), "{log}");

    for (agent, want) in &expected {
        // The agent's file also holds the sidecar's figures about it.
        let (own, got): (Vec<CsvEvent>, Vec<CsvEvent>) =
            read_csv(&csv.join(format!("{agent}.csv")))
                .into_iter()
                .partition(|e| e.name.starts_with("export_"));
        let mut want = want.clone();
        if agent == "ours-v1" {
            want.push((Some(99), Some(1), "agent_rx_bytes".into(), 777));
        } else if agent.starts_with("ours-") {
            want.push((None, None, "agent_rx_bytes".into(), 777));
        }
        assert_eq!(got.len(), want.len(), "{agent}: {got:?}");
        for (g, (ts, cat, name, value)) in got.iter().zip(&want) {
            assert_eq!((&g.name, g.value), (name, *value), "{agent}");
            match ts {
                Some(ts) => assert_eq!(g.timestamp_us, *ts, "{agent}: the slot's time"),
                None => assert!(
                    (start_us..=end_us).contains(&g.timestamp_us),
                    "{agent}: stamped when read: {} not in [{start_us}, {end_us}]",
                    g.timestamp_us
                ),
            }
            if let Some(cat) = cat {
                assert_eq!(i64::from(g.category), *cat, "{agent}: {name}");
            } else if name.starts_with("NIXL_ERR_") {
                assert_eq!(g.category, Category::ERROR.0, "{agent}: {name}");
            }
        }
        let read: u64 = own
            .iter()
            .filter(|e| e.name == "export_events_read")
            .map(|e| e.value)
            .sum();
        assert_eq!(read, want.len() as u64, "{agent}");
        // Consumed as NIXL's reader consumes: nothing left unread.
        let (write, read) = positions(&rings.join(agent));
        assert_eq!(write, read, "{agent}: consumed");
    }
    // The sidecar's own agent has its own file, with its figures.
    let own = read_csv(&csv.join("nixl-telemetry-export.csv"));
    let total =
        |name: &str| -> u64 { own.iter().filter(|e| e.name == name).map(|e| e.value).sum() };
    let events: usize = expected.values().map(Vec::len).sum::<usize>() + LAYOUTS.len();
    assert_eq!(total("export_events_read"), events as u64);
    assert_eq!(
        total("export_rings_opened"),
        (LAYOUTS.len() + RELEASES.len()) as u64
    );
    assert!(total("export_read_passes") >= 1);
    assert!(own.iter().all(|e| e.category == Category::SYSTEM.0));
    drop(writers);
}

#[test]
fn one_prometheus_endpoint_serves_every_agent() {
    let tmp = tempfile::tempdir().unwrap();
    let rings = tmp.path().join("rings");
    std::fs::create_dir(&rings).unwrap();
    let plugins = prometheus_plugins(tmp.path());
    let mut writers = Vec::new();
    for (scale, (agent, ring_layout)) in LAYOUTS.into_iter().enumerate() {
        writers.push(ring(
            &rings,
            agent,
            ring_layout,
            64,
            &workload_events(scale as u64 + 1),
        ));
    }
    // A version-4 ring of NIXL 1.5 reporting events it dropped (type 20).
    let mut v4 = std::fs::read(test_data().join("nixl_releases/1.5.1/initiator")).unwrap();
    let capacity = u64::from_le_bytes(v4[24..32].try_into().unwrap());
    let write = u64::from_le_bytes(v4[0..8].try_into().unwrap());
    let slot = 40 + 16 * write as usize;
    v4[slot..slot + 4].copy_from_slice(&20u32.to_le_bytes());
    v4[slot + 8..slot + 16].copy_from_slice(&36u64.to_le_bytes());
    v4[0..8].copy_from_slice(&((write + 1) % capacity).to_le_bytes());
    std::fs::write(rings.join("nixl-1.5.1"), v4).unwrap();

    let addr = free_addr();
    let _sidecar = Sidecar::start(
        export_command(&rings, "prometheus")
            .arg("--plugin-dir")
            .arg(&plugins)
            .arg("--output-path")
            .arg(addr.to_string()),
        &tmp.path().join("export.log"),
    );
    let body = scrape_until(addr, "every agent", Duration::from_secs(20), |body| {
        LAYOUTS.iter().all(|(agent, _)| {
            agent_value(body, "agent_memory_deregistered_total", agent, None) == Some(65536.0)
        }) && agent_value(body, "agent_memory_deregistered_total", "nixl-1.5.1", None).is_some()
    });
    for (scale, (agent, _)) in LAYOUTS.iter().enumerate() {
        let bytes = 3.0 * 4096.0 * (scale + 1) as f64;
        assert_eq!(
            agent_value(&body, "agent_tx_bytes_total", agent, None),
            Some(bytes),
            "{agent}"
        );
        assert_eq!(
            agent_value(
                &body,
                "agent_errors_total",
                agent,
                Some("status=\"not_found\"")
            ),
            Some(1.0),
            "{agent}"
        );
        assert_eq!(
            agent_value(&body, "agent_xfer_time_us_count", agent, None),
            Some(3.0)
        );
    }
    // Type 20 as NIXL 1.5 exports it: the counter of dropped events.
    assert_eq!(
        agent_value(
            &body,
            "agent_telemetry_events_dropped_total",
            "nixl-1.5.1",
            None
        ),
        Some(36.0)
    );
    // The sidecar's own agent, and its per-agent figures.
    let body = scrape_until(
        addr,
        "the sidecar's own series",
        Duration::from_secs(10),
        |b| {
            agent_value(
                b,
                "export_rings_opened_total",
                "nixl-telemetry-export",
                None,
            ) == Some(6.0)
                && agent_value(b, "export_events_read_total", "ours-v1", None).is_some()
        },
    );
    assert_eq!(
        agent_value(&body, "export_events_read_total", "ours-v1", None),
        Some(workload_events(1).len() as f64)
    );
    assert!(agent_value(&body, "export_fill_peak_percent_total", "ours-v1", None).unwrap() > 0.0);
    drop(writers);
}

#[test]
fn sigint_also_drains_and_exits_zero() {
    let tmp = tempfile::tempdir().unwrap();
    let rings = tmp.path().join("rings");
    std::fs::create_dir(&rings).unwrap();
    let plugins = csv_plugins(tmp.path());
    let mut writer = ring(&rings, "a", &layout::V4, 1024, &[]);
    let csv = tmp.path().join("a.csv");
    let mut sidecar = Sidecar::start(
        export_command(&rings, "csv")
            .arg("--plugin-dir")
            .arg(&plugins)
            // A long interval: only the drain at the signal reads these.
            .args(["--interval", "60000"])
            .env("NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH", &csv),
        &tmp.path().join("export.log"),
    );
    sidecar.wait_for_log("Agent a: following", Duration::from_secs(20));
    let events: Vec<Event> = (0..500)
        .map(|i| Event::new(0, Category::TRANSFER, "agent_tx_bytes", i))
        .collect();
    assert_eq!(writer.push_batch(&events), 500);
    let started = Instant::now();
    let (status, log) = sidecar.stop("INT");
    assert!(status.success(), "{log}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let got: Vec<u64> = read_csv(&csv)
        .into_iter()
        .filter(|e| e.name == "agent_tx_bytes")
        .map(|e| e.value)
        .collect();
    assert_eq!(got, (0..500).collect::<Vec<u64>>());
}

#[test]
fn unusable_settings_exit_2_naming_what_is_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let out = export_command(tmp.path(), "no_such_plugin")
        .arg("--plugin-dir")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("libtelemetry_exporter_no_such_plugin.so not found"),
        "{err}"
    );

    let mut cmd = export_command(tmp.path(), "nop");
    cmd.args(["--interval", "0"]);
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("NIXL_TELEMETRY_RUN_INTERVAL") && err.contains("accepted"),
        "{err}"
    );

    let out = bare_cli().arg("export").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("NIXL_TELEMETRY_DIR"), "{err}");
}

/// `nixl-telemetry` with an empty environment.
fn bare_cli() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nixl-telemetry"));
    cmd.env_clear();
    cmd
}

#[test]
fn a_ring_rewritten_in_place_in_another_layout_is_a_new_producer() {
    use std::os::unix::fs::FileExt;
    let tmp = tempfile::tempdir().unwrap();
    let rings = tmp.path().join("rings");
    std::fs::create_dir(&rings).unwrap();
    let plugins = prometheus_plugins(tmp.path());
    // A job of NIXL 1.5 (version 4)...
    let v4 = ring_bytes(
        &layout::V4,
        64,
        &[Event::new(1, Category::TRANSFER, "agent_tx_bytes", 254)],
    );
    std::fs::write(rings.join("restarted"), &v4).unwrap();
    let addr = free_addr();
    let mut sidecar = Sidecar::start(
        export_command(&rings, "prometheus")
            .arg("--plugin-dir")
            .arg(&plugins)
            .arg("--output-path")
            .arg(addr.to_string())
            .args(["--interval", "20"]),
        &tmp.path().join("export.log"),
    );
    scrape_until(addr, "the version-4 ring", Duration::from_secs(20), |b| {
        agent_value(b, "agent_tx_bytes_total", "restarted", None) == Some(254.0)
    });
    // ...restarted under a release writing version 1, with the same agent
    // name: the ring is created in place over the old one, then 1,120 bytes
    // are received.
    let rx: Vec<Event> = (0..10)
        .map(|i| Event::new(100 + i, Category::TRANSFER, "agent_rx_bytes", 112))
        .collect();
    let v1 = ring_bytes(&layout::V1, 64, &rx);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(rings.join("restarted"))
        .unwrap();
    file.set_len(v1.len() as u64).unwrap();
    file.write_all_at(&v1, 0).unwrap();
    let body = scrape_until(addr, "the version-1 events", Duration::from_secs(20), |b| {
        agent_value(b, "agent_rx_bytes_total", "restarted", None).is_some()
    });
    std::thread::sleep(Duration::from_millis(300));
    let body = http_get(addr, "/metrics", None)
        .map(|(_, b)| b)
        .unwrap_or(body);
    assert_eq!(
        agent_value(&body, "agent_rx_bytes_total", "restarted", None),
        Some(1120.0),
        "{body}"
    );
    assert_eq!(
        agent_value(&body, "agent_tx_bytes_total", "restarted", None),
        Some(254.0)
    );
    for (series, value) in samples(&body) {
        assert!(
            value < 1e15,
            "{series} {value}: a value read in the old layout"
        );
    }
    sidecar.wait_for_log("rewritten in place", Duration::from_secs(5));
    let (status, log) = sidecar.stop("TERM");
    assert!(status.success(), "{log}");
    let warning = log
        .lines()
        .find(|l| l.contains("rewritten in place"))
        .unwrap();
    assert!(
        warning.contains(" WARN ")
            && warning.contains("was version 4")
            && warning.contains("now version 1")
            && warning.contains("a new producer"),
        "{warning}"
    );
}
