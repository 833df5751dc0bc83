//! The store holds at most `max_keys` distinct metric keys: a record that would
//! add keys past the bound is refused with 422 (naming the bound and the flag) and
//! counted as `key_limit_reached`, on its own; records that only update stored
//! keys are still taken, and nothing stored changes. The same on SQLite and on
//! PostgreSQL, for records posted one at a time and for records sharing a
//! transaction.

use std::thread;

use crate::support::http::{get, post};
use crate::support::postgres::TestDatabase;
use crate::support::records::library_metrics;
use crate::support::sample;
use crate::support::server::{config, sqlite_in, TestServer};
use nixl_telemetry_service::{ServiceConfig, StoreUrl};

fn record(gpu: &str) -> String {
    serde_json::json!({
        "now": "2025-01-13T10:00:00",
        "record": {"action": "train", "network": "resnet", "time_lapsed": 60, "gpu": [gpu]}
    })
    .to_string()
}

fn key_count(lines: &[String]) -> u64 {
    library_metrics(lines).iter().count() as u64
}

fn refused_for_keys(server: &TestServer) -> f64 {
    let text = get(server.addr, "/metrics").text().to_owned();
    sample(
        &text,
        "tao_service_records_refused_total{cause=\"key_limit_reached\"}",
    )
    .unwrap_or(0.0)
}

/// One record's keys fit, a second GPU's new keys do not: it is refused, and the
/// first record posted again (updating stored keys only) is taken.
fn new_keys_past_the_bound_are_refused(store: StoreUrl) {
    let a100 = record("A100");
    let h100 = record("H100");
    let one = key_count(std::slice::from_ref(&a100));
    let both = key_count(&[a100.clone(), h100.clone()]);
    assert!(both > one, "a second GPU adds keys ({one} then {both})");
    let max_keys = both - 1;
    let server = TestServer::start(ServiceConfig {
        max_keys,
        ..config(store)
    });
    let response = post(server.addr, &a100);
    assert_eq!(response.status, 201, "{}", response.text());
    let stored_before = get(server.addr, "/api/v1/metrics").text().to_owned();

    let response = post(server.addr, &h100);
    assert_eq!(response.status, 422, "{}", response.text());
    let body = response.json();
    assert_eq!(body["error"], "key_limit_reached", "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(message.contains(&max_keys.to_string()), "{message}");
    assert!(message.contains("--max-keys"), "{message}");
    assert_eq!(
        get(server.addr, "/api/v1/metrics").text(),
        stored_before,
        "a refused record changes nothing"
    );
    assert_eq!(refused_for_keys(&server), 1.0);

    let response = post(server.addr, &a100);
    assert_eq!(response.status, 201, "{}", response.text());
    assert_eq!(
        get(server.addr, "/api/v1/metrics").text(),
        library_metrics(&[a100.clone(), a100]).to_json_string()
    );
}

/// Many records of distinct GPUs and of one stored GPU, posted at once (so that
/// they share transactions): every update of the stored GPU is taken, the store
/// never holds more than the bound, and each refusal is counted.
fn a_shared_transaction_refuses_only_the_records_past_the_bound(store: StoreUrl) {
    let a100 = record("A100");
    let per_gpu =
        key_count(&[a100.clone(), record("H100")]) - key_count(std::slice::from_ref(&a100));
    // Room for the stored GPU and three more.
    let max_keys = key_count(std::slice::from_ref(&a100)) + 3 * per_gpu;
    let server = TestServer::start(ServiceConfig {
        max_keys,
        ..config(store)
    });
    assert_eq!(post(server.addr, &a100).status, 201);
    let addr = server.addr;
    let posts: Vec<_> = (0..16)
        .map(|i| {
            let (line, updates_only) = if i % 2 == 0 {
                (a100.clone(), true)
            } else {
                (record(&format!("GPU{i}")), false)
            };
            thread::spawn(move || (line.clone(), updates_only, post(addr, &line)))
        })
        .collect();
    let mut accepted = vec![a100.clone()];
    let mut refused = 0;
    for handle in posts {
        let (line, updates_only, response) = handle.join().unwrap();
        match response.status {
            201 => accepted.push(line),
            422 => {
                assert!(!updates_only, "an update of stored keys was refused");
                assert_eq!(response.json()["error"], "key_limit_reached");
                refused += 1;
            }
            other => panic!("{other}: {}", response.text()),
        }
    }
    assert_eq!(refused, 8 - 3, "three new GPUs fit, five do not");
    let stored: serde_json::Value =
        serde_json::from_str(get(server.addr, "/api/v1/metrics").text()).unwrap();
    assert_eq!(
        stored,
        serde_json::from_str::<serde_json::Value>(&library_metrics(&accepted).to_json_string())
            .unwrap()
    );
    assert!(key_count(&accepted) <= max_keys);
    assert_eq!(refused_for_keys(&server), refused as f64);
}

#[test]
fn sqlite_new_keys_past_the_bound_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    new_keys_past_the_bound_are_refused(sqlite_in(dir.path()));
}

#[test]
fn postgres_new_keys_past_the_bound_are_refused() {
    let Some(db) = TestDatabase::create("postgres_new_keys_past_the_bound_are_refused") else {
        return;
    };
    new_keys_past_the_bound_are_refused(db.store());
}

#[test]
fn sqlite_a_shared_transaction_refuses_only_the_records_past_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    a_shared_transaction_refuses_only_the_records_past_the_bound(sqlite_in(dir.path()));
}

#[test]
fn postgres_a_shared_transaction_refuses_only_the_records_past_the_bound() {
    let Some(db) = TestDatabase::create("postgres_shared_transaction_key_bound") else {
        return;
    };
    a_shared_transaction_refuses_only_the_records_past_the_bound(db.store());
}
