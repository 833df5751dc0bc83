//! What the service answers about the store is true, whatever the store does:
//! a commit whose answer is lost is found out before answering (201: stored), a
//! store that stops answering gets 503 (and `/healthz` 503) within the bounds,
//! and a record answered 503 is never applied later, even when the frozen
//! server finally runs what it was sent.
//!
//! The service reaches the tests' real PostgreSQL through a relay that can cut
//! a connection right after a `COMMIT` or hold every byte for a while.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::support::http::{get, post, Connection};
use crate::support::postgres::TestDatabase;
use crate::support::proxy::Proxy;
use crate::support::records::library_metrics;
use crate::support::server::{config, TestServer};
use nixl_telemetry_service::ServiceConfig;

fn line(t: i64) -> String {
    format!(
        r#"{{"now": "2025-01-13T10:00:00", "record": {{"action": "train", "time_lapsed": {t}}}}}"#
    )
}

/// The relay in front of the database's server, and the service behind it.
fn relayed(db: &TestDatabase, store_timeout: Duration) -> (Proxy, TestServer) {
    let start = db.url.find('@').unwrap() + 1;
    let end = start + db.url[start..].find('/').unwrap();
    let upstream: SocketAddr = db.url[start..end].parse().unwrap();
    let proxy = Proxy::start(upstream);
    let server = TestServer::start(ServiceConfig {
        store_timeout,
        commit_check_timeout: Duration::from_secs(20),
        ..config(proxy.url(&db.url).parse().unwrap())
    });
    (proxy, server)
}

/// A request on a connection that gives up after `seconds`.
fn post_within(addr: SocketAddr, body: &str, seconds: u64) -> crate::support::http::Response {
    let mut connection = Connection::open(addr).unwrap();
    connection.set_read_timeout(Duration::from_secs(seconds));
    connection
        .request("POST", "/api/v1/metrics", &[], body.as_bytes())
        .unwrap_or_else(|e| panic!("no answer within {seconds} s: {e}"))
}

#[test]
fn a_commit_whose_answer_is_lost_is_found_out() {
    let Some(db) = TestDatabase::create("a_commit_whose_answer_is_lost_is_found_out") else {
        return;
    };
    let (proxy, server) = relayed(&db, Duration::from_secs(5));
    let mut stored = vec![line(1)];
    assert_eq!(post(server.addr, &stored[0]).status, 201);
    for t in 2..5 {
        proxy.cut_after_next_commit();
        let response = post_within(server.addr, &line(t), 30);
        // The commit reached the server and happened: 201, not "nothing stored".
        assert_eq!(response.status, 201, "{}", response.text());
        stored.push(line(t));
        assert_eq!(proxy.cuts(), t as usize - 1);
    }
    assert_eq!(
        get(server.addr, "/api/v1/metrics").text(),
        library_metrics(&stored).to_json_string()
    );
}

#[test]
fn a_frozen_store_is_503_in_bound_and_nothing_answered_503_is_applied_later() {
    let Some(db) = TestDatabase::create(
        "a_frozen_store_is_503_in_bound_and_nothing_answered_503_is_applied_later",
    ) else {
        return;
    };
    let (proxy, server) = relayed(&db, Duration::from_secs(1));
    let mut stored = vec![line(1)];
    assert_eq!(post(server.addr, &stored[0]).status, 201);
    assert_eq!(get(server.addr, "/healthz").status, 200);

    // The server freezes while a transaction's writes and COMMIT are on their way.
    proxy.freeze_at_next_commit();
    let addr = server.addr;
    let frozen_post = std::thread::spawn(move || post_within(addr, &line(2), 60));
    let started = Instant::now();
    while !proxy.is_frozen() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no COMMIT was sent"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // The health check answers within a second, and says so.
    let asked = Instant::now();
    let mut health = Connection::open(server.addr).unwrap();
    health.set_read_timeout(Duration::from_secs(10));
    let response = health.request("GET", "/healthz", &[], b"").unwrap();
    assert_eq!(response.status, 503, "{}", response.text());
    assert!(
        asked.elapsed() < Duration::from_millis(1800),
        "{:?}",
        asked.elapsed()
    );
    // Another record is answered 503 within the bound, not left hanging.
    let asked = Instant::now();
    let response = post_within(server.addr, &line(3), 10);
    assert_eq!(response.status, 503, "{}", response.text());
    assert!(
        asked.elapsed() < Duration::from_secs(4),
        "{:?}",
        asked.elapsed()
    );

    // Long after the writer's deadline, the server gets what it was sent.
    std::thread::sleep(Duration::from_secs(4));
    proxy.thaw();
    let response = frozen_post.join().unwrap();
    match response.status {
        201 => stored.push(line(2)),
        503 => {}
        other => panic!("{other}: {}", response.text()),
    }
    // Whatever was answered is what is stored, now and later.
    std::thread::sleep(Duration::from_secs(1));
    stored.push(line(4));
    assert_eq!(post(server.addr, &line(4)).status, 201);
    assert_eq!(get(server.addr, "/healthz").status, 200);
    assert_eq!(
        get(server.addr, "/api/v1/metrics").text(),
        library_metrics(&stored).to_json_string()
    );
}
