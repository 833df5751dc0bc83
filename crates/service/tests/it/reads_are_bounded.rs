//! Full reads of the store (`GET /metrics`, `GET /api/v1/metrics`) are bounded: at
//! most `max_concurrent_reads` at once, a read past them answered `503
//! too_many_reads` with `Retry-After` at once and counted; and requests arriving
//! together share one read of the store instead of each building the whole map.

use std::sync::{Arc, Barrier};
use std::thread;

use crate::support::http::{get, post};
use crate::support::sample;
use crate::support::server::{config, sqlite_in, TestServer};
use nixl_telemetry_service::{ImportMode, MetricsDocument, ServiceConfig, Store, StoreUrl};

/// A store of `keys` labeled keys (one job count per network), so that a full read
/// takes a while.
fn large_store(dir: &std::path::Path, keys: usize) -> StoreUrl {
    let store = sqlite_in(dir);
    let mut document = serde_json::Map::new();
    for i in 0..keys {
        document.insert(
            format!(
                "tao_job_total{{tao_action=\"train\",tao_network=\"network{i}\",tao_status=\"completed\"}}"
            ),
            serde_json::json!(1),
        );
    }
    document.insert(
        "last_updated".into(),
        serde_json::json!("2025-01-13T10:00:00.000000"),
    );
    let document = MetricsDocument::parse(&serde_json::Value::Object(document).to_string())
        .expect("a metrics document");
    Store::open(&store)
        .unwrap()
        .import(&document, ImportMode::Merge, false)
        .unwrap();
    store
}

/// `clients` GETs of `path` at once; their answers' status codes and bodies.
fn at_once(
    server: &TestServer,
    path: &'static str,
    clients: usize,
) -> Vec<(u16, String, Option<String>)> {
    let barrier = Arc::new(Barrier::new(clients));
    let addr = server.addr;
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let barrier = barrier.clone();
            thread::spawn(move || {
                barrier.wait();
                let response = get(addr, path);
                (
                    response.status,
                    response.text().to_owned(),
                    response.header("retry-after").map(str::to_owned),
                )
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

fn reads_of_the_store(server: &TestServer) -> f64 {
    let text = get(server.addr, "/metrics").text().to_owned();
    sample(
        &text,
        "tao_service_store_duration_seconds_count{operation=\"read\"}",
    )
    .unwrap()
}

#[test]
fn reads_past_the_bound_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = large_store(dir.path(), 50_000);
    let server = TestServer::start(ServiceConfig {
        max_concurrent_reads: 1,
        ..config(store)
    });
    for path in ["/metrics", "/api/v1/metrics"] {
        let answers = at_once(&server, path, 8);
        let refused: Vec<_> = answers.iter().filter(|a| a.0 == 503).collect();
        assert!(
            answers.iter().all(|a| a.0 == 200 || a.0 == 503),
            "{path}: {:?}",
            answers.iter().map(|a| a.0).collect::<Vec<_>>()
        );
        assert!(
            !refused.is_empty(),
            "{path}: no read refused at a bound of 1"
        );
        for (_, body, retry_after) in &refused {
            assert_eq!(retry_after.as_deref(), Some("1"), "{body}");
            let body: serde_json::Value = serde_json::from_str(body).unwrap();
            assert_eq!(body["error"], "too_many_reads", "{body}");
            let message = body["message"].as_str().unwrap();
            assert!(
                message.contains("1 full reads") && message.contains("--max-concurrent-reads"),
                "{message}"
            );
        }
        let text = get(server.addr, "/metrics").text().to_owned();
        assert!(
            sample(&text, "tao_service_reads_refused_total").unwrap() >= refused.len() as f64,
            "{text}"
        );
        // Only this read is under way.
        assert_eq!(sample(&text, "tao_service_reads_in_progress"), Some(1.0));
    }
    server.stop();
}

#[test]
fn reads_arriving_together_share_one_read_of_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = large_store(dir.path(), 50_000);
    let server = TestServer::start(ServiceConfig {
        max_concurrent_reads: 16,
        ..config(store)
    });
    for path in ["/metrics", "/api/v1/metrics"] {
        let before = reads_of_the_store(&server);
        let answers = at_once(&server, path, 12);
        assert!(answers.iter().all(|a| a.0 == 200));
        // The JSON answers are the same map, read once or twice for all 12.
        let reads = reads_of_the_store(&server) - before - 1.0;
        assert!(
            (1.0..=4.0).contains(&reads),
            "{path}: {reads} reads of the store for 12 requests arriving together"
        );
    }
    // A read never shows the store older than when it was asked for.
    let record = serde_json::json!({
        "now": "2025-01-13T11:00:00",
        "record": {"action": "evaluate", "network": "fresh", "time_lapsed": 60, "gpu": ["H100"]}
    })
    .to_string();
    assert_eq!(post(server.addr, &record).status, 201);
    assert!(get(server.addr, "/api/v1/metrics")
        .text()
        .contains("tao_network=\\\"fresh\\\""));
    assert!(get(server.addr, "/metrics")
        .text()
        .contains("action=\"evaluate\""));
    server.stop();
}
