//! A real Prometheus scrapes a service while the corpus is posted to it: every
//! query of the TAO dashboard (`docs/grafana/tao-service.json`) returns data, and
//! the service's alert rules (`docs/grafana/tao-service.rules.yml`) load, evaluate
//! without error and raise what the corpus implies (refused records; a last
//! record long ago). Needs `prometheus` on PATH (`bash
//! scripts/prometheus-test-env.sh` installs it).

use std::path::PathBuf;
use std::time::Duration;

use crate::support::http;
use crate::support::records::{accepted_corpus, corpus};
use crate::support::server::{config, sqlite_in, TestServer};
use nixl_telemetry_testsupport::prometheus_server::{PrometheusServer, Scrape};

fn docs_grafana(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/grafana")
        .join(file)
}

#[test]
fn every_dashboard_query_returns_data_and_the_rules_evaluate() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(config(sqlite_in(dir.path())));
    let rules = docs_grafana("tao-service.rules.yml");
    let mut prometheus = PrometheusServer::start(
        dir.path(),
        Scrape {
            // A debug build on a loaded machine renders a large store slowly.
            interval: Duration::from_millis(500),
            rule_files: &[rules.as_path()],
            ..Scrape::new(server.addr, "tao")
        },
    );
    // Scraped before any record, so that every counter's rise is seen.
    prometheus.wait_for("a first scrape", Duration::from_secs(60), |p| {
        (p.scalar("tao_service_records_accepted_total") == Some(0.0)).then_some(())
    });

    let lines = corpus();
    let accepted = accepted_corpus();
    let mut connection = http::Connection::open(server.addr).unwrap();
    for chunk in lines.chunks(30) {
        for line in chunk {
            let response = connection
                .request("POST", "/api/v1/metrics", &[], line.as_bytes())
                .unwrap();
            assert!(matches!(response.status, 201 | 400), "{}", response.text());
        }
        // A few scrapes between chunks.
        std::thread::sleep(Duration::from_millis(1500));
    }
    let stored = accepted.len() as f64;
    prometheus.wait_for("the last records scraped", Duration::from_secs(60), |p| {
        (p.scalar("sum(max without (instance) (tao_jobs_total))") == Some(stored)
            && p.scalar("tao_service_records_accepted_total") == Some(stored))
        .then_some(())
    });

    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(docs_grafana("tao-service.json")).unwrap())
            .expect("the dashboard is JSON");
    let panels = dashboard["panels"].as_array().expect("panels");
    let titles: Vec<&str> = panels.iter().filter_map(|p| p["title"].as_str()).collect();
    for wanted in [
        "Jobs in the last hour, by action and status",
        "Failure rate",
        "GPU hours by GPU type",
        "Job duration distribution",
        "Refused records",
    ] {
        assert!(titles.contains(&wanted), "no panel {wanted:?}: {titles:?}");
    }
    let mut checked = 0;
    for panel in panels {
        let title = panel["title"].as_str().unwrap_or("?");
        let targets = panel["targets"].as_array().cloned().unwrap_or_default();
        assert!(!targets.is_empty(), "panel {title} has no query");
        for target in targets {
            let expr = target["expr"].as_str().expect("a PromQL expr");
            let promql = expr
                .replace("$__rate_interval", "1m")
                .replace("$__range", "5m")
                .replace("$action", ".*");
            assert!(!promql.contains('$'), "unknown variable in {expr}");
            // A scrape that took longer than its timeout leaves every series stale
            // until the next one (on a loaded machine): a few tries.
            prometheus.wait_for(
                &format!("panel {title:?}: {promql} to return a finite value"),
                Duration::from_secs(20),
                |p| {
                    let result = p
                        .query(&promql)
                        .unwrap_or_else(|e| panic!("panel {title:?}: {promql}: {e}"));
                    result
                        .iter()
                        .any(|sample| {
                            sample["value"][1]
                                .as_str()
                                .and_then(|v| v.parse::<f64>().ok())
                                .is_some_and(f64::is_finite)
                        })
                        .then_some(())
                },
            );
            checked += 1;
        }
    }
    assert!(checked >= 15, "{checked} queries");
    // What the panels show adds up to the corpus: every job in the time range
    // (which begins before the first scrape), the first of each label set too.
    let in_range = panels
        .iter()
        .find(|p| p["title"] == "Jobs in the time range")
        .unwrap()["targets"][0]["expr"]
        .as_str()
        .unwrap()
        .replace("$__range", "1h")
        .replace("$action", ".*");
    assert_eq!(prometheus.scalar(&format!("sum({in_range})")), Some(stored));
    assert_eq!(
        prometheus.scalar("sum(tao_service_records_refused_total{cause=\"unknown_key\"})"),
        Some((lines.len() - accepted.len()) as f64)
    );

    // The rules: loaded, healthy, and raising what the corpus implies.
    let groups = prometheus
        .api("/api/v1/rules")
        .expect("the rules API answers");
    let rules: Vec<&serde_json::Value> = groups["data"]["groups"]
        .as_array()
        .expect("rule groups")
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap())
        .collect();
    assert_eq!(rules.len(), 3, "{groups}");
    let alerts = |p: &PrometheusServer| -> Vec<(String, String)> {
        p.query("ALERTS")
            .unwrap()
            .iter()
            .map(|a| {
                (
                    a["metric"]["alertname"].as_str().unwrap().to_owned(),
                    a["metric"]["alertstate"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let raised = prometheus.wait_for("the alerts", Duration::from_secs(60), |p| {
        let raised = alerts(p);
        let has = |name: &str| raised.iter().any(|(n, _)| n == name);
        (has("TaoServiceRecordsRefused") && has("TaoServiceNoRecentRecord")).then_some(raised)
    });
    assert!(
        raised.contains(&("TaoServiceRecordsRefused".to_owned(), "firing".to_owned())),
        "{raised:?}"
    );
    assert!(
        !raised
            .iter()
            .any(|(n, _)| n == "TaoServiceStoreUnavailable"),
        "{raised:?}"
    );
    let groups = prometheus.api("/api/v1/rules").unwrap();
    for group in groups["data"]["groups"].as_array().unwrap() {
        for rule in group["rules"].as_array().unwrap() {
            assert_eq!(rule["health"], "ok", "{rule}");
        }
    }
}
