//! `NIXL_TELEMETRY_OTLP_EVENTS`: every event as an OTLP log record, decoded by
//! the receiver with the official definitions, and the books of a bounded
//! queue when the collector is down: exported + lost = produced.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use nixl_telemetry_abi::{Category, Event};
use nixl_telemetry_otlp::{OtlpExporter, Settings};

fn settings(base: &str, queue: usize) -> Settings {
    let mut s = Settings::new(base).unwrap();
    s.events = true;
    s.queue_events = queue;
    s.export_interval = Duration::from_millis(100);
    s.retry_initial = Duration::from_millis(50);
    s.retry_max = Duration::from_millis(300);
    s
}

fn records(reqs: &[serde_json::Value]) -> Vec<serde_json::Value> {
    accepted(reqs, "/v1/logs")
        .iter()
        .flat_map(|r| r["records"].as_array().unwrap().clone())
        .collect()
}

fn wait_stats(
    e: &OtlpExporter,
    what: &str,
    ok: impl Fn(&nixl_telemetry_otlp::ExportStats) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ok(&e.stats()) {
        assert!(Instant::now() < deadline, "{what}: {:?}", e.stats());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
#[ignore = "needs the OTLP receiver's Python packages: run scripts/test-otlp.sh"]
fn every_event_arrives_as_a_log_record() {
    let receiver = Receiver::start();
    let mut e =
        OtlpExporter::with_settings("logger", &settings(&receiver.base_url(), 1000)).unwrap();
    let events = [
        Event::new(
            1_700_000_000_000_123,
            Category::TRANSFER,
            "agent_tx_bytes",
            4096,
        ),
        Event::new(
            1_700_000_000_000_124,
            Category::ERROR,
            "NIXL_ERR_BACKEND",
            1,
        ),
        Event::new(
            1_700_000_000_000_125,
            Category::BACKEND,
            "ucx.rndv",
            u64::MAX,
        ),
    ];
    e.record(&events).unwrap();
    wait_stats(&e, "three events exported", |s| s.events_exported == 3);
    let recs = records(&receiver.requests());
    assert_eq!(recs.len(), 3, "{recs:?}");
    assert_eq!(recs[0]["time"], 1_700_000_000_000_123_000u64);
    assert_eq!(recs[0]["body"], "agent_tx_bytes");
    assert_eq!(recs[0]["severity_text"], "INFO");
    assert_eq!(recs[0]["attributes"]["agent_name"], "logger");
    assert_eq!(recs[0]["attributes"]["category"], "TRANSFER");
    assert_eq!(recs[0]["attributes"]["name"], "agent_tx_bytes");
    assert_eq!(recs[0]["attributes"]["value"], 4096);
    assert_eq!(recs[1]["severity_text"], "ERROR");
    assert_eq!(recs[1]["severity_number"], 17);
    assert_eq!(recs[1]["attributes"]["category"], "ERROR");
    // Beyond the int64 range the value is written out in full, as text.
    assert_eq!(recs[2]["attributes"]["value"], u64::MAX.to_string());
    let logs = accepted(&receiver.requests(), "/v1/logs")[0].clone();
    assert_eq!(logs["resource"]["service.name"], "nixl");
    assert_eq!(logs["headers"]["content-type"], "application/x-protobuf");
    // The events are in the metrics too.
    e.publish();
    receiver.wait_for(Duration::from_secs(20), "metrics", |r| {
        last_value_is(r, "agent_tx_bytes_total", "logger", 4096)
    });
}

#[test]
#[ignore = "needs the OTLP receiver's Python packages: run scripts/test-otlp.sh"]
fn books_balance_when_the_queue_overflows_while_the_collector_is_down() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("requests.jsonl");
    let port = free_port();
    let mut e = OtlpExporter::with_settings(
        "overflow",
        &settings(&format!("http://127.0.0.1:{port}"), 120),
    )
    .unwrap();
    let mut produced = 0u64;
    let mut refused = 0u64;
    let mut seq = 0u64;
    let started = Instant::now();
    for _ in 0..20 {
        let batch: Vec<Event> = (0..50)
            .map(|_| {
                seq += 1;
                Event::new(seq, Category::CUSTOM, "tick", seq)
            })
            .collect();
        produced += 50;
        if e.record(&batch).is_err() {
            refused += 50;
        }
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "recording waited"
    );
    // 120 fit: two batches of 50; the rest are refused whole.
    assert_eq!(refused, 900);
    assert_eq!(e.stats().events_lost_queue_full, 900);
    assert_eq!(e.stats().events_queued, 100);
    let receiver = Receiver::start_on(port, &out);
    wait_stats(&e, "the queued events delivered", |s| {
        s.events_exported == 100
    });
    let after = produced;
    drop(e);
    let reqs = receiver.requests();
    let recs = records(&reqs);
    assert_eq!(
        recs.len() as u64 + refused,
        after,
        "exported + lost = produced"
    );
    // The ones delivered are the first two batches, each once.
    let mut values: Vec<u64> = recs
        .iter()
        .map(|r| r["attributes"]["value"].as_u64().unwrap())
        .collect();
    values.sort_unstable();
    assert_eq!(values, (1..=100).collect::<Vec<u64>>());
    // The final metrics request tells the same story in the self-metrics.
    let last = last_metrics(&reqs);
    assert_eq!(
        self_value(
            &last,
            "nixl_telemetry_otlp_events_lost_total",
            &[("reason", "queue_full")]
        ),
        900
    );
    assert_eq!(
        self_value(&last, "nixl_telemetry_otlp_events_exported_total", &[]),
        100
    );
    // Refused batches are not in the metrics either: lost means lost.
    assert_eq!(
        value(&last, "tick_total", "overflow", &[("category", "CUSTOM")]),
        5050
    );
}

#[test]
#[ignore = "needs the OTLP receiver's Python packages: run scripts/test-otlp.sh"]
fn partially_rejected_and_refused_logs_are_counted_as_lost() {
    let receiver = Receiver::start();
    receiver.control(r#"{"mode": "partial", "rejected": 2, "times": 1, "path": "/v1/logs"}"#);
    let mut e =
        OtlpExporter::with_settings("picky", &settings(&receiver.base_url(), 1000)).unwrap();
    let batch: Vec<Event> = (0..5)
        .map(|i| Event::new(i, Category::CUSTOM, "x", i))
        .collect();
    e.record(&batch).unwrap();
    wait_stats(&e, "the partial answer", |s| s.log_requests_delivered == 1);
    receiver.control(r#"{"mode": "bad_request", "times": 1, "path": "/v1/logs"}"#);
    e.record(&batch).unwrap();
    wait_stats(&e, "the refusal", |s| s.log_requests_dropped == 1);
    let s = e.stats();
    assert_eq!(s.events_lost_rejected, 2, "{s:?}");
    assert_eq!(s.events_exported, 3, "{s:?}");
    assert_eq!(s.events_lost_undeliverable, 5, "{s:?}");
    assert_eq!(s.events_exported + s.events_lost(), 10);
    assert_eq!(s.events_queued, 0);
}
