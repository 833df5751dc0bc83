//! The plug-in as a host loads it: `NIXL_TELEMETRY_EXPORTER=otlp` and the
//! standard `OTEL_*` variables, through the C ABI, with the collector going
//! down mid-run. The host's books and the collector's agree:
//! what the collector got + what the host counts as lost = what was produced.
//! The test sets the process environment, so it runs in a process of its own.

use crate::common;
use nixl_telemetry_testsupport::child;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::*;
use nixl_telemetry::{Direction, Telemetry};

/// `target/<profile>`, where cargo puts `libtelemetry_exporter_otlp.so`.
fn plugin_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|d| d.parent()).unwrap().to_owned();
    let so = dir.join("libtelemetry_exporter_otlp.so");
    let built = std::fs::metadata(&so)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| panic!("{} is missing: run cargo build -p nixl-telemetry-exporter-otlp (scripts/test-otlp.sh does)", so.display()));
    // `cargo test` rebuilds the rlib, not the cdylib: refuse a stale one.
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for file in std::fs::read_dir(&src).unwrap() {
        let changed = file.unwrap().metadata().unwrap().modified().unwrap();
        assert!(
            changed <= built,
            "{} is older than the sources: run cargo build -p nixl-telemetry-exporter-otlp (scripts/test-otlp.sh does)",
            so.display()
        );
    }
    dir
}

/// Set in the process the test runs in.
const OWN_PROCESS: &str = "NIXL_OTLP_TEST_HOST_CHILD";

#[test]
#[ignore = "needs the OTLP receiver's Python packages: run scripts/test-otlp.sh"]
fn host_and_collector_books_balance_across_an_outage() {
    if !child::in_own_process(
        module_path!(),
        "host_and_collector_books_balance_across_an_outage",
        OWN_PROCESS,
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("requests.jsonl");
    let port = free_port();
    let mut receiver = Receiver::start_on(port, &out);
    for (k, v) in [
        ("NIXL_TELEMETRY_ENABLE", "1".to_owned()),
        ("NIXL_TELEMETRY_EXPORTER", "otlp".to_owned()),
        (
            "NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR",
            plugin_dir().display().to_string(),
        ),
        ("NIXL_TELEMETRY_RUN_INTERVAL", "10".to_owned()),
        ("NIXL_TELEMETRY_OTLP_EVENTS", "1".to_owned()),
        ("NIXL_TELEMETRY_OTLP_QUEUE_EVENTS", "300".to_owned()),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.base_url()),
        ("OTEL_METRIC_EXPORT_INTERVAL", "100".to_owned()),
        ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip".to_owned()),
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            "authorization=Bearer%20t0ken".to_owned(),
        ),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "2000".to_owned()),
        ("OTEL_SERVICE_NAME", "host-test".to_owned()),
        ("OTEL_RESOURCE_ATTRIBUTES", "rack=r1".to_owned()),
    ] {
        std::env::set_var(k, v);
    }
    std::env::remove_var("NIXL_TELEMETRY_DIR");
    std::env::remove_var("NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH");
    let telemetry = Telemetry::from_env("host-agent").expect("the otlp plug-in loads");
    let mut transfers = 0u64;
    let mut run = |telemetry: &Telemetry, rounds: usize| {
        for _ in 0..rounds {
            for _ in 0..20 {
                telemetry.transfer_completed(25, Direction::Write, 4096);
                transfers += 1;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    run(&telemetry, 20);
    receiver.wait_for(Duration::from_secs(20), "logs while up", |r| {
        !accepted(r, "/v1/logs").is_empty()
    });
    receiver.kill();
    let t = Instant::now();
    run(&telemetry, 100);
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "recording was held up"
    );
    let receiver = Receiver::start_on(port, &out);
    run(&telemetry, 20);
    telemetry.flush();
    let stats = telemetry.stats();
    assert!(
        stats.dropped.exporter_failed > 0,
        "the outage must overflow the queue: {stats:?}"
    );
    drop(telemetry);

    let reqs = receiver.requests();
    let delivered_records: u64 = accepted(&reqs, "/v1/logs")
        .iter()
        .map(|r| r["records"].as_array().unwrap().len() as u64)
        .sum();
    let produced = stats.recorded + stats.generated;
    assert_eq!(stats.recorded, transfers * 3, "{stats:?}");
    assert_eq!(
        delivered_records + stats.dropped.total(),
        produced,
        "collector {delivered_records} + host lost {:?} != produced {produced}",
        stats.dropped
    );
    // The final metrics say the same: the host's losses are the queue's.
    let last = last_metrics(&reqs);
    assert_eq!(last["headers"]["content-encoding"], "gzip");
    assert_eq!(last["headers"]["authorization"], "Bearer t0ken");
    assert_eq!(last["resource"]["service.name"], "host-test");
    assert_eq!(last["resource"]["rack"], "r1");
    let lost = self_value(
        &last,
        "nixl_telemetry_otlp_events_lost_total",
        &[("reason", "queue_full")],
    );
    assert_eq!(lost as u64, stats.dropped.exporter_failed);
    let exported = self_value(&last, "nixl_telemetry_otlp_events_exported_total", &[]);
    assert_eq!(exported as u64, delivered_records);
    // Transfers whose events reached the exporter are all in the totals.
    let requests = value(&last, "agent_tx_requests_num_total", "host-agent", &[]) as u64;
    let bytes = value(&last, "agent_tx_bytes_total", "host-agent", &[]) as u64;
    assert_eq!(bytes, requests * 4096);
    assert!(requests <= transfers && requests > 0);
}
