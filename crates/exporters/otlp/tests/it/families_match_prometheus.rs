//! The OTLP exporter sends the Prometheus plug-ins' families: every family a
//! Prometheus scrape shows for an agent has an OTLP metric with the same name,
//! the matching kind (counter → monotonic cumulative Sum, gauge → Gauge,
//! histogram → Histogram) and the same bucket bounds, and the OTLP exporter
//! sends no agent family that Prometheus does not show. Both sides are the
//! real exporters with their default settings.

use std::collections::BTreeMap;

use nixl_telemetry_abi::{Category, Event};
use nixl_telemetry_metrics::{AgentMetrics, SeriesNaming};
use nixl_telemetry_otlp::encode::{metrics_request, resource, AgentView};
use nixl_telemetry_otlp::{ExportStats, Settings as OtlpSettings};
use nixl_telemetry_prometheus::{Format, PrometheusExporter, Settings};
use opentelemetry_proto::tonic::metrics::v1::{metric, AggregationTemporality};

/// What a family is, as both exporters can say it.
#[derive(Debug, Clone, PartialEq)]
enum Family {
    Counter,
    Gauge,
    Histogram(Vec<f64>),
}

fn events() -> Vec<Event> {
    vec![
        Event::new(1, Category::TRANSFER, "agent_tx_bytes", 4096),
        Event::new(1, Category::PERFORMANCE, "agent_xfer_time", 120),
        Event::new(1, Category::ERROR, "NIXL_ERR_BACKEND", 1),
    ]
}

/// The `agent_*` families of a Prometheus text-format scrape, by name.
fn prometheus_families() -> BTreeMap<String, Family> {
    let settings = Settings::new("127.0.0.1:0".parse().unwrap());
    let mut exporter = PrometheusExporter::with_settings("parity", &settings).unwrap();
    exporter.record(&events());
    let body = String::from_utf8(exporter.render(Format::Text)).unwrap();
    let mut families = BTreeMap::new();
    for line in body.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let (name, kind) = rest.split_once(' ').unwrap();
        if !name.starts_with("agent_") {
            continue;
        }
        let family = match kind {
            "counter" => Family::Counter,
            "gauge" => Family::Gauge,
            "histogram" => {
                let prefix = format!("{name}_bucket{{");
                let bounds = body
                    .lines()
                    .filter(|l| l.starts_with(&prefix))
                    .map(|l| {
                        let le = l.split("le=\"").nth(1).unwrap();
                        le[..le.find('"').unwrap()].to_owned()
                    })
                    .filter(|le| le != "+Inf")
                    .map(|le| le.parse::<f64>().unwrap())
                    .collect();
                Family::Histogram(bounds)
            }
            other => panic!("{name}: unexpected type {other}"),
        };
        families.insert(name.to_owned(), family);
    }
    families
}

/// The agent families of an OTLP metrics request, by name.
fn otlp_families() -> BTreeMap<String, Family> {
    let settings = OtlpSettings::new("http://127.0.0.1:4318").unwrap();
    let mut aggregator = AgentMetrics::new("parity", settings.buckets.clone(), SeriesNaming::Otlp);
    aggregator.record(&events());
    let agents = [AgentView {
        name: "parity",
        start_time_ns: 1,
        totals: aggregator.totals(),
    }];
    let request = metrics_request(
        &resource(&[], "host", 1),
        &agents,
        settings.buckets.bounds(),
        &ExportStats::default(),
        1,
        2,
    );
    let cumulative = AggregationTemporality::Cumulative as i32;
    request.resource_metrics[0].scope_metrics[0]
        .metrics
        .iter()
        .filter(|m| m.name.starts_with("agent_"))
        .map(|m| {
            let family = match m.data.as_ref().unwrap() {
                metric::Data::Sum(s) => {
                    assert!(s.is_monotonic, "{}", m.name);
                    assert_eq!(s.aggregation_temporality, cumulative, "{}", m.name);
                    Family::Counter
                }
                metric::Data::Gauge(_) => Family::Gauge,
                metric::Data::Histogram(h) => {
                    assert_eq!(h.aggregation_temporality, cumulative, "{}", m.name);
                    Family::Histogram(h.data_points[0].explicit_bounds.clone())
                }
                other => panic!("{}: unexpected data {other:?}", m.name),
            };
            (m.name.clone(), family)
        })
        .collect()
}

#[test]
fn every_prometheus_family_has_its_otlp_counterpart() {
    let prometheus = prometheus_families();
    let otlp = otlp_families();
    // The fixed families, the histograms and the errors at least.
    assert!(prometheus.len() >= 20, "{prometheus:?}");
    assert!(matches!(
        prometheus.get("agent_xfer_time_us"),
        Some(Family::Histogram(b)) if b.len() == 18
    ));
    assert_eq!(prometheus.get("agent_errors_total"), Some(&Family::Counter));
    assert_eq!(otlp, prometheus);
}
