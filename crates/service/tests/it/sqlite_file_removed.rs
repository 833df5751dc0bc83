//! A SQLite file removed while the service runs is noticed: posts are answered
//! 503 (nothing is written to a file nobody reads again), `/healthz` is 503, and
//! no new empty file takes its place.

use crate::support::http::{get, post};
use crate::support::sample;
use crate::support::server::{config, sqlite_in, TestServer};

const RECORD: &str = r#"{"action": "train", "time_lapsed": 60}"#;

#[test]
fn a_removed_sqlite_file_is_503_and_unhealthy() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(config(sqlite_in(dir.path())));
    assert_eq!(post(server.addr, RECORD).status, 201);
    assert_eq!(get(server.addr, "/api/v1/metrics").status, 200);
    assert_eq!(get(server.addr, "/healthz").status, 200);

    let file = dir.path().join("metrics.db");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
    }
    for _ in 0..2 {
        let response = post(server.addr, RECORD);
        assert_eq!(response.status, 503, "{}", response.text());
        let message = response.json()["message"].as_str().unwrap().to_owned();
        assert!(message.contains("was removed or replaced"), "{message}");
    }
    let health = get(server.addr, "/healthz");
    assert_eq!(health.status, 503, "{}", health.text());
    assert!(
        health.text().contains("was removed or replaced"),
        "{}",
        health.text()
    );
    assert_eq!(get(server.addr, "/api/v1/metrics").status, 503);
    let exposition = get(server.addr, "/metrics");
    assert_eq!(
        sample(exposition.text(), "tao_service_store_up"),
        Some(0.0),
        "{}",
        exposition.text()
    );
    assert!(!file.exists(), "no empty file replaces the removed one");
}
