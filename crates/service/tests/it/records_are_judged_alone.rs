//! A record is judged on itself, the same way on every store: a value beyond the
//! bound or a metric key no store can keep is refused with 400 for that record,
//! and neither such a record nor anything stored before makes a later valid record
//! (or another record of the same transaction) fail.

use crate::support::http::{get, post, Connection};
use crate::support::postgres::TestDatabase;
use crate::support::records::library_metrics;
use crate::support::server::{config, sqlite_in, TestServer};
use nixl_telemetry_service::record_rules::{MAX_INTEGER_VALUE, MAX_KEY_BYTES};
use nixl_telemetry_service::{ServiceConfig, StoreUrl, DEFAULT_MAX_ENVELOPE_SKEW};

fn record(time_lapsed: i64, gpu: &str) -> String {
    serde_json::json!({
        "now": "2025-01-13T10:00:00",
        "record": {"action": "train", "network": "resnet", "time_lapsed": time_lapsed, "gpu": [gpu]}
    })
    .to_string()
}

/// A huge `time_lapsed` is refused, and the records after it are taken.
fn a_huge_value_poisons_nothing(store: StoreUrl) {
    let server = TestServer::start(config(store));
    let huge = record(i64::MAX - 10, "A100");
    let response = post(server.addr, &huge);
    assert_eq!(response.status, 400, "{}", response.text());
    let body = response.json();
    assert_eq!(body["error"], "value_out_of_bounds", "{body}");
    assert_eq!(body["key"], "time_lapsed", "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains(&MAX_INTEGER_VALUE.to_string()),
        "{body}"
    );
    let mut stored = Vec::new();
    for t in [MAX_INTEGER_VALUE, 60, 1] {
        let line = record(t, "A100");
        let response = post(server.addr, &line);
        assert_eq!(response.status, 201, "{t}: {}", response.text());
        stored.push(line);
    }
    assert_eq!(
        get(server.addr, "/api/v1/metrics").text(),
        library_metrics(&stored).to_json_string()
    );
}

#[test]
fn sqlite_a_huge_value_poisons_nothing() {
    let dir = tempfile::tempdir().unwrap();
    a_huge_value_poisons_nothing(sqlite_in(dir.path()));
}

#[test]
fn postgres_a_huge_value_poisons_nothing() {
    let Some(db) = TestDatabase::create("postgres_a_huge_value_poisons_nothing") else {
        return;
    };
    a_huge_value_poisons_nothing(db.store());
}

/// Records whose keys no store can keep are refused with 400 naming the key and
/// the rule, while good records posted at the same time by other clients (sharing
/// transactions with them) are all stored.
fn bad_keys_fail_only_themselves(store: StoreUrl) {
    let server = TestServer::start(config(store));
    let long = "g".repeat(MAX_KEY_BYTES + 100);
    for (gpu, rule) in [("\u{0}", "NUL"), (long.as_str(), "at most 1024 bytes")] {
        let response = post(server.addr, &record(5, gpu));
        assert_eq!(response.status, 400, "{}", response.text());
        let body = response.json();
        assert_eq!(body["error"], "bad_record", "{body}");
        let message = body["message"].as_str().unwrap();
        assert!(message.contains("metric key `"), "{message}");
        assert!(message.contains(rule), "{message}");
    }
    let good: Vec<String> = (0..400).map(|i| record(i % 7, "H100")).collect();
    let addr = server.addr;
    std::thread::scope(|scope| {
        for chunk in good.chunks(50) {
            scope.spawn(move || {
                let mut connection = Connection::open(addr).unwrap();
                for line in chunk {
                    let response = connection
                        .request("POST", "/api/v1/metrics", &[], line.as_bytes())
                        .unwrap();
                    assert_eq!(response.status, 201, "{}", response.text());
                }
            });
        }
        let long = long.as_str();
        for _ in 0..2 {
            scope.spawn(move || {
                let mut connection = Connection::open(addr).unwrap();
                for i in 0..100 {
                    let gpu = if i % 2 == 0 { "\u{0}" } else { long };
                    let line = record(1, gpu);
                    let response = connection
                        .request("POST", "/api/v1/metrics", &[], line.as_bytes())
                        .unwrap();
                    assert_eq!(response.status, 400, "{}", response.text());
                }
            });
        }
    });
    assert_eq!(
        get(server.addr, "/api/v1/metrics").text(),
        library_metrics(&good).to_json_string()
    );
}

#[test]
fn sqlite_bad_keys_fail_only_themselves() {
    let dir = tempfile::tempdir().unwrap();
    bad_keys_fail_only_themselves(sqlite_in(dir.path()));
}

#[test]
fn postgres_bad_keys_fail_only_themselves() {
    let Some(db) = TestDatabase::create("postgres_bad_keys_fail_only_themselves") else {
        return;
    };
    bad_keys_fail_only_themselves(db.store());
}

/// An envelope whose `now` is further from the service's clock than the bound is
/// refused (it would reset the day's sums for everyone); one within it is taken,
/// with or without an offset.
fn an_envelope_time_far_off_is_refused(store: StoreUrl) {
    let server = TestServer::start(ServiceConfig {
        max_envelope_skew: Some(DEFAULT_MAX_ENVELOPE_SKEW),
        ..config(store)
    });
    let at = |now: String| {
        serde_json::json!({
            "now": now,
            "record": {"action": "train", "network": "resnet", "time_lapsed": 60, "gpu": ["A100"]}
        })
        .to_string()
    };
    let local = |shift: chrono::TimeDelta| {
        (chrono::Local::now().naive_local() + shift)
            .format("%Y-%m-%dT%H:%M:%S")
            .to_string()
    };
    let utc = |shift: chrono::TimeDelta| {
        (chrono::Utc::now().naive_utc() + shift)
            .format("%Y-%m-%dT%H:%M:%S+00:00")
            .to_string()
    };
    let mut stored = Vec::new();
    for now in [
        local(chrono::TimeDelta::zero()),
        utc(chrono::TimeDelta::seconds(-60)),
    ] {
        let line = at(now);
        let response = post(server.addr, &line);
        assert_eq!(response.status, 201, "{line}: {}", response.text());
        stored.push(line);
    }
    let before = get(server.addr, "/api/v1/metrics").text().to_owned();
    for (now, side) in [
        ("2025-01-13T10:00:00".to_owned(), "behind"),
        (local(chrono::TimeDelta::days(1)), "ahead of"),
        (utc(chrono::TimeDelta::seconds(900)), "ahead of"),
    ] {
        let response = post(server.addr, &at(now.clone()));
        assert_eq!(response.status, 400, "{now}: {}", response.text());
        let body = response.json();
        assert_eq!(body["error"], "bad_record", "{body}");
        let message = body["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("s {side} the service's clock"))
                && message.contains("at most 300 s")
                && message.contains("--max-envelope-skew"),
            "{message}"
        );
    }
    assert_eq!(get(server.addr, "/api/v1/metrics").text(), before);
    assert_eq!(before, library_metrics(&stored).to_json_string());
}

#[test]
fn sqlite_an_envelope_time_far_off_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    an_envelope_time_far_off_is_refused(sqlite_in(dir.path()));
}

#[test]
fn postgres_an_envelope_time_far_off_is_refused() {
    let Some(db) = TestDatabase::create("postgres_an_envelope_time_far_off_is_refused") else {
        return;
    };
    an_envelope_time_far_off_is_refused(db.store());
}
