//! The Prometheus plug-in checked by a real Prometheus server.
//!
//! `nixl-telemetry emit --hold` records a known event file into telemetry built
//! from the environment with `NIXL_TELEMETRY_EXPORTER=prometheus`; a Prometheus
//! server on a free loopback port scrapes it every 200 ms; the test then asks
//! Prometheus's HTTP query API for what the events imply, pipes our `/metrics`
//! through `promtool check metrics`, and runs every panel query of
//! `docs/grafana/nixl-telemetry.json`. Every process is killed when the test
//! ends, pass or fail. Needs `prometheus` and `promtool` on PATH
//! (`bash scripts/prometheus-test-env.sh` installs them).

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use nixl_telemetry_testsupport::promtool::installed as tool;

use crate::prometheus_support::{
    build_plugin, cli_without_nixl_env, free_addr, http_get, percent_encode, wait_for,
    workspace_root, PrometheusServer, Reaped, Scrape,
};

const AGENT: &str = "e2e-agent";

/// The default bounds of agent_xfer_time_us (docs/prometheus.md): NIXL
/// 1.5.1's own.
const DEFAULT_BUCKETS_US: [f64; 18] = [
    10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1e3, 2.5e3, 5e3, 1e4, 2.5e4, 5e4, 1e5, 2.5e5, 5e5, 1e6,
    5e6, 1e7,
];

/// Prometheus's `histogram_quantile` on cumulative buckets (linear
/// interpolation inside the bucket that holds the rank; the first bucket
/// starts at 0).
fn expected_quantile(q: f64, values: &[u64]) -> f64 {
    let mut counts = vec![0u64; DEFAULT_BUCKETS_US.len() + 1];
    for &v in values {
        let i = DEFAULT_BUCKETS_US
            .iter()
            .position(|&b| v as f64 <= b)
            .unwrap_or(DEFAULT_BUCKETS_US.len());
        counts[i] += 1;
    }
    let total = values.len() as f64;
    let rank = q * total;
    let mut cumulative = 0.0;
    for (i, &c) in counts.iter().enumerate() {
        let before = cumulative;
        cumulative += c as f64;
        if cumulative >= rank {
            assert!(
                i < DEFAULT_BUCKETS_US.len(),
                "rank in +Inf: pick other values"
            );
            let lower = if i == 0 {
                0.0
            } else {
                DEFAULT_BUCKETS_US[i - 1]
            };
            let upper = DEFAULT_BUCKETS_US[i];
            return lower + (upper - lower) * (rank - before) / c as f64;
        }
    }
    unreachable!()
}

#[test]
fn a_real_prometheus_scrapes_what_the_events_imply() {
    tool("prometheus");
    tool("promtool");
    let plugin = build_plugin("nixl-telemetry-exporter-prometheus");
    let tmp = tempfile::tempdir().unwrap();
    let plugin_dir = tmp.path().join("plugins");
    std::fs::create_dir(&plugin_dir).unwrap();
    std::fs::copy(
        &plugin,
        plugin_dir.join("libtelemetry_exporter_prometheus.so"),
    )
    .unwrap();

    // The events: 100 sending transfers (90 of 40 µs, 10 of 2000 µs), 5
    // receiving ones, post times, memory, errors, a backend counter.
    let mut lines = Vec::new();
    let mut tx_times = Vec::new();
    let mut tx_bytes = 0u64;
    for i in 0..100u64 {
        let us = if i % 10 == 9 { 2000 } else { 40 };
        let bytes = 4096 + i;
        tx_times.push(us);
        tx_bytes += bytes;
        lines.push(format!(
            r#"{{"xfer":{{"us":{us},"write":true,"bytes":{bytes}}}}}"#
        ));
    }
    for _ in 0..5 {
        lines.push(r#"{"xfer":{"us":300,"write":false,"bytes":1000}}"#.to_owned());
    }
    for us in [3, 8, 30] {
        lines.push(format!(r#"{{"post_time":{us}}}"#));
    }
    lines.push(r#"{"memory_registered":65536}"#.to_owned());
    lines.push(r#"{"memory_deregistered":4096}"#.to_owned());
    for status in [
        "NIXL_ERR_BACKEND",
        "NIXL_ERR_BACKEND",
        "NIXL_ERR_BACKEND",
        "NIXL_ERR_NOT_FOUND",
    ] {
        lines.push(format!(r#"{{"error":"{status}"}}"#));
    }
    lines.push(r#"{"error":"NIXL_ERR_SOMETHING_ELSE"}"#.to_owned());
    lines.push(r#"{"category":"BACKEND","name":"ucx_rndv_reads","value":7}"#.to_owned());
    let events = tmp.path().join("events.jsonl");
    std::fs::write(&events, lines.join("\n") + "\n").unwrap();

    // The agent, held open for the whole test (killed on drop).
    let exporter_addr = free_addr();
    let mut emit = Reaped::spawn(
        "nixl-telemetry emit",
        cli_without_nixl_env()
            .args(["emit", "--agent", AGENT, "--hold", "600", "--events"])
            .arg(&events)
            .env("NIXL_TELEMETRY_ENABLE", "1")
            .env("NIXL_TELEMETRY_EXPORTER", "prometheus")
            .env("NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR", &plugin_dir)
            .env(
                "NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH",
                exporter_addr.to_string(),
            ),
        tmp.path().join("emit.log"),
    );
    let tx_series = format!("agent_tx_bytes_total{{agent_name=\"{AGENT}\",hostname=\"");
    let tx_value = format!("}} {tx_bytes}");
    let metrics = wait_for(
        "the exporter to serve the events",
        Duration::from_secs(60),
        || {
            emit.assert_running();
            match http_get(exporter_addr, "/metrics", None) {
                Ok((200, body))
                    if body
                        .lines()
                        .any(|l| l.starts_with(&tx_series) && l.ends_with(&tx_value)) =>
                {
                    Some(body)
                }
                _ => None,
            }
        },
    );
    nixl_telemetry_testsupport::promtool::assert_exporter_output_accepted(&metrics);

    // Another process cannot take the address: its exporter creation fails,
    // naming it, and the first one goes on serving.
    let second = cli_without_nixl_env()
        .args(["emit", "--agent", "intruder", "--events"])
        .arg(&events)
        .env("NIXL_TELEMETRY_ENABLE", "1")
        .env("NIXL_TELEMETRY_EXPORTER", "prometheus")
        .env("NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR", &plugin_dir)
        .env(
            "NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH",
            exporter_addr.to_string(),
        )
        .stdin(Stdio::null())
        .output()
        .expect("a second nixl-telemetry emit runs");
    let said = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{said}");
    assert!(
        said.contains(&format!(
            "cannot listen for Prometheus scrapes on {exporter_addr}"
        )),
        "{said}"
    );
    emit.assert_running();
    assert!(matches!(
        http_get(exporter_addr, "/metrics", None),
        Ok((200, _))
    ));

    // The server, scraping every 200 ms.
    let mut prometheus = PrometheusServer::start(tmp.path(), Scrape::new(exporter_addr, "nixl"));
    // A few scrapes, so rate() has samples to work with.
    wait_for(
        "several successful scrapes",
        Duration::from_secs(60),
        || {
            prometheus.assert_running();
            emit.assert_running();
            let n = prometheus.scalar(&format!(
                "count_over_time(up{{job=\"nixl\",instance=\"{exporter_addr}\"}}[1m])"
            ))?;
            let up = prometheus.scalar("min_over_time(up{job=\"nixl\"}[1m])")?;
            (n >= 5.0 && up == 1.0).then_some(())
        },
    );

    let agent = format!("agent_name=\"{AGENT}\"");
    let value = |promql: String| {
        prometheus.scalar(&promql).unwrap_or_else(|| {
            panic!(
                "no series for {promql}\nprometheus log:\n{}",
                prometheus.log()
            )
        })
    };
    assert_eq!(
        value(format!("agent_tx_bytes_total{{{agent}}}")),
        tx_bytes as f64
    );
    assert_eq!(
        value(format!("agent_tx_requests_num_total{{{agent}}}")),
        100.0
    );
    assert_eq!(value(format!("agent_rx_bytes_total{{{agent}}}")), 5000.0);
    assert_eq!(
        value(format!("agent_xfer_time_total{{{agent}}}")),
        (90 * 40 + 10 * 2000 + 5 * 300) as f64
    );
    assert_eq!(
        value(format!("agent_memory_registered_bytes{{{agent}}}")),
        61440.0
    );
    let p99 = value(format!(
        "histogram_quantile(0.99, sum by (le) (agent_xfer_time_us_bucket{{{agent}}}))"
    ));
    let mut all_times = tx_times.clone();
    all_times.extend([300; 5]);
    let want = expected_quantile(0.99, &all_times);
    assert!(
        (p99 - want).abs() < 1e-6,
        "p99 {p99}, the events imply {want}"
    );
    let p50 = value(format!(
        "histogram_quantile(0.5, sum by (le) (agent_xfer_time_us_bucket{{{agent}}}))"
    ));
    let want = expected_quantile(0.5, &all_times);
    assert!(
        (p50 - want).abs() < 1e-6,
        "p50 {p50}, the events imply {want}"
    );
    assert_eq!(
        value(format!("agent_errors_total{{{agent},status=\"backend\"}}")),
        3.0
    );
    assert_eq!(
        value(format!(
            "agent_errors_total{{{agent},status=\"not_found\"}}"
        )),
        1.0
    );
    assert_eq!(
        value(format!(
            "agent_errors_total{{{agent},status=\"something_else\"}}"
        )),
        1.0
    );
    assert_eq!(
        value(format!("agent_errors_total{{{agent},status=\"canceled\"}}")),
        0.0
    );
    assert_eq!(value(format!("sum(agent_errors_total{{{agent}}})")), 5.0);
    assert_eq!(
        value(format!(
            "ucx_rndv_reads_total{{{agent},category=\"BACKEND\"}}"
        )),
        7.0
    );
    assert_eq!(
        prometheus
            .expect_query(&format!("agent_errors_total{{{agent}}}"))
            .len(),
        12 + 1,
        "the 12 known statuses and the new one"
    );

    // Prometheus scraped OpenMetrics (it asks for it first): its metadata knows
    // the counter family by its OpenMetrics name, without `_total`.
    let metadata = |metric: &str| -> Vec<Value> {
        let path = format!(
            "/api/v1/targets/metadata?match_target={}&metric={metric}",
            percent_encode("{job=\"nixl\"}")
        );
        let (_, body) = http_get(prometheus.addr, &path, None).unwrap();
        let json: Value = serde_json::from_str(&body).unwrap();
        json["data"].as_array().cloned().unwrap_or_default()
    };
    let family = metadata("agent_tx_bytes");
    assert_eq!(family.len(), 1, "{family:?}");
    assert_eq!(family[0]["type"], "counter");
    assert_eq!(metadata("agent_xfer_time_us")[0]["type"], "histogram");
    // NIXL's label set: agent_name and hostname (Prometheus adds job and
    // instance), no category.
    let labels = &prometheus.expect_query(&format!("agent_tx_bytes_total{{{agent}}}"))[0]["metric"];
    let mut names: Vec<&str> = labels
        .as_object()
        .expect("a label set")
        .keys()
        .map(String::as_str)
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["__name__", "agent_name", "hostname", "instance", "job"]
    );
    assert!(!labels["hostname"].as_str().unwrap_or("").is_empty());
    // The HTTP server's own families, scraped like any other.
    assert!(value("exposer_scrapes_total".to_owned()) >= 4.0);
    assert!(value("exposer_transferred_bytes_total".to_owned()) > 0.0);
    assert!(value("exposer_request_latencies_count".to_owned()) >= 4.0);
    assert!(value("exposer_request_latencies{quantile=\"0.99\"}".to_owned()) >= 0.0);
    assert_eq!(metadata("exposer_request_latencies")[0]["type"], "summary");

    // Every panel of the dashboard returns series.
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(workspace_root().join("docs/grafana/nixl-telemetry.json"))
            .expect("docs/grafana/nixl-telemetry.json"),
    )
    .expect("the dashboard is JSON");
    let panels = dashboard["panels"].as_array().expect("panels");
    assert!(panels.len() >= 6);
    let mut checked = 0;
    for panel in panels {
        let title = panel["title"].as_str().unwrap_or("?");
        let targets = panel["targets"].as_array().cloned().unwrap_or_default();
        assert!(!targets.is_empty(), "panel {title} has no query");
        for target in targets {
            let expr = target["expr"].as_str().expect("a PromQL expr");
            let promql = expr
                .replace("$__rate_interval", "10s")
                .replace("$hostname", ".*")
                .replace("$agent", ".*");
            assert!(!promql.contains('$'), "unknown variable in {expr}");
            let result = prometheus.expect_query(&promql);
            assert!(
                !result.is_empty(),
                "panel {title:?}: {promql} returns no series"
            );
            checked += 1;
        }
    }
    assert!(checked >= 10, "{checked} panel queries");
    emit.assert_running();
    prometheus.assert_running();
}
