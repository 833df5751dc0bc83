//! While the store cannot be reached, posts are answered 503 and nothing of them
//! is stored, the health check and `/metrics` say so, and the service recovers by
//! itself once the store is back.

use crate::support::http::{get, post};
use crate::support::postgres::{TestDatabase, POSTGRES_URL_VARIABLE};
use crate::support::records::library_metrics;
use crate::support::sample;
use crate::support::server::{config, TestServer};

fn admin(sql: &str) {
    let url = std::env::var(POSTGRES_URL_VARIABLE).unwrap();
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    client.batch_execute(sql).unwrap();
}

#[test]
fn an_unreachable_postgres_is_503_and_the_service_recovers() {
    let Some(db) = TestDatabase::create("an_unreachable_postgres_is_503_and_the_service_recovers")
    else {
        return;
    };
    let name = db
        .url
        .rsplit('/')
        .next()
        .unwrap()
        .split('?')
        .next()
        .unwrap()
        .to_owned();
    let server = TestServer::start(config(db.store()));
    let line = |t: i64| {
        format!(
            r#"{{"now": "2025-01-13T10:00:00", "record": {{"action": "train", "time_lapsed": {t}}}}}"#
        )
    };
    let mut stored = vec![line(1)];
    assert_eq!(post(server.addr, &stored[0]).status, 201);

    // Nobody may connect, and every connection to the database is ended.
    admin(&format!(
        "ALTER DATABASE {name} ALLOW_CONNECTIONS false; \
         SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"
    ));
    for t in [2, 3] {
        let response = post(server.addr, &line(t));
        assert_eq!(response.status, 503, "{}", response.text());
        let body = response.json();
        assert_eq!(body["error"], "store_unavailable");
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .contains("nothing was stored"),
            "{body}"
        );
    }
    let health = get(server.addr, "/healthz");
    assert_eq!(health.status, 503, "{}", health.text());
    assert_eq!(health.json()["status"], "unavailable");
    assert_eq!(get(server.addr, "/api/v1/metrics").status, 503);
    // /metrics still answers, with the instance's own series saying what happened.
    let exposition = get(server.addr, "/metrics");
    assert_eq!(exposition.status, 200, "{}", exposition.text());
    let text = exposition.text();
    assert_eq!(sample(text, "tao_service_store_up"), Some(0.0), "{text}");
    assert_eq!(
        sample(
            text,
            "tao_service_records_refused_total{cause=\"store_unavailable\"}"
        ),
        Some(2.0),
        "{text}"
    );
    assert!(!text.contains("tao_jobs_total{"), "{text}");
    // Each write is timed, the one that failed on the ended connection and the one
    // that could not open a new connection alike.
    assert_eq!(
        sample(
            text,
            "tao_service_store_duration_seconds_count{operation=\"write\"}"
        ),
        Some(3.0),
        "{text}"
    );

    admin(&format!("ALTER DATABASE {name} ALLOW_CONNECTIONS true"));
    stored.push(line(4));
    assert_eq!(post(server.addr, &stored[1]).status, 201);
    assert_eq!(get(server.addr, "/healthz").status, 200);
    let text = get(server.addr, "/metrics").text().to_owned();
    assert_eq!(sample(&text, "tao_service_store_up"), Some(1.0), "{text}");
    assert_eq!(
        sample(&text, "tao_service_records_accepted_total"),
        Some(2.0)
    );
    assert_eq!(
        get(server.addr, "/api/v1/metrics").text(),
        library_metrics(&stored).to_json_string()
    );
}

#[test]
fn healthz_is_503_while_every_write_fails() {
    let Some(db) = TestDatabase::create("healthz_is_503_while_every_write_fails") else {
        return;
    };
    let server = TestServer::start(config(db.store()));
    let line = |t: i64| format!(r#"{{"action": "train", "time_lapsed": {t}}}"#);
    assert_eq!(post(server.addr, &line(1)).status, 201);
    // Writes fail as on a full disk; reads still work.
    let mut client = postgres::Client::connect(&db.url, postgres::NoTls).unwrap();
    client
        .batch_execute(
            "CREATE FUNCTION refuse_writes() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
             RAISE EXCEPTION 'could not extend file: No space left on device' \
             USING ERRCODE = 'disk_full'; END $$; \
             CREATE TRIGGER refuse_writes BEFORE UPDATE ON nixl_telemetry_state \
             FOR EACH ROW EXECUTE FUNCTION refuse_writes()",
        )
        .unwrap();
    let response = post(server.addr, &line(2));
    assert_eq!(response.status, 503, "{}", response.text());
    assert_eq!(get(server.addr, "/api/v1/metrics").status, 200);
    let health = get(server.addr, "/healthz");
    assert_eq!(health.status, 503, "{}", health.text());
    assert!(
        health.text().contains("No space left on device"),
        "{}",
        health.text()
    );
    // Writes work again: healthy before any record is posted.
    client
        .batch_execute("DROP TRIGGER refuse_writes ON nixl_telemetry_state")
        .unwrap();
    let health = get(server.addr, "/healthz");
    assert_eq!(health.status, 200, "{}", health.text());
    assert_eq!(post(server.addr, &line(3)).status, 201);
}
