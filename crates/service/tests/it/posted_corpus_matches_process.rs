//! The reference corpus posted record by record (with its times, across days)
//! gives exactly the map `nixl-telemetry process` and the library give as JSON,
//! and labeled families on `/metrics` that add up to it, on SQLite and on
//! PostgreSQL; records with keys the
//! registry does not know are refused and named, as TAO's server refuses them.

use crate::support::http::{self, get};
use crate::support::postgres::TestDatabase;
use crate::support::records::{accepted_corpus, corpus, library_metrics};
use crate::support::server::{config, sqlite_in, TestServer};
use crate::support::{label_value, promtool_clean, sample, samples};
use nixl_telemetry_processor::Metrics;
use nixl_telemetry_service::StoreUrl;

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
    let response = get(server.addr, "/metrics");
    assert_eq!(
        response.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    exposition_tells_the_corpus(response.text(), &accepted, refused, &expected);
}

/// `/metrics` of a service fed the corpus: lint-free, and its families add up to
/// what the accepted records say and to what the legacy keys of the JSON map say.
fn exposition_tells_the_corpus(text: &str, accepted: &[String], refused: usize, map: &Metrics) {
    promtool_clean(text);
    let total = |family: &str| samples(text, family).iter().map(|(_, v)| v).sum::<f64>();
    let records: Vec<serde_json::Value> = accepted
        .iter()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["record"].clone())
        .collect();
    let time_lapsed: Vec<f64> = records
        .iter()
        .map(|r| r["time_lapsed"].as_i64().unwrap_or(0) as f64)
        .filter(|t| *t > 0.0)
        .collect();
    let gpus: usize = records
        .iter()
        .map(|r| r.get("gpu").map_or(1, |g| g.as_array().unwrap().len()))
        .sum();
    assert_eq!(total("tao_jobs_total"), accepted.len() as f64);
    assert_eq!(
        total("tao_job_duration_seconds_total"),
        time_lapsed.iter().sum::<f64>()
    );
    assert_eq!(total("tao_job_gpus_total"), gpus as f64);
    assert!(total("tao_job_gpu_seconds_total") >= total("tao_job_duration_seconds_total"));
    // The labeled and the legacy builders count the same jobs by action and status.
    for (key, value) in map.iter() {
        let Some(rest) = key.strip_prefix("total_action_") else {
            continue;
        };
        let (action, status) = rest.rsplit_once('_').unwrap();
        let labeled: f64 = samples(text, "tao_jobs_total")
            .iter()
            .filter(|(labels, _)| {
                label_value(labels, "action") == Some(action)
                    && label_value(labels, "status") == Some(status)
            })
            .map(|(_, v)| v)
            .sum();
        assert_eq!(labeled, value as f64, "{key}");
    }
    assert_eq!(
        sample(text, "tao_service_records_accepted_total"),
        Some(accepted.len() as f64)
    );
    assert_eq!(
        sample(
            text,
            "tao_service_records_refused_total{cause=\"unknown_key\"}"
        ),
        Some(refused as f64)
    );
    assert_eq!(
        sample(text, "tao_service_job_duration_seconds_count"),
        Some(time_lapsed.len() as f64)
    );
    assert_eq!(
        sample(text, "tao_service_job_duration_seconds_sum"),
        Some(time_lapsed.iter().sum::<f64>())
    );
    assert_eq!(sample(text, "tao_service_store_up"), Some(1.0));
    assert!(
        sample(
            text,
            "tao_service_store_duration_seconds_count{operation=\"write\"}"
        )
        .unwrap()
            >= 1.0
    );
    assert!(sample(text, "tao_last_updated_timestamp_seconds").is_some());
    assert!(
        !text.contains("tao_legacy_value"),
        "legacy keys only when asked for"
    );
    // No family of TAO's flat keys.
    assert!(!text.contains("\ntotal_action_"), "{text}");
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
