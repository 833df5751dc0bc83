//! `/metrics` bounds the distinct values of each label: a service showing at most
//! three per label shows the same totals as one showing them all, folds the rest
//! into `other` and counts them; and behind `metrics_legacy_keys` it shows every
//! other key of the JSON map, value for value, as one family with a `key` label.

use std::collections::{BTreeMap, BTreeSet};

use crate::support::http::{self, get};
use crate::support::records::accepted_corpus;
use crate::support::server::{config, sqlite_in, TestServer};
use crate::support::{label_value, promtool_clean, sample, samples};
use nixl_telemetry_service::ServiceConfig;

const FAMILIES: [&str; 4] = [
    "tao_jobs_total",
    "tao_job_duration_seconds_total",
    "tao_job_gpu_seconds_total",
    "tao_job_gpus_total",
];

/// Every label's distinct values in the labeled families of `text`.
fn values_by_label(text: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut values: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for family in FAMILIES {
        for (labels, _) in samples(text, family) {
            for pair in labels.split(",").filter_map(|p| p.split_once("=\"")) {
                let name = pair.0;
                let value = label_value(labels, name).unwrap();
                values
                    .entry(name.to_owned())
                    .or_default()
                    .insert(value.to_owned());
            }
        }
    }
    values
}

#[test]
fn label_values_past_the_bound_are_other_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite_in(dir.path());
    let server = TestServer::start(config(store.clone()));
    let mut connection = http::Connection::open(server.addr).unwrap();
    for line in accepted_corpus() {
        let response = connection
            .request("POST", "/api/v1/metrics", &[], line.as_bytes())
            .unwrap();
        assert_eq!(response.status, 201, "{}", response.text());
    }
    let all = get(server.addr, "/metrics").text().to_owned();
    let map = get(server.addr, "/api/v1/metrics").json();
    server.stop();

    let bounded_server = TestServer::start(ServiceConfig {
        max_label_values: 3,
        metrics_legacy_keys: true,
        ..config(store)
    });
    let bounded = get(bounded_server.addr, "/metrics").text().to_owned();
    promtool_clean(&bounded);
    let total =
        |text: &str, family: &str| samples(text, family).iter().map(|(_, v)| v).sum::<f64>();
    for family in FAMILIES {
        assert_eq!(total(&bounded, family), total(&all, family), "{family}");
        assert!(total(&all, family) > 0.0, "{family}");
    }
    let unbounded_values = values_by_label(&all);
    let bounded_values = values_by_label(&bounded);
    assert_eq!(
        unbounded_values.keys().collect::<Vec<_>>(),
        [
            "action",
            "automl_triggered",
            "client_type",
            "gpu_count",
            "gpu_type",
            "network",
            "primary_gpu",
            "status",
            "user_error",
            "version"
        ]
    );
    for (label, values) in &unbounded_values {
        let shown = &bounded_values[label];
        let folded = sample(
            &bounded,
            &format!("tao_service_label_values_folded_total{{label=\"{label}\"}}"),
        )
        .unwrap();
        assert_eq!(
            sample(
                &all,
                &format!("tao_service_label_values_folded_total{{label=\"{label}\"}}")
            ),
            Some(0.0),
            "{label}"
        );
        if values.len() <= 3 {
            assert_eq!(shown, values, "{label}");
            assert_eq!(folded, 0.0, "{label}");
        } else {
            assert_eq!(shown.len(), 4, "{label}: {shown:?}");
            assert!(shown.contains("other"), "{label}");
            assert_eq!(folded, (values.len() - 3) as f64, "{label}");
        }
    }
    assert!(unbounded_values["network"].len() > 10);

    // The legacy keys: every key of the JSON map that no labeled family shows.
    let legacy = samples(&bounded, "tao_legacy_value");
    let flat: Vec<(&String, &serde_json::Value)> = map
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.as_str() != "last_updated" && !k.starts_with("tao_job_"))
        .collect();
    assert!(flat.len() > 100);
    assert_eq!(legacy.len(), flat.len());
    for (key, value) in flat {
        let series = format!("tao_legacy_value{{key=\"{key}\"}}");
        assert_eq!(
            sample(&bounded, &series),
            Some(value.as_f64().unwrap()),
            "{series}"
        );
    }
    assert!(!all.contains("tao_legacy_value"));
}
