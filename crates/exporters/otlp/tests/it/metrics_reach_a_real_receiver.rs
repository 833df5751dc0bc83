//! Metrics sent to the loopback receiver, which decodes them with the
//! OpenTelemetry project's Python definitions: values, shapes, resource,
//! gzip, headers, and a collector that is down, going down, overloaded
//! (503 + Retry-After), slow, refusing part or all of a request.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use nixl_telemetry_abi::{Category, Event};
use nixl_telemetry_otlp::{Buckets, Compression, OtlpExporter, Settings, ERROR_STATUSES};

fn ev(category: Category, name: &str, value: u64) -> Event {
    Event::new(1_700_000_000_000_000, category, name, value)
}

/// Fast settings for `base`: 100 ms interval, short retries.
fn fast(base: &str) -> Settings {
    let mut s = Settings::new(base).unwrap();
    s.export_interval = Duration::from_millis(100);
    s.retry_initial = Duration::from_millis(50);
    s.retry_max = Duration::from_millis(400);
    s.metrics.timeout = Duration::from_secs(2);
    s
}

fn transfers(n: u64, bytes: u64, us: u64) -> Vec<Event> {
    (0..n)
        .flat_map(|_| {
            [
                ev(Category::PERFORMANCE, "agent_xfer_time", us),
                ev(Category::TRANSFER, "agent_tx_bytes", bytes),
                ev(Category::TRANSFER, "agent_tx_requests_num", 1),
            ]
        })
        .collect()
}

#[test]
#[ignore = "needs the OTLP receiver's Python packages: run scripts/test-otlp.sh"]
fn decoded_values_equal_what_the_events_imply() {
    let receiver = Receiver::start();
    let mut settings = fast(&receiver.base_url());
    settings.buckets = Buckets::new(&[10.0, 100.0, 1000.0]).unwrap();
    settings
        .resource
        .push(("deployment.environment".to_owned(), "test".to_owned()));
    let mut a = OtlpExporter::with_settings("agent-a", &settings).unwrap();
    let mut b = OtlpExporter::with_settings("agent-b", &settings).unwrap();
    a.record(&[
        ev(Category::TRANSFER, "agent_tx_bytes", 4096),
        ev(Category::TRANSFER, "agent_tx_bytes", 100),
        ev(Category::TRANSFER, "agent_tx_requests_num", 1),
        ev(Category::TRANSFER, "agent_tx_requests_num", 1),
        ev(Category::TRANSFER, "agent_rx_bytes", 7),
        ev(Category::TRANSFER, "agent_rx_requests_num", 1),
        ev(Category::MEMORY, "agent_memory_registered", 1 << 20),
        ev(Category::MEMORY, "agent_memory_deregistered", 1 << 10),
        // One in each bucket (≤10, ≤100, ≤1000, overflow), two in the first.
        ev(Category::PERFORMANCE, "agent_xfer_time", 3),
        ev(Category::PERFORMANCE, "agent_xfer_time", 10),
        ev(Category::PERFORMANCE, "agent_xfer_time", 50),
        ev(Category::PERFORMANCE, "agent_xfer_time", 999),
        ev(Category::PERFORMANCE, "agent_xfer_time", 5000),
        ev(Category::PERFORMANCE, "agent_xfer_post_time", 20),
        ev(Category::ERROR, "NIXL_ERR_BACKEND", 1),
        ev(Category::ERROR, "NIXL_ERR_BACKEND", 1),
        ev(Category::ERROR, "NIXL_ERR_SOMETHING_NEW", 1),
        ev(Category::BACKEND, "ucx.rndv", 5),
        ev(Category::SYSTEM, "agent_telemetry_events_dropped", 2),
        ev(Category(42), "mystery", 1),
    ])
    .unwrap();
    b.record(&[ev(Category::TRANSFER, "agent_rx_bytes", 9)])
        .unwrap();
    a.publish();
    b.publish();
    let reqs = receiver.wait_for(Duration::from_secs(20), "both agents' totals", |r| {
        last_value_is(r, "agent_tx_bytes_total", "agent-a", 4196)
            && last_value_is(r, "agent_rx_bytes_total", "agent-b", 9)
    });
    let last = last_metrics(&reqs);
    assert_eq!(last["headers"]["content-type"], "application/x-protobuf");
    assert!(last.get("error").is_none(), "{last}");

    // Resource and scope.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(last["resource"]["service.name"], "nixl");
    assert_eq!(last["resource"]["host.name"], host.trim());
    assert_eq!(last["resource"]["process.pid"], std::process::id());
    assert_eq!(last["resource"]["deployment.environment"], "test");
    assert_eq!(last["scope"]["name"], "nixl-telemetry");

    // Counters: monotonic cumulative Sums, started at the agent's creation.
    let sum = &points(&last, "agent_tx_bytes_total", &[("agent_name", "agent-a")])[0];
    assert_eq!(sum["type"], "sum");
    assert_eq!(sum["monotonic"], true);
    assert_eq!(sum["temporality"], "AGGREGATION_TEMPORALITY_CUMULATIVE");
    assert_eq!(sum["attributes"]["category"], "TRANSFER");
    assert!(sum["start"].as_u64().unwrap() > 0);
    assert!(sum["time"].as_u64().unwrap() >= sum["start"].as_u64().unwrap());
    for (metric, want) in [
        ("agent_tx_bytes_total", 4196),
        ("agent_tx_requests_num_total", 2),
        ("agent_rx_bytes_total", 7),
        ("agent_rx_requests_num_total", 1),
        ("agent_memory_registered_total", 1 << 20),
        ("agent_memory_deregistered_total", 1 << 10),
        ("agent_xfer_time_total", 3 + 10 + 50 + 999 + 5000),
        ("agent_xfer_post_time_total", 20),
        ("agent_telemetry_events_dropped_total", 2),
        ("agent_telemetry_unmapped_events_total", 1),
    ] {
        assert_eq!(value(&last, metric, "agent-a", &[]), want, "{metric}");
    }
    // Gauges: last values.
    for (metric, want) in [
        ("agent_tx_last_bytes", 100),
        ("agent_rx_last_bytes", 7),
        ("agent_memory_registered_last_bytes", 1 << 20),
        ("agent_memory_deregistered_last_bytes", 1 << 10),
        ("agent_memory_registered_bytes", (1 << 20) - (1 << 10)),
        ("agent_xfer_time", 5000),
        ("agent_xfer_post_time", 20),
    ] {
        let p = &points(&last, metric, &[("agent_name", "agent-a")])[0];
        assert_eq!(p["type"], "gauge", "{metric}");
        assert_eq!(p["value"], want, "{metric}");
    }
    // Every histogram bucket.
    let h = &points(&last, "agent_xfer_time_us", &[("agent_name", "agent-a")])[0];
    assert_eq!(h["type"], "histogram");
    assert_eq!(h["temporality"], "AGGREGATION_TEMPORALITY_CUMULATIVE");
    assert_eq!(
        h["explicit_bounds"],
        serde_json::json!([10.0, 100.0, 1000.0])
    );
    assert_eq!(h["bucket_counts"], serde_json::json!([2, 1, 1, 1]));
    assert_eq!(h["count"], 5);
    assert_eq!(h["sum"], 6062.0);
    assert_eq!(h["min"], 3.0);
    assert_eq!(h["max"], 5000.0);
    let post = &points(
        &last,
        "agent_xfer_post_time_us",
        &[("agent_name", "agent-a")],
    )[0];
    assert_eq!(post["bucket_counts"], serde_json::json!([0, 1, 0, 0]));
    // Errors: one Sum with a status attribute; the known statuses from the start.
    for status in ERROR_STATUSES {
        let want = if status == "backend" { 2 } else { 0 };
        assert_eq!(
            value(
                &last,
                "agent_errors_total",
                "agent-a",
                &[("status", status)]
            ),
            want,
            "{status}"
        );
        assert_eq!(
            value(
                &last,
                "agent_errors_total",
                "agent-b",
                &[("status", status)]
            ),
            0
        );
    }
    assert_eq!(
        value(
            &last,
            "agent_errors_total",
            "agent-a",
            &[("status", "something_new")]
        ),
        1
    );
    assert_eq!(
        value(
            &last,
            "ucx_rndv_total",
            "agent-a",
            &[("category", "BACKEND")]
        ),
        5
    );
    // Agent b, in the same request, has its own points.
    assert_eq!(value(&last, "agent_tx_bytes_total", "agent-b", &[]), 0);
    assert_eq!(value(&last, "agent_rx_last_bytes", "agent-b", &[]), 9);
    // The exporter's own metrics.
    assert!(
        self_value(
            &last,
            "nixl_telemetry_otlp_requests_total",
            &[("signal", "metrics"), ("result", "delivered")]
        ) >= 0
    );
    drop(a);
    drop(b);
}

#[test]
#[ignore = "needs the OTLP receiver's Python packages: run scripts/test-otlp.sh"]
fn gzip_bodies_and_configured_headers_arrive() {
    let receiver = Receiver::start();
    let mut settings = fast(&receiver.base_url());
    settings.metrics.compression = Compression::Gzip;
    settings.metrics.headers = vec![
        ("Authorization".to_owned(), "Bearer s3cret".to_owned()),
        ("X-Scope-OrgID".to_owned(), "tenant-1".to_owned()),
    ];
    let mut e = OtlpExporter::with_settings("gz", &settings).unwrap();
    e.record(&transfers(3, 1000, 40)).unwrap();
    e.publish();
    let reqs = receiver.wait_for(Duration::from_secs(20), "a gzip request", |r| {
        last_value_is(r, "agent_tx_bytes_total", "gz", 3000)
    });
    let last = last_metrics(&reqs);
    assert_eq!(last["headers"]["content-encoding"], "gzip");
    assert_eq!(last["headers"]["authorization"], "Bearer s3cret");
    assert_eq!(last["headers"]["x-scope-orgid"], "tenant-1");
    assert!(last.get("error").is_none());
}

#[test]
#[ignore = "needs the OTLP receiver's Python packages: run scripts/test-otlp.sh"]
fn a_collector_down_at_start_gets_the_totals_once_it_is_up() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("requests.jsonl");
    let port = free_port();
    let settings = fast(&format!("http://127.0.0.1:{port}"));
    let mut e = OtlpExporter::with_settings("late", &settings).unwrap();
    let started = Instant::now();
    for _ in 0..20 {
        e.record(&transfers(10, 100, 5)).unwrap();
        e.publish();
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "recording waited"
    );
    assert!(e.stats().metric_requests_retried > 0, "{:?}", e.stats());
    assert_eq!(e.stats().metric_requests_delivered, 0);
    let receiver = Receiver::start_on(port, &out);
    receiver.wait_for(Duration::from_secs(20), "the totals", |r| {
        last_value_is(r, "agent_tx_requests_num_total", "late", 200)
    });
    // The receiver records a request before it answers: the exporter counts
    // the delivery a moment later.
    let deadline = Instant::now() + Duration::from_secs(10);
    while e.stats().metric_requests_delivered == 0 {
        assert!(Instant::now() < deadline, "{:?}", e.stats());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
#[ignore = "needs the OTLP receiver's Python packages: run scripts/test-otlp.sh"]
fn a_collector_going_down_mid_run_misses_nothing_cumulative() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("requests.jsonl");
    let port = free_port();
    let mut receiver = Receiver::start_on(port, &out);
    let settings = fast(&receiver.base_url());
    let mut e = OtlpExporter::with_settings("flaky", &settings).unwrap();
    e.record(&transfers(5, 10, 5)).unwrap();
    e.publish();
    receiver.wait_for(Duration::from_secs(20), "the first totals", |r| {
        last_value_is(r, "agent_tx_requests_num_total", "flaky", 5)
    });
    receiver.kill();
    let mut slowest = Duration::ZERO;
    for _ in 0..20 {
        let t = Instant::now();
        e.record(&transfers(5, 10, 5)).unwrap();
        e.publish();
        slowest = slowest.max(t.elapsed());
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(
        slowest < Duration::from_secs(1),
        "a record took {slowest:?}"
    );
    assert!(e.stats().metric_requests_retried > 0, "{:?}", e.stats());
    let receiver = Receiver::start_on(port, &out);
    receiver.wait_for(Duration::from_secs(20), "every total", |r| {
        last_value_is(r, "agent_tx_requests_num_total", "flaky", 105)
            && last_value_is(r, "agent_tx_bytes_total", "flaky", 1050)
    });
    // The histogram too is whole: cumulative data heals after an outage.
    let last = last_metrics(&receiver.requests());
    let h = &points(&last, "agent_xfer_time_us", &[("agent_name", "flaky")])[0];
    assert_eq!(h["count"], 105);
}

#[test]
#[ignore = "needs the OTLP receiver's Python packages: run scripts/test-otlp.sh"]
fn retry_after_of_a_503_is_honoured() {
    let receiver = Receiver::start();
    receiver.control(
        r#"{"mode": "unavailable", "retry_after": "2", "times": 1, "path": "/v1/metrics"}"#,
    );
    let settings = fast(&receiver.base_url());
    let mut e = OtlpExporter::with_settings("patient", &settings).unwrap();
    e.record(&transfers(1, 1, 1)).unwrap();
    e.publish();
    let reqs = receiver.wait_for(Duration::from_secs(20), "a 503 then a 200", |r| {
        r.iter().any(|x| x["status"] == 503) && !accepted(r, "/v1/metrics").is_empty()
    });
    let refused = reqs.iter().find(|x| x["status"] == 503).unwrap();
    let next = accepted(&reqs, "/v1/metrics")[0];
    let gap = next["time"].as_f64().unwrap() - refused["time"].as_f64().unwrap();
    // Without Retry-After the retry would come after 25..75 ms.
    assert!(gap >= 1.95, "retried after {gap} s despite Retry-After: 2");
    assert!(gap < 5.0, "retried only after {gap} s");
    assert!(e.stats().metric_requests_retried >= 1);
}

#[test]
#[ignore = "needs the OTLP receiver's Python packages: run scripts/test-otlp.sh"]
fn a_slow_collector_never_holds_up_recording() {
    let receiver = Receiver::start();
    receiver.control(r#"{"mode": "slow", "delay": 3.0, "times": 2, "path": "/v1/metrics"}"#);
    let mut settings = fast(&receiver.base_url());
    // A recorder waiting on the export would wait at least this long.
    settings.metrics.timeout = Duration::from_millis(1500);
    let mut e = OtlpExporter::with_settings("snail", &settings).unwrap();
    let mut slowest = Duration::ZERO;
    let mut total = 0;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(2) {
        let t = Instant::now();
        e.record(&transfers(10, 10, 5)).unwrap();
        e.publish();
        total += 10;
        slowest = slowest.max(t.elapsed());
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        slowest < Duration::from_secs(1),
        "a record took {slowest:?}"
    );
    assert!(
        e.stats().metric_requests_retried >= 1,
        "timeouts are retried: {:?}",
        e.stats()
    );
    receiver.wait_for(
        Duration::from_secs(30),
        "the totals after the slow answers",
        |r| last_value_is(r, "agent_tx_requests_num_total", "snail", total),
    );
}

#[test]
#[ignore = "needs the OTLP receiver's Python packages: run scripts/test-otlp.sh"]
fn partial_success_is_counted() {
    let receiver = Receiver::start();
    receiver
        .control(r#"{"mode": "partial", "rejected": 3, "message": "three too many", "times": 1, "path": "/v1/metrics"}"#);
    let settings = fast(&receiver.base_url());
    let mut e = OtlpExporter::with_settings("partial", &settings).unwrap();
    e.record(&transfers(1, 1, 1)).unwrap();
    e.publish();
    receiver.wait_for(Duration::from_secs(20), "a partial success", |r| {
        r.iter().any(|x| x["rejected"] == 3)
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while e.stats().metric_points_rejected < 3 {
        assert!(Instant::now() < deadline, "{:?}", e.stats());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(e.stats().metric_points_rejected, 3);
    // And the count is exported as the exporter's own metric.
    receiver.wait_for(Duration::from_secs(20), "the self-metric", |r| {
        accepted(r, "/v1/metrics").iter().any(|req| {
            points(req, "nixl_telemetry_otlp_rejected_data_points_total", &[])
                .first()
                .is_some_and(|p| p["value"] == 3)
        })
    });
}

#[test]
#[ignore = "needs the OTLP receiver's Python packages: run scripts/test-otlp.sh"]
fn a_refused_request_is_dropped_not_retried() {
    let receiver = Receiver::start();
    receiver.control(r#"{"mode": "bad_request", "times": 1, "path": "/v1/metrics"}"#);
    let settings = fast(&receiver.base_url());
    let e = OtlpExporter::with_settings("refused", &settings).unwrap();
    receiver.wait_for(Duration::from_secs(20), "a refusal then a delivery", |r| {
        r.iter().any(|x| x["status"] == 400) && !accepted(r, "/v1/metrics").is_empty()
    });
    let s = e.stats();
    assert_eq!(s.metric_requests_dropped, 1, "{s:?}");
    assert_eq!(s.metric_requests_retried, 0, "{s:?}");
}
