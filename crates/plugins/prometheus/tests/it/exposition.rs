//! What a scrape contains: every family from creation, values that follow the
//! events, both formats' rules, label escaping, and `promtool check metrics`.

use crate::common;

use std::collections::HashSet;

use common::{ev, exporter, value_of};
use nixl_telemetry_abi::names::ERROR_STATUSES;
use nixl_telemetry_abi::Category;
use nixl_telemetry_metrics::MAX_NAMES_PER_AGENT;
use nixl_telemetry_prometheus::{Format, PrometheusExporter, Settings};

const FIXED_SAMPLES: [&str; 17] = [
    "agent_tx_bytes_total",
    "agent_rx_bytes_total",
    "agent_tx_requests_num_total",
    "agent_rx_requests_num_total",
    "agent_tx_last_bytes",
    "agent_rx_last_bytes",
    "agent_memory_registered_total",
    "agent_memory_deregistered_total",
    "agent_memory_registered_last_bytes",
    "agent_memory_deregistered_last_bytes",
    "agent_memory_registered_bytes",
    "agent_xfer_time_total",
    "agent_xfer_post_time_total",
    "agent_xfer_time",
    "agent_xfer_post_time",
    "agent_telemetry_events_dropped_total",
    "agent_telemetry_unmapped_events_total",
];

/// Checks the structure of an exposition: every family declared once with
/// `# HELP` then `# TYPE`, its samples right after it and named after it, every
/// sample with `agent_name` then `hostname` first (NIXL's labels), and
/// `category` on the per-name counters only. Returns the (family, type) pairs.
///
/// `per_name`: the per-name counters' family names in `format`.
fn check_structure(body: &str, format: Format) -> Vec<(String, String)> {
    check_structure_with(body, format, &[])
}

fn check_structure_with(body: &str, format: Format, per_name: &[&str]) -> Vec<(String, String)> {
    let mut families = Vec::new();
    let mut seen = HashSet::new();
    let mut current: Option<(String, String)> = None;
    let mut help_for: Option<String> = None;
    let mut lines = body.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap().to_owned();
            assert!(help_for.is_none(), "HELP without TYPE before {line}");
            help_for = Some(name);
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert_eq!(
                help_for.take().as_deref(),
                Some(name),
                "TYPE {name} without its HELP"
            );
            assert!(seen.insert(name.to_owned()), "family {name} declared twice");
            current = Some((name.to_owned(), kind.to_owned()));
            families.push((name.to_owned(), kind.to_owned()));
            continue;
        }
        if line == "# EOF" {
            assert_eq!(format, Format::OpenMetrics, "# EOF in the text format");
            assert!(lines.peek().is_none(), "lines after # EOF");
            continue;
        }
        assert!(!line.starts_with('#'), "unexpected comment {line}");
        let (family, kind) = current.as_ref().expect("a sample before any TYPE");
        let name = &line[..line.find('{').expect("labels on every sample")];
        let allowed: Vec<String> = match (format, kind.as_str()) {
            (_, "histogram") => ["_bucket", "_sum", "_count"]
                .iter()
                .map(|s| format!("{family}{s}"))
                .collect(),
            (Format::OpenMetrics, "counter") => vec![format!("{family}_total")],
            _ => vec![family.clone()],
        };
        assert!(
            allowed.iter().any(|a| a == name),
            "sample {name} under family {family} ({kind})"
        );
        let labels = &line[name.len()..];
        assert!(
            labels.starts_with("{agent_name=\"") && labels.contains("\",hostname=\""),
            "{line}: agent_name and hostname first"
        );
        assert_eq!(
            labels.contains(",category=\""),
            per_name.contains(&family.as_str()),
            "{line}: category on per-name counters only"
        );
    }
    if format == Format::OpenMetrics {
        assert!(body.ends_with("# EOF\n"), "OpenMetrics ends with # EOF");
    }
    families
}

fn text(e: &PrometheusExporter, format: Format) -> String {
    String::from_utf8(e.render(format)).unwrap()
}

#[test]
fn every_fixed_family_is_there_at_zero_from_creation() {
    let e = exporter("fresh");
    let body = text(&e, Format::Text);
    let host = format!(
        "hostname=\"{}\"",
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .unwrap()
            .trim()
    );
    for sample in FIXED_SAMPLES {
        let line = body
            .lines()
            .find(|l| l.starts_with(&format!("{sample}{{")))
            .unwrap_or_else(|| panic!("{sample} missing:\n{body}"));
        assert!(line.ends_with(" 0"), "{line}");
        assert!(
            line.contains(&host) && line.contains("agent_name=\"fresh\""),
            "{line}"
        );
    }
    for status in ERROR_STATUSES {
        let prefix =
            format!("agent_errors_total{{agent_name=\"fresh\",{host},status=\"{status}\"}}");
        assert_eq!(value_of(&body, &prefix).as_deref(), Some("0"), "{status}");
    }
    for family in ["agent_xfer_time_us", "agent_xfer_post_time_us"] {
        let buckets = body
            .lines()
            .filter(|l| l.starts_with(&format!("{family}_bucket{{")))
            .count();
        assert_eq!(buckets, 19, "{family}: NIXL's 18 bounds and +Inf");
        assert!(body.contains(&format!(
            "{family}_bucket{{agent_name=\"fresh\",{host},le=\"10\"}} 0"
        )));
        assert!(!body.contains("le=\"2500000\""), "NIXL has no 2.5 s bound");
        assert!(body.contains("le=\"10000000\"} 0"));
        assert!(body.contains(&format!("{family}_count{{")));
    }
    let families = check_structure(&body, Format::Text);
    assert_eq!(families.len(), FIXED_SAMPLES.len() + 3, "{families:?}");
    check_structure(&text(&e, Format::OpenMetrics), Format::OpenMetrics);
}

#[test]
fn values_follow_the_events() {
    let mut e = exporter("busy");
    e.record(&[
        ev(Category::PERFORMANCE, "agent_xfer_time", 120),
        ev(Category::TRANSFER, "agent_tx_bytes", 4096),
        ev(Category::TRANSFER, "agent_tx_requests_num", 1),
        ev(Category::PERFORMANCE, "agent_xfer_time", 30_000),
        ev(Category::TRANSFER, "agent_rx_bytes", 100),
        ev(Category::TRANSFER, "agent_rx_requests_num", 1),
        ev(Category::PERFORMANCE, "agent_xfer_post_time", 7),
        ev(Category::MEMORY, "agent_memory_registered", 1000),
        ev(Category::MEMORY, "agent_memory_deregistered", 3000),
        ev(Category::ERROR, "NIXL_ERR_BACKEND", 1),
        ev(Category::ERROR, "NIXL_ERR_TIMEOUT", 1),
        ev(Category::SYSTEM, "agent_telemetry_events_dropped", 12),
        ev(Category(42), "strange", 1),
        ev(Category::BACKEND, "ucx.rndv_reads", 5),
        ev(Category::CONNECTION, "agent_connect", 1),
        ev(Category::CUSTOM, "agent_tx_bytes", 2),
    ]);
    e.record(&[ev(Category::TRANSFER, "agent_tx_bytes", 4)]);
    let body = text(&e, Format::Text);
    // Fixed families: no category; per-name counters: category after the
    // agent's labels (`extra` is `,category="…"` then).
    let v = |name: &str, extra: &str| {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        let prefix = format!(
            "{name}{{agent_name=\"busy\",hostname=\"{}\"{extra}}}",
            host.trim()
        );
        value_of(&body, &prefix).unwrap_or_else(|| panic!("no {prefix} in\n{body}"))
    };
    assert_eq!(v("agent_tx_bytes_total", ""), "4100");
    assert_eq!(v("agent_tx_last_bytes", ""), "4");
    assert_eq!(v("agent_tx_requests_num_total", ""), "1");
    assert_eq!(v("agent_rx_bytes_total", ""), "100");
    assert_eq!(v("agent_rx_requests_num_total", ""), "1");
    assert_eq!(v("agent_memory_registered_total", ""), "1000");
    assert_eq!(v("agent_memory_deregistered_last_bytes", ""), "3000");
    assert_eq!(v("agent_memory_registered_bytes", ""), "-2000");
    assert_eq!(v("agent_xfer_time_total", ""), "30120");
    assert_eq!(v("agent_xfer_time", ""), "30000");
    assert_eq!(v("agent_xfer_post_time", ""), "7");
    assert_eq!(v("agent_xfer_time_us_bucket", ",le=\"100\""), "0");
    assert_eq!(v("agent_xfer_time_us_bucket", ",le=\"250\""), "1");
    assert_eq!(v("agent_xfer_time_us_bucket", ",le=\"25000\""), "1");
    assert_eq!(v("agent_xfer_time_us_bucket", ",le=\"50000\""), "2");
    assert_eq!(v("agent_xfer_time_us_bucket", ",le=\"+Inf\""), "2");
    assert_eq!(v("agent_xfer_time_us_count", ""), "2");
    assert_eq!(v("agent_xfer_time_us_sum", ""), "30120");
    assert_eq!(v("agent_xfer_post_time_us_bucket", ",le=\"10\""), "1");
    assert_eq!(v("agent_errors_total", ",status=\"backend\""), "1");
    assert_eq!(v("agent_errors_total", ",status=\"timeout\""), "1");
    assert_eq!(v("agent_errors_total", ",status=\"canceled\""), "0");
    assert_eq!(v("agent_telemetry_events_dropped_total", ""), "12");
    assert_eq!(v("agent_telemetry_unmapped_events_total", ""), "1");
    assert_eq!(v("ucx_rndv_reads_total", ",category=\"BACKEND\""), "5");
    assert_eq!(v("agent_connect_total", ",category=\"CONNECTION\""), "1");
    assert_eq!(
        v("custom_agent_tx_bytes_total", ",category=\"CUSTOM\""),
        "2"
    );
    let per_name = [
        "ucx_rndv_reads_total",
        "agent_connect_total",
        "custom_agent_tx_bytes_total",
    ];
    check_structure_with(&body, Format::Text, &per_name);
    let om_per_name = per_name.map(|n| n.strip_suffix("_total").unwrap());
    check_structure_with(
        &text(&e, Format::OpenMetrics),
        Format::OpenMetrics,
        &om_per_name,
    );
}

#[test]
fn openmetrics_names_counter_families_without_total() {
    let mut e = exporter("om");
    e.record(&[ev(Category::BACKEND, "retries_total", 3)]);
    let body = text(&e, Format::OpenMetrics);
    let families = check_structure_with(&body, Format::OpenMetrics, &["retries"]);
    let kind = |name: &str| {
        families
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, k)| k.as_str())
            .unwrap_or_else(|| panic!("no family {name}: {families:?}"))
    };
    assert_eq!(kind("agent_tx_bytes"), "counter");
    assert_eq!(kind("agent_errors"), "counter");
    assert_eq!(kind("retries"), "counter");
    assert_eq!(kind("agent_xfer_time_us"), "histogram");
    assert_eq!(kind("agent_xfer_time"), "gauge");
    // Its OpenMetrics family name would be the gauge's: declared unknown instead.
    assert_eq!(kind("agent_xfer_time_total"), "unknown");
    assert!(body.contains("\nagent_tx_bytes_total{"));
    assert!(body.contains("\nretries_total{agent_name=\"om\",hostname=\""));
    assert!(body.contains(",category=\"BACKEND\"} 3\n"));
}

#[test]
fn one_name_in_two_categories_stays_two_series() {
    // NIXL's families have no `category`; the per-name counters keep it, so
    // the same name sent as a backend and as a custom event is not merged.
    let mut e = exporter("twice");
    e.record(&[
        ev(Category::BACKEND, "rndv", 1),
        ev(Category::CUSTOM, "rndv", 2),
        ev(Category::BACKEND, "rndv", 10),
    ]);
    let body = text(&e, Format::Text);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let series = |category: &str| {
        value_of(
            &body,
            &format!(
                "rndv_total{{agent_name=\"twice\",hostname=\"{}\",category=\"{category}\"}}",
                host.trim()
            ),
        )
    };
    assert_eq!(series("BACKEND").as_deref(), Some("11"), "{body}");
    assert_eq!(series("CUSTOM").as_deref(), Some("2"), "{body}");
    assert_eq!(body.matches("# TYPE rndv_total counter").count(), 1);
    check_structure_with(&body, Format::Text, &["rndv_total"]);
    nixl_telemetry_testsupport::promtool::assert_exporter_output_accepted(&body);
}

#[test]
fn label_values_are_escaped() {
    let mut e = exporter("quote\" back\\slash\nnewline");
    e.record(&[ev(Category::ERROR, "NIXL_ERR_\"odd\\", 1)]);
    let body = text(&e, Format::Text);
    assert!(
        body.contains("agent_name=\"quote\\\" back\\\\slash\\nnewline\""),
        "{body}"
    );
    assert!(body.contains("status=\"\\\"odd\\\\\""), "{body}");
    assert!(!body.contains("newline\n"), "a raw line feed in a label");
    nixl_telemetry_testsupport::promtool::assert_exporter_output_accepted(&body);
}

#[test]
fn histogram_buckets_come_from_the_settings() {
    let settings = Settings::from_lookup(Some("127.0.0.1:0"), |k| {
        (k == "NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US").then(|| "0.5, 100,2500.25".to_owned())
    })
    .unwrap();
    let mut e = PrometheusExporter::with_settings("custom-buckets", &settings).unwrap();
    e.record(&[
        ev(Category::PERFORMANCE, "agent_xfer_time", 0),
        ev(Category::PERFORMANCE, "agent_xfer_time", 2500),
        ev(Category::PERFORMANCE, "agent_xfer_time", 2501),
    ]);
    let body = text(&e, Format::Text);
    let les: Vec<(&str, &str)> = body
        .lines()
        .filter(|l| l.starts_with("agent_xfer_time_us_bucket{"))
        .map(|l| {
            let le = &l[l.find("le=\"").unwrap() + 4..];
            (&le[..le.find('"').unwrap()], l.rsplit(' ').next().unwrap())
        })
        .collect();
    assert_eq!(
        les,
        [("0.5", "1"), ("100", "1"), ("2500.25", "2"), ("+Inf", "3")]
    );
}

#[test]
fn a_flood_of_names_is_bounded() {
    let mut e = exporter("flood");
    let events: Vec<_> = (0..MAX_NAMES_PER_AGENT * 4)
        .map(|i| ev(Category::CUSTOM, &format!("n{i}"), 1))
        .collect();
    e.record(&events);
    let body = text(&e, Format::Text);
    let named = body
        .lines()
        .filter(|l| l.starts_with('n') && l.contains("category=\"CUSTOM\""))
        .count();
    assert_eq!(named, MAX_NAMES_PER_AGENT);
    let unmapped = body
        .lines()
        .find(|l| l.starts_with("agent_telemetry_unmapped_events_total{"))
        .unwrap();
    assert!(
        unmapped.ends_with(&format!(" {}", MAX_NAMES_PER_AGENT * 3)),
        "{unmapped}"
    );
}

#[test]
fn degenerate_event_names_keep_both_formats_valid() {
    let mut e = exporter("odd-names");
    e.record(&[
        ev(Category::CUSTOM, "_total", 1),
        ev(Category::BACKEND, ".total", 2),
        ev(Category::CONNECTION, "", 3),
        ev(Category::CUSTOM, "9", 4),
    ]);
    for format in [Format::Text, Format::OpenMetrics] {
        let body = text(&e, format);
        for l in body
            .lines()
            .filter(|l| l.starts_with("# HELP") || l.starts_with("# TYPE"))
        {
            let fields: Vec<&str> = l.splitn(4, ' ').collect();
            assert!(
                fields.len() >= 3 && !fields[2].is_empty(),
                "{format:?}: a metadata line without a family name: {l:?}"
            );
        }
    }
    let body = text(&e, Format::Text);
    let sample = |name: &str| {
        body.lines()
            .find(|l| l.starts_with(&format!("{name}{{")))
            .and_then(|l| l.rsplit(' ').next())
            .map(str::to_owned)
    };
    // `_total` and `.total` would leave an empty OpenMetrics family name:
    // their category goes in front.
    assert_eq!(sample("custom__total").as_deref(), Some("1"), "{body}");
    assert_eq!(sample("backend__total").as_deref(), Some("2"), "{body}");
    assert_eq!(sample("__total").as_deref(), Some("3"), "{body}");
    assert_eq!(sample("_9_total").as_deref(), Some("4"), "{body}");
    nixl_telemetry_testsupport::promtool::assert_exporter_output_accepted(&body);
}

#[test]
fn promtool_finds_nothing_wrong_with_a_busy_scrape() {
    let mut a = exporter("agent-a");
    a.record(&[
        ev(Category::PERFORMANCE, "agent_xfer_time", 120),
        ev(Category::TRANSFER, "agent_tx_bytes", 4096),
        ev(Category::TRANSFER, "agent_tx_requests_num", 1),
        ev(Category::PERFORMANCE, "agent_xfer_post_time", 9),
        ev(Category::MEMORY, "agent_memory_registered", 65536),
        ev(Category::ERROR, "NIXL_ERR_BACKEND", 1),
        ev(Category::ERROR, "NIXL_ERR_NEW_KIND", 1),
        ev(Category::BACKEND, "ucx_rndv_reads", 5),
        ev(Category::CONNECTION, "agent_connections", 1),
        ev(Category::CUSTOM, "my-app.phase", 3),
        ev(Category::SYSTEM, "agent_telemetry_events_dropped", 2),
    ]);
    nixl_telemetry_testsupport::promtool::assert_exporter_output_accepted(&text(&a, Format::Text));
}
