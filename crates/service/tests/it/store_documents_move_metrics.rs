//! Metrics move between stores as one document in the format of TAO's migration
//! scripts: SQLite to PostgreSQL and back without a difference, a TAO export into
//! ours (MongoDB's `_id` and `name` ignored), merge and replace as TAO's scripts
//! describe them, dry runs that change nothing, and imports that lose no record
//! posted meanwhile.

use std::thread;

use crate::support::http::{self, get};
use crate::support::postgres::TestDatabase;
use crate::support::records::{accepted_corpus, at_one_time, library_metrics};
use crate::support::server::{config, sqlite_in, TestServer};
use crate::support::{post_from_clients, promtool_clean, sample};
use nixl_telemetry_service::{ImportMode, MetricsDocument, Store, StoreUrl};

fn tao_export() -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tao_export.json"),
    )
    .expect("the TAO export fixture")
}

/// Posts the accepted corpus to a service on `store` and returns the stored map.
fn fill(store: &StoreUrl) -> String {
    let server = TestServer::start(config(store.clone()));
    let mut connection = http::Connection::open(server.addr).unwrap();
    for line in accepted_corpus() {
        let response = connection
            .request("POST", "/api/v1/metrics", &[], line.as_bytes())
            .unwrap();
        assert_eq!(response.status, 201, "{}", response.text());
    }
    get(server.addr, "/api/v1/metrics").text().to_owned()
}

fn export(store: &StoreUrl) -> String {
    Store::open(store)
        .unwrap()
        .metrics()
        .unwrap()
        .to_json_string()
}

#[test]
fn sqlite_to_postgres_and_back_is_exact() {
    let Some(db) = TestDatabase::create("sqlite_to_postgres_and_back_is_exact") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sqlite = sqlite_in(dir.path());
    let served = fill(&sqlite);
    let document = export(&sqlite);
    assert_eq!(document, served);
    assert_eq!(
        document,
        library_metrics(&accepted_corpus()).to_json_string()
    );

    let postgres = db.store();
    let parsed = MetricsDocument::parse(&document).unwrap();
    let summary = Store::open(&postgres)
        .unwrap()
        .import(&parsed, ImportMode::Merge, false)
        .unwrap();
    assert_eq!(
        (summary.current, summary.added),
        (0, parsed.metrics().len())
    );
    assert_eq!(export(&postgres), document);

    // Both stores go on alike: the next record's `old_now` is the imported
    // `last_updated` (a new day resets `time_lapsed_today` on both).
    let next = r#"{"now": "2025-06-01T08:00:00", "record": {"action": "train", "time_lapsed": 7}}"#;
    for store in [&sqlite, &postgres] {
        let server = TestServer::start(config(store.clone()));
        let response = http::post(server.addr, next);
        assert_eq!(response.json()["metrics"]["time_lapsed_today"], 7);
    }
    assert_eq!(export(&sqlite), export(&postgres));

    // And back, replacing what a fresh SQLite store held.
    let back = tempfile::tempdir().unwrap();
    let back = sqlite_in(back.path());
    let server = TestServer::start(config(back.clone()));
    assert_eq!(http::post(server.addr, next).status, 201);
    drop(server);
    let from_postgres = MetricsDocument::parse(&export(&postgres)).unwrap();
    let summary = Store::open(&back)
        .unwrap()
        .import(&from_postgres, ImportMode::Replace, false)
        .unwrap();
    assert_eq!(summary.removed, 0, "{summary}");
    assert_eq!(export(&back), export(&postgres));
}

#[test]
fn a_tao_export_imports_with_a_dry_run_first() {
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite_in(dir.path());
    let text = tao_export();
    let document = MetricsDocument::parse(&text).unwrap();
    assert_eq!(document.ignored_keys(), ["_id", "name"]);
    let raw: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&text).unwrap();
    let metric_count = raw.len() - 3; // _id, name, last_updated

    let mut opened = Store::open(&store).unwrap();
    let dry = opened.import(&document, ImportMode::Merge, true).unwrap();
    assert!(dry.dry_run);
    assert_eq!(
        (dry.current, dry.imported, dry.added, dry.changed, dry.after),
        (0, metric_count, metric_count, 0, metric_count)
    );
    assert_eq!(
        dry.last_updated_after.as_deref(),
        raw["last_updated"].as_str()
    );
    assert_eq!(
        opened.metrics().unwrap().to_json_string(),
        "{}\n",
        "a dry run changes nothing"
    );

    let done = opened.import(&document, ImportMode::Merge, false).unwrap();
    assert_eq!(
        done,
        nixl_telemetry_service::ImportSummary {
            dry_run: false,
            ..dry
        }
    );
    // The store holds the document, less MongoDB's keys, in our sorted form.
    let mut expected = raw.clone();
    expected.remove("_id");
    expected.remove("name");
    let stored: serde_json::Value = serde_json::from_str(&export(&store)).unwrap();
    assert_eq!(stored, serde_json::Value::Object(expected));
    // Ten keys of TAO's have label values TAO did not escape: kept in the JSON
    // map, left out of the labeled families on /metrics (and counted there).
    assert_eq!(done.not_series.len(), 10, "{done}");
    let server = TestServer::start(config(store.clone()));
    let exposition = get(server.addr, "/metrics").text().to_owned();
    assert_eq!(
        sample(&exposition, "tao_stored_keys_unreadable"),
        Some(10.0),
        "{exposition}"
    );
    promtool_clean(&exposition);
    drop(server);
    // Importing it again changes nothing.
    let again = opened.import(&document, ImportMode::Merge, false).unwrap();
    assert_eq!(
        (again.added, again.changed, again.unchanged),
        (0, 0, metric_count)
    );
}

#[test]
fn merge_lets_the_document_win_and_replace_removes_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite_in(dir.path());
    let mut opened = Store::open(&store).unwrap();
    let base = MetricsDocument::parse(
        r#"{"a_total": 1, "b_total": 2, "c_total": 3, "last_updated": "2025-01-01T00:00:00"}"#,
    )
    .unwrap();
    opened.import(&base, ImportMode::Replace, false).unwrap();
    let incoming = MetricsDocument::parse(r#"{"b_total": 20, "d_total": 4}"#).unwrap();

    let merged = opened.import(&incoming, ImportMode::Merge, false).unwrap();
    assert_eq!((merged.added, merged.changed, merged.after), (1, 1, 4));
    assert_eq!(
        export(&store),
        "{\n \"a_total\": 1,\n \"b_total\": 20,\n \"c_total\": 3,\n \"d_total\": 4,\n \"last_updated\": \"2025-01-01T00:00:00\"\n}\n"
    );
    let replaced = opened
        .import(&incoming, ImportMode::Replace, false)
        .unwrap();
    assert_eq!((replaced.removed, replaced.after), (2, 2));
    assert_eq!(export(&store), "{\n \"b_total\": 20,\n \"d_total\": 4\n}\n");
}

/// An import is one transaction: records posted while it runs are applied before
/// or after it, never lost.
fn import_during_posts(store: StoreUrl) {
    let server = TestServer::start(config(store.clone()));
    let records = at_one_time(&accepted_corpus(), "2025-01-13T12:00:00");
    let records: Vec<String> = records.iter().cycle().take(1200).cloned().collect();
    // Keys no record writes, and no last_updated: the result does not depend on
    // where the import falls among the records.
    let document =
        MetricsDocument::parse(r#"{"imported_a_total": 5, "imported_b_total": 6}"#).unwrap();
    thread::scope(|scope| {
        let addr = server.addr;
        let records = &records;
        scope.spawn(move || post_from_clients(&[addr], records, 300));
        let mut opened = Store::open(&store).unwrap();
        for _ in 0..20 {
            opened.import(&document, ImportMode::Merge, false).unwrap();
            thread::sleep(std::time::Duration::from_millis(5));
        }
    });
    let mut expected = library_metrics(&records);
    expected.insert("imported_a_total", 5).unwrap();
    expected.insert("imported_b_total", 6).unwrap();
    assert_eq!(
        get(server.addr, "/api/v1/metrics").text(),
        expected.to_json_string()
    );
}

#[test]
fn imports_lose_no_record_posted_meanwhile_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    import_during_posts(sqlite_in(dir.path()));
}

#[test]
fn imports_lose_no_record_posted_meanwhile_on_postgres() {
    let Some(db) = TestDatabase::create("imports_lose_no_record_posted_meanwhile_on_postgres")
    else {
        return;
    };
    import_during_posts(db.store());
}
