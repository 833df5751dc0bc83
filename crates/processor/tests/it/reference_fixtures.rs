//! The processor against the golden data in `tests/data/tao_processor/`:
//! every unit case, every expected file with its builder configuration, and the
//! time builder's trace line by line.

use nixl_telemetry_processor::{
    builders_from_list, create_gpu_identifier, extract_gpu_type, extract_primary_gpu,
    extract_telemetry_data, parse_input_line, sanitize_field_value, sanitize_field_value_upper,
    AttributeRegistry, Context, JsonValue, MetricProcessor, Metrics, Record,
};
use serde_json::Value;

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/data/tao_processor/"
);

fn read(name: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}{name}"))
        .unwrap_or_else(|e| panic!("cannot read fixture {name}: {e}"))
}

fn unit_cases(section: &str) -> Vec<Value> {
    let all: Value = serde_json::from_str(&read("unit_cases.json")).unwrap();
    let cases = all[section].as_array().unwrap().clone();
    assert!(!cases.is_empty(), "{section} has no cases");
    cases
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn sanitize_field_value_cases() {
    let cases = unit_cases("sanitize_field_value");
    assert_eq!(cases.len(), 40);
    for case in cases {
        let value = JsonValue::from_serde(&case["value"]);
        let got = if case["uppercase"].as_bool().unwrap() {
            sanitize_field_value_upper(&value)
        } else {
            sanitize_field_value(&value)
        };
        assert_eq!(got.as_deref(), case["expected"].as_str(), "{case}");
    }
}

#[test]
fn create_gpu_identifier_cases() {
    let cases = unit_cases("create_gpu_identifier");
    assert_eq!(cases.len(), 10);
    for case in cases {
        let gpus = strings(&case["gpus"]);
        assert_eq!(
            create_gpu_identifier(&gpus),
            case["expected"].as_str().unwrap(),
            "{case}"
        );
    }
}

#[test]
fn extract_telemetry_data_cases() {
    let registry = AttributeRegistry::default();
    let cases = unit_cases("extract_telemetry_data");
    assert_eq!(cases.len(), 10);
    for case in cases {
        let record = Record::from_serde(&case["raw"]).unwrap();
        let data = extract_telemetry_data(&registry, &record).unwrap();
        assert_eq!(data.to_json(), case["expected"], "{}", case["raw"]);
    }
}

#[test]
fn labeled_extract_gpu_type_cases() {
    let cases = unit_cases("labeled_extract_gpu_type");
    assert_eq!(cases.len(), 51);
    for case in cases {
        let name = case["gpu_name"].as_str().unwrap();
        assert_eq!(
            extract_gpu_type(name),
            case["expected"].as_str().unwrap(),
            "{name:?}"
        );
    }
}

#[test]
fn labeled_extract_primary_gpu_cases() {
    let cases = unit_cases("labeled_extract_primary_gpu");
    assert_eq!(cases.len(), 8);
    for case in cases {
        let gpus = strings(&case["gpus"]);
        assert_eq!(
            extract_primary_gpu(&gpus),
            case["expected"].as_str().unwrap(),
            "{gpus:?}"
        );
    }
}

/// Runs the whole corpus through a processor built from a builder list.
fn run_corpus(builders: Option<&str>) -> Metrics {
    let registry = AttributeRegistry::default();
    let mut processor = match builders {
        None => MetricProcessor::new(),
        Some(list) => {
            MetricProcessor::with_builders(registry, builders_from_list(list).unwrap()).unwrap()
        }
    };
    let corpus = read("corpus.jsonl");
    let mut metrics = Metrics::new();
    let mut lines = 0;
    for (n, line) in corpus.lines().enumerate() {
        let input = parse_input_line(line).unwrap_or_else(|e| panic!("line {}: {e}", n + 1));
        let now = input.now.expect("corpus lines carry now");
        processor
            .process(&mut metrics, &input.record, &Context::at(now))
            .unwrap_or_else(|e| panic!("line {}: {e}", n + 1));
        lines += 1;
    }
    assert_eq!(lines, 300);
    metrics
}

fn check_expected(builders: Option<&str>, file: &str) {
    let metrics = run_corpus(builders);
    let expected_text = read(file);
    let expected: Value = serde_json::from_str(&expected_text).unwrap();
    let ours = metrics.to_json_string();
    let got: Value = serde_json::from_str(&ours).unwrap();
    if got != expected {
        let (g, e) = (got.as_object().unwrap(), expected.as_object().unwrap());
        let missing: Vec<_> = e.keys().filter(|k| !g.contains_key(*k)).take(5).collect();
        let extra: Vec<_> = g.keys().filter(|k| !e.contains_key(*k)).take(5).collect();
        let differ: Vec<_> = e
            .iter()
            .filter(|(k, v)| g.get(*k).is_some_and(|gv| gv != *v))
            .take(5)
            .collect();
        panic!("{file}: missing {missing:?}, extra {extra:?}, differing {differ:?}");
    }
    assert_eq!(
        ours, expected_text,
        "{file}: same values but different bytes"
    );
}

#[test]
fn corpus_default_builders() {
    check_expected(None, "expected_default.json");
}

#[test]
fn corpus_legacy_only() {
    check_expected(Some("legacy"), "expected_legacy.json");
}

#[test]
fn corpus_comprehensive_only() {
    check_expected(Some("comprehensive"), "expected_comprehensive.json");
}

#[test]
fn corpus_time_only() {
    check_expected(Some("time"), "expected_time.json");
}

#[test]
fn corpus_labeled_only() {
    check_expected(Some("labeled"), "expected_labeled.json");
}

#[test]
fn corpus_explicit_default_list_equals_default() {
    assert_eq!(
        run_corpus(Some("legacy,comprehensive,time,labeled")),
        run_corpus(None)
    );
}

#[test]
fn time_trace_line_by_line() {
    let mut processor = MetricProcessor::with_builders(
        AttributeRegistry::default(),
        builders_from_list("time").unwrap(),
    )
    .unwrap();
    let corpus = read("corpus.jsonl");
    let trace = read("trace_time.jsonl");
    let mut metrics = Metrics::new();
    let mut checked = 0;
    for (n, (line, expected)) in corpus.lines().zip(trace.lines()).enumerate() {
        let expected: Value = serde_json::from_str(expected).unwrap();
        assert_eq!(expected["line"], n + 1);
        let input = parse_input_line(line).unwrap();
        assert_eq!(
            input.now.unwrap().to_string(),
            expected["now"].as_str().unwrap()
        );
        processor
            .process(
                &mut metrics,
                &input.record,
                &Context::at(input.now.unwrap()),
            )
            .unwrap();
        assert_eq!(
            metrics.get("time_lapsed_today"),
            expected["time_lapsed_today"].as_i64(),
            "line {}",
            n + 1
        );
        assert_eq!(
            metrics.last_updated().as_deref(),
            expected["last_updated"].as_str(),
            "line {}",
            n + 1
        );
        checked += 1;
    }
    assert_eq!(checked, 300);
}
