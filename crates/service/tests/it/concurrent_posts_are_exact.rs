//! 8 clients posting 500 records each at once produce exactly the metrics of
//! applying the 4,000 records one by one with the library: no update is lost, on
//! SQLite and on PostgreSQL, with one service instance or two on one store, with
//! records sharing transactions or one transaction per record.

use std::net::SocketAddr;

use crate::support::http::get;
use crate::support::post_from_clients;
use crate::support::postgres::TestDatabase;
use crate::support::records::{accepted_corpus, at_one_time, library_metrics};
use crate::support::server::{config, sqlite_in, TestServer};
use nixl_telemetry_service::{ServiceConfig, StoreUrl};

const CLIENTS: usize = 8;
const PER_CLIENT: usize = 500;

/// The records: the corpus's, all at one time (so that any order of applying them
/// gives the same metrics), repeated to `CLIENTS * PER_CLIENT`.
fn records() -> Vec<String> {
    let corpus = at_one_time(&accepted_corpus(), "2025-01-13T12:00:00");
    assert!(corpus.len() > 100, "{} records", corpus.len());
    corpus
        .iter()
        .cycle()
        .take(CLIENTS * PER_CLIENT)
        .cloned()
        .collect()
}

/// Runs the clients against `instances` services on `store` and compares the
/// stored map with the library's, byte for byte.
fn exact_on(store: StoreUrl, instances: usize, max_batch: usize) {
    let servers: Vec<TestServer> = (0..instances)
        .map(|_| {
            TestServer::start(ServiceConfig {
                max_batch,
                ..config(store.clone())
            })
        })
        .collect();
    let addrs: Vec<SocketAddr> = servers.iter().map(|s| s.addr).collect();
    let records = records();
    post_from_clients(&addrs, &records, PER_CLIENT);
    let expected = library_metrics(&records).to_json_string();
    for addr in &addrs {
        assert_eq!(
            get(*addr, "/api/v1/metrics").text(),
            expected,
            "{store}, {instances} instance(s), batches of up to {max_batch}"
        );
    }
}

#[test]
fn sqlite_loses_no_update() {
    let dir = tempfile::tempdir().unwrap();
    exact_on(
        sqlite_in(dir.path()),
        1,
        nixl_telemetry_service::DEFAULT_MAX_BATCH,
    );
}

#[test]
fn sqlite_one_transaction_per_record_loses_no_update() {
    let dir = tempfile::tempdir().unwrap();
    exact_on(sqlite_in(dir.path()), 1, 1);
}

#[test]
fn two_instances_on_one_sqlite_file_lose_no_update() {
    let dir = tempfile::tempdir().unwrap();
    exact_on(
        sqlite_in(dir.path()),
        2,
        nixl_telemetry_service::DEFAULT_MAX_BATCH,
    );
}

#[test]
fn postgres_loses_no_update() {
    let Some(db) = TestDatabase::create("postgres_loses_no_update") else {
        return;
    };
    exact_on(db.store(), 1, nixl_telemetry_service::DEFAULT_MAX_BATCH);
}

#[test]
fn two_instances_on_one_postgres_lose_no_update() {
    let Some(db) = TestDatabase::create("two_instances_on_one_postgres_lose_no_update") else {
        return;
    };
    exact_on(db.store(), 2, nixl_telemetry_service::DEFAULT_MAX_BATCH);
}

#[test]
fn two_postgres_instances_one_transaction_per_record_lose_no_update() {
    let Some(db) = TestDatabase::create("two_postgres_instances_one_transaction_per_record") else {
        return;
    };
    exact_on(db.store(), 2, 1);
}
