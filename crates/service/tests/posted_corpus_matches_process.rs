//! The reference corpus posted record by record (with its times, across days)
//! gives exactly the map `nixl-telemetry process` and the library give, as JSON
//! and as Prometheus text, on SQLite and on PostgreSQL; records with keys the
//! registry does not know are refused and named, as TAO's server refuses them.

mod support;

use nixl_telemetry_processor::{render_prometheus, MetricProcessor};
use nixl_telemetry_service::StoreUrl;
use support::http::{self, get};
use support::postgres::TestDatabase;
use support::promtool_parses;
use support::records::{accepted_corpus, corpus, library_metrics};
use support::server::{config, sqlite_in, TestServer};

fn corpus_on(store: StoreUrl) {
    let server = TestServer::start(config(store));
    let lines = corpus();
    let accepted = accepted_corpus();
    let mut connection = http::Connection::open(server.addr).unwrap();
    let mut refused = 0;
    for line in &lines {
        let response = connection
            .request("POST", "/api/v1/metrics", &[], line.as_bytes())
            .unwrap();
        if accepted.contains(line) {
            assert_eq!(response.status, 201, "{line}: {}", response.text());
        } else {
            assert_eq!(response.status, 400, "{line}: {}", response.text());
            assert_eq!(response.json()["error"], "unknown_key", "{line}");
            refused += 1;
        }
    }
    assert!(
        refused > 0 && refused < lines.len() / 2,
        "{refused} refused"
    );

    let expected = library_metrics(&accepted);
    assert_eq!(
        get(server.addr, "/api/v1/metrics").text(),
        expected.to_json_string()
    );
    let processor = MetricProcessor::new();
    let prometheus = render_prometheus(&expected, |f| processor.metric_kind(f)).unwrap();
    let response = get(server.addr, "/metrics");
    assert_eq!(
        response.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    assert_eq!(response.text(), prometheus);
    promtool_parses(response.text());
}

#[test]
fn the_corpus_on_sqlite_is_the_library_map() {
    let dir = tempfile::tempdir().unwrap();
    corpus_on(sqlite_in(dir.path()));
}

#[test]
fn the_corpus_on_postgres_is_the_library_map() {
    let Some(db) = TestDatabase::create("the_corpus_on_postgres_is_the_library_map") else {
        return;
    };
    corpus_on(db.store());
}

/// The time builder's `old_now` is the stored `last_updated`: a service restarted
/// between two records of different days resets `time_lapsed_today`, as the
/// library does over a state file.
#[test]
fn old_now_comes_from_the_store_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> = [
        ("2025-01-13T23:00:00", 100),
        ("2025-01-13T23:30:00", 20),
        ("2025-01-14T00:10:00", 3),
        ("2025-02-14T00:10:00", 4000),
    ]
    .iter()
    .map(|(now, t)| format!(r#"{{"now": "{now}", "record": {{"time_lapsed": {t}}}}}"#))
    .collect();
    let mut seen = Vec::new();
    for line in &lines {
        let server = TestServer::start(config(sqlite_in(dir.path())));
        let response = http::post(server.addr, line);
        assert_eq!(response.status, 201, "{}", response.text());
        seen.push(
            response.json()["metrics"]["time_lapsed_today"]
                .as_i64()
                .unwrap(),
        );
        server.stop();
    }
    assert_eq!(seen, [100, 120, 3, 4000]);
    let server = TestServer::start(config(sqlite_in(dir.path())));
    assert_eq!(
        get(server.addr, "/api/v1/metrics").text(),
        library_metrics(&lines).to_json_string()
    );
}
