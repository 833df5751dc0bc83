//! Building OTLP requests with the OpenTelemetry project's message
//! definitions (`opentelemetry-proto`) and encoding them with prost.
//!
//! One metrics request carries every agent of a pipeline: one Resource (the
//! process), one scope, one Metric per family with a data point per agent
//! (attribute `agent_name`, and `category` as the Prometheus plug-in's label),
//! then the exporter's own `nixl_telemetry_otlp_*` metrics.

use std::collections::BTreeMap;

use nixl_telemetry_abi::{Category, Event};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs, SeverityNumber};
use opentelemetry_proto::tonic::metrics::v1::{
    metric, number_data_point, AggregationTemporality, Gauge, Histogram, HistogramDataPoint,
    Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

use nixl_telemetry_metrics::{Series, Totals};

use crate::families::{
    histograms, scalars, Shape, ERRORS_DESCRIPTION, ERRORS_NAME, PER_NAME_DESCRIPTION,
};
use crate::stats::ExportStats;

/// The instrumentation scope of every request.
pub const SCOPE_NAME: &str = "nixl-telemetry";

/// One agent as a metrics request shows it.
#[derive(Debug, Clone, Copy)]
pub struct AgentView<'a> {
    /// The agent's name (attribute `agent_name`).
    pub name: &'a str,
    /// When its exporter was created, ns since the Unix epoch: the start of
    /// every cumulative series.
    pub start_time_ns: u64,
    /// What it recorded.
    pub totals: &'a Totals,
}

/// The process's resource: `attributes` as configured (`service.name`
/// first), then `host.name` and `process.pid` unless configured.
pub fn resource(attributes: &[(String, String)], host_name: &str, pid: u32) -> Resource {
    let mut kvs: Vec<KeyValue> = attributes.iter().map(|(k, v)| string_kv(k, v)).collect();
    if !attributes.iter().any(|(k, _)| k == "host.name") {
        kvs.push(string_kv("host.name", host_name));
    }
    if !attributes.iter().any(|(k, _)| k == "process.pid") {
        kvs.push(int_kv("process.pid", i64::from(pid)));
    }
    Resource {
        attributes: kvs,
        ..Resource::default()
    }
}

fn scope() -> InstrumentationScope {
    InstrumentationScope {
        name: SCOPE_NAME.to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        ..InstrumentationScope::default()
    }
}

fn string_kv(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.to_owned())),
        }),
        ..KeyValue::default()
    }
}

fn int_kv(key: &str, value: i64) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            value: Some(any_value::Value::IntValue(value)),
        }),
        ..KeyValue::default()
    }
}

/// A u64 as an OTLP int (signed 64 bits): saturates at `i64::MAX`.
fn as_int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn category_name(category: Category) -> String {
    category.to_string()
}

fn point(attributes: Vec<KeyValue>, start: u64, now: u64, value: i64) -> NumberDataPoint {
    NumberDataPoint {
        attributes,
        start_time_unix_nano: start,
        time_unix_nano: now,
        value: Some(number_data_point::Value::AsInt(value)),
        ..NumberDataPoint::default()
    }
}

fn sum_metric(name: &str, description: &str, points: Vec<NumberDataPoint>) -> Metric {
    Metric {
        name: name.to_owned(),
        description: description.to_owned(),
        data: Some(metric::Data::Sum(Sum {
            data_points: points,
            aggregation_temporality: AggregationTemporality::Cumulative as i32,
            is_monotonic: true,
        })),
        ..Metric::default()
    }
}

fn gauge_metric(name: &str, description: &str, points: Vec<NumberDataPoint>) -> Metric {
    Metric {
        name: name.to_owned(),
        description: description.to_owned(),
        data: Some(metric::Data::Gauge(Gauge {
            data_points: points,
        })),
        ..Metric::default()
    }
}

/// The metrics of `agents` (and the exporter's own, from `stats`) at
/// `now_ns`, with histogram bounds `bounds`; `process_start_ns` starts the
/// exporter's own Sums.
pub fn metrics_request(
    resource: &Resource,
    agents: &[AgentView<'_>],
    bounds: &[f64],
    stats: &ExportStats,
    process_start_ns: u64,
    now_ns: u64,
) -> ExportMetricsServiceRequest {
    let mut metrics = Vec::with_capacity(scalars().len() + histograms().len() + 8);
    let attrs = |agent: &AgentView<'_>, category: Category| {
        vec![
            string_kv("agent_name", agent.name),
            string_kv("category", &category_name(category)),
        ]
    };
    for family in scalars() {
        let points = agents
            .iter()
            .map(|a| {
                let value = a
                    .totals
                    .value_of(family.source)
                    .clamp(i128::from(i64::MIN), i128::from(i64::MAX))
                    as i64;
                let start = match family.shape {
                    Shape::Counter => a.start_time_ns,
                    Shape::Gauge => 0,
                };
                point(attrs(a, family.category), start, now_ns, value)
            })
            .collect();
        metrics.push(match family.shape {
            Shape::Counter => sum_metric(family.name, family.description, points),
            Shape::Gauge => gauge_metric(family.name, family.description, points),
        });
    }
    for (h, family) in histograms().enumerate() {
        let points = agents
            .iter()
            .map(|a| {
                let totals = a.totals.histogram(h);
                HistogramDataPoint {
                    attributes: attrs(a, Category::PERFORMANCE),
                    start_time_unix_nano: a.start_time_ns,
                    time_unix_nano: now_ns,
                    count: totals.count(),
                    sum: Some(totals.sum() as f64),
                    bucket_counts: totals.counts().to_vec(),
                    explicit_bounds: bounds.to_vec(),
                    min: totals.min_max().map(|(lo, _)| lo as f64),
                    max: totals.min_max().map(|(_, hi)| hi as f64),
                    ..HistogramDataPoint::default()
                }
            })
            .collect();
        metrics.push(Metric {
            name: family.name.to_owned(),
            description: family.description.to_owned(),
            data: Some(metric::Data::Histogram(Histogram {
                data_points: points,
                aggregation_temporality: AggregationTemporality::Cumulative as i32,
            })),
            ..Metric::default()
        });
    }
    // Errors, then per-name Sums in name order.
    let mut errors = Vec::new();
    let mut named: BTreeMap<&str, Vec<NumberDataPoint>> = BTreeMap::new();
    for a in agents {
        for (series, value) in a.totals.series() {
            match series {
                Series::Error { status } => {
                    let mut kvs = attrs(a, Category::ERROR);
                    kvs.push(string_kv("status", status));
                    errors.push(point(kvs, a.start_time_ns, now_ns, as_int(value)));
                }
                Series::Counter { sample, category } => {
                    named.entry(sample).or_default().push(point(
                        attrs(a, *category),
                        a.start_time_ns,
                        now_ns,
                        as_int(value),
                    ));
                }
            }
        }
    }
    if !errors.is_empty() {
        metrics.push(sum_metric(ERRORS_NAME, ERRORS_DESCRIPTION, errors));
    }
    for (name, points) in named {
        metrics.push(sum_metric(name, PER_NAME_DESCRIPTION, points));
    }
    self_metrics(&mut metrics, stats, process_start_ns, now_ns);
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(resource.clone()),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(scope()),
                metrics,
                ..ScopeMetrics::default()
            }],
            ..ResourceMetrics::default()
        }],
    }
}

/// The exporter's own metrics.
fn self_metrics(metrics: &mut Vec<Metric>, s: &ExportStats, start: u64, now: u64) {
    let labelled = |pairs: &[(&str, &str)], value: u64| {
        let kvs = pairs.iter().map(|(k, v)| string_kv(k, v)).collect();
        point(kvs, start, now, as_int(value))
    };
    metrics.push(sum_metric(
        "nixl_telemetry_otlp_requests_total",
        "OTLP export requests of this process by signal and result: delivered, retried (an attempt failed and was retried), dropped (given up), superseded (an undelivered metrics request replaced by a newer cumulative one).",
        vec![
            labelled(&[("signal", "metrics"), ("result", "delivered")], s.metric_requests_delivered),
            labelled(&[("signal", "metrics"), ("result", "retried")], s.metric_requests_retried),
            labelled(&[("signal", "metrics"), ("result", "dropped")], s.metric_requests_dropped),
            labelled(&[("signal", "metrics"), ("result", "superseded")], s.metric_requests_superseded),
            labelled(&[("signal", "logs"), ("result", "delivered")], s.log_requests_delivered),
            labelled(&[("signal", "logs"), ("result", "retried")], s.log_requests_retried),
            labelled(&[("signal", "logs"), ("result", "dropped")], s.log_requests_dropped),
        ],
    ));
    metrics.push(sum_metric(
        "nixl_telemetry_otlp_rejected_data_points_total",
        "Data points the collector rejected in partial-success answers.",
        vec![labelled(&[], s.metric_points_rejected)],
    ));
    metrics.push(sum_metric(
        "nixl_telemetry_otlp_events_exported_total",
        "Events the collector accepted as log records.",
        vec![labelled(&[], s.events_exported)],
    ));
    metrics.push(sum_metric(
        "nixl_telemetry_otlp_events_lost_total",
        "Events that were not and will not be delivered as log records, by reason: queue_full (refused at hand-off, also counted by the host), rejected (partial success), undeliverable (request given up).",
        vec![
            labelled(&[("reason", "queue_full")], s.events_lost_queue_full),
            labelled(&[("reason", "rejected")], s.events_lost_rejected),
            labelled(&[("reason", "undeliverable")], s.events_lost_undeliverable),
        ],
    ));
    metrics.push(gauge_metric(
        "nixl_telemetry_otlp_events_queued",
        "Events waiting to be sent as log records.",
        vec![point(Vec::new(), 0, now, as_int(s.events_queued))],
    ));
}

/// One log record per event: time = the event's timestamp, body = its name,
/// attributes `agent_name`, `category`, `name`, `value`; severity ERROR for
/// ERROR events, INFO otherwise.
pub fn logs_request(
    resource: &Resource,
    batches: &[(&str, &[Event])],
    now_ns: u64,
) -> ExportLogsServiceRequest {
    let count = batches.iter().map(|(_, e)| e.len()).sum();
    let mut records = Vec::with_capacity(count);
    for (agent, events) in batches {
        for e in *events {
            let name = e.name();
            let category = Category(e.category);
            let (severity, severity_text) = if category == Category::ERROR {
                (SeverityNumber::Error, "ERROR")
            } else {
                (SeverityNumber::Info, "INFO")
            };
            let value = match i64::try_from(e.value) {
                Ok(v) => any_value::Value::IntValue(v),
                Err(_) => any_value::Value::StringValue(e.value.to_string()),
            };
            records.push(LogRecord {
                time_unix_nano: e.timestamp_us.saturating_mul(1000),
                observed_time_unix_nano: now_ns,
                severity_number: severity as i32,
                severity_text: severity_text.to_owned(),
                body: Some(AnyValue {
                    value: Some(any_value::Value::StringValue(name.clone().into_owned())),
                }),
                attributes: vec![
                    string_kv("agent_name", agent),
                    string_kv("category", &category_name(category)),
                    string_kv("name", &name),
                    KeyValue {
                        key: "value".to_owned(),
                        value: Some(AnyValue { value: Some(value) }),
                        ..KeyValue::default()
                    },
                ],
                ..LogRecord::default()
            });
        }
    }
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: Some(resource.clone()),
            scope_logs: vec![ScopeLogs {
                scope: Some(scope()),
                log_records: records,
                ..ScopeLogs::default()
            }],
            ..ResourceLogs::default()
        }],
    }
}

/// Encodes a request into `out` (cleared first).
pub fn encode_into(message: &impl Message, out: &mut Vec<u8>) {
    out.clear();
    out.reserve(message.encoded_len());
    // Encoding into a Vec cannot fail: it grows as needed.
    let _ = message.encode(out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use nixl_telemetry_abi::buckets::Buckets;
    use nixl_telemetry_metrics::{AgentMetrics, SeriesNaming};

    #[test]
    fn a_request_round_trips_through_prost() {
        let mut a = AgentMetrics::new("a", Buckets::new(&[10.0]).unwrap(), SeriesNaming::Otlp);
        a.record(&[
            Event::new(1, Category::PERFORMANCE, "agent_xfer_time", 20),
            Event::new(1, Category::ERROR, "NIXL_ERR_BACKEND", 1),
            Event::new(1, Category::MEMORY, "agent_memory_deregistered", 10),
        ]);
        let r = resource(&[("service.name".into(), "nixl".into())], "h", 7);
        let agents = [AgentView {
            name: "a",
            start_time_ns: 5,
            totals: a.totals(),
        }];
        let req = metrics_request(&r, &agents, &[10.0], &ExportStats::default(), 1, 9);
        let mut bytes = Vec::new();
        encode_into(&req, &mut bytes);
        let back = ExportMetricsServiceRequest::decode(bytes.as_slice()).unwrap();
        assert_eq!(back, req);
        let metrics = &back.resource_metrics[0].scope_metrics[0].metrics;
        let find = |n: &str| metrics.iter().find(|m| m.name == n).unwrap();
        let Some(metric::Data::Histogram(h)) = &find("agent_xfer_time_us").data else {
            panic!("not a histogram")
        };
        assert_eq!(h.data_points[0].bucket_counts, [0, 1]);
        assert_eq!(h.data_points[0].explicit_bounds, [10.0]);
        let Some(metric::Data::Gauge(g)) = &find("agent_memory_registered_bytes").data else {
            panic!("not a gauge")
        };
        assert_eq!(
            g.data_points[0].value,
            Some(number_data_point::Value::AsInt(-10))
        );
        let Some(metric::Data::Sum(errors)) = &find(ERRORS_NAME).data else {
            panic!("not a sum")
        };
        assert!(errors.is_monotonic);
        assert_eq!(errors.data_points.len(), 12);
    }

    #[test]
    fn huge_values_saturate_or_become_text() {
        assert_eq!(as_int(u64::MAX), i64::MAX);
        let r = resource(&[], "h", 1);
        let ev = [Event::new(2, Category::CUSTOM, "big", u64::MAX)];
        let req = logs_request(&r, &[("a", &ev)], 3);
        let rec = &req.resource_logs[0].scope_logs[0].log_records[0];
        assert_eq!(rec.time_unix_nano, 2000);
        assert_eq!(
            rec.attributes[3].value.as_ref().unwrap().value,
            Some(any_value::Value::StringValue(u64::MAX.to_string()))
        );
    }
}
