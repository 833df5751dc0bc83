//! A record is applied wholly or not at all: every kind of bad input, a failing
//! user builder and an overflow leave the metrics exactly as they were.

use nixl_telemetry_processor::{
    BuildContext, BuildError, Context, ExtractError, MetricBuilder, MetricProcessor, Metrics,
    MetricsUpdate, ProcessError, RecordError, TelemetryData, Timestamp,
};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/data/tao_processor/"
);

fn at(text: &str) -> Context {
    Context::at(Timestamp::parse_iso(text).unwrap())
}

/// Metrics after the first 40 corpus lines with the default builders.
fn warm() -> (MetricProcessor, Metrics) {
    let corpus = std::fs::read_to_string(format!("{FIXTURES}corpus.jsonl")).unwrap();
    let mut processor = MetricProcessor::new();
    let mut metrics = Metrics::new();
    for line in corpus.lines().take(40) {
        let input = nixl_telemetry_processor::parse_input_line(line).unwrap();
        processor
            .process(
                &mut metrics,
                &input.record,
                &Context::at(input.now.unwrap()),
            )
            .unwrap();
    }
    (processor, metrics)
}

/// Applies `record` (JSON text), expects it rejected, and checks nothing changed;
/// returns the error's message.
fn rejected(processor: &mut MetricProcessor, metrics: &mut Metrics, record: &str) -> String {
    let before = metrics.clone();
    let before_json = metrics.to_json_string();
    let err = processor
        .process_json(metrics, record, &at("2025-01-14T09:00:00"))
        .expect_err(record);
    assert_eq!(*metrics, before, "{record}");
    assert_eq!(metrics.to_json_string(), before_json, "{record}");
    err.to_string()
}

#[test]
fn every_kind_of_bad_value_changes_nothing() {
    let (mut processor, mut metrics) = warm();
    // A good record that creates many keys comes first in each case, inside the same
    // record as the bad value, so a partial application would show.
    let cases = [
        // LIST attribute that is not a list
        (r#"{"action": "train", "gpu": "NVIDIA A100"}"#, "key `gpu`"),
        (
            r#"{"action": "train", "gpu": {"a": 1}}"#,
            "a list of strings",
        ),
        // a list with a non-string element
        (
            r#"{"action": "train", "gpu": ["A100", 3]}"#,
            "element 1 must be a string",
        ),
        // INTEGER that is not an integer
        (
            r#"{"action": "train", "time_lapsed": "12"}"#,
            "key `time_lapsed`",
        ),
        (
            r#"{"action": "train", "time_lapsed": 1.5}"#,
            "a 64-bit integer",
        ),
        (
            r#"{"action": "train", "time_lapsed": true}"#,
            "found a boolean",
        ),
        (
            r#"{"action": "train", "time_lapsed": 18446744073709551615}"#,
            "out of range",
        ),
        // an array or object where a STRING belongs
        (r#"{"action": ["train"], "network": "x"}"#, "key `action`"),
        (r#"{"network": {"name": "x"}}"#, "key `network`"),
        // an array or object where a BOOLEAN belongs
        (r#"{"success": [true]}"#, "key `success`"),
    ];
    for (record, needle) in cases {
        let message = rejected(&mut processor, &mut metrics, record);
        assert!(message.contains(needle), "{record}: {message}");
    }
}

#[test]
fn a_body_that_is_not_an_object_changes_nothing() {
    let (mut processor, mut metrics) = warm();
    for body in ["[1, 2]", "\"text\"", "42", "null", "{\"a\": ", ""] {
        let message = rejected(&mut processor, &mut metrics, body);
        assert!(
            message.contains("JSON object") || message.contains("not valid JSON"),
            "{body}: {message}"
        );
    }
    let value = serde_json::json!(["not", "an", "object"]);
    let before = metrics.clone();
    let err = processor
        .process_value(&mut metrics, &value, &at("2025-01-14T09:00:00"))
        .unwrap_err();
    assert!(matches!(
        err,
        ProcessError::Record(RecordError::NotAnObject { found: "an array" })
    ));
    assert_eq!(metrics, before);
}

#[test]
fn extraction_errors_name_key_and_type() {
    let (mut processor, mut metrics) = warm();
    let err = processor
        .process_json(&mut metrics, r#"{"gpu": "x"}"#, &at("2025-01-14T09:00:00"))
        .unwrap_err();
    match err {
        ProcessError::Extract(ExtractError::WrongType {
            attribute,
            raw_key,
            expected,
            found,
        }) => {
            assert_eq!(attribute, "gpus");
            assert_eq!(raw_key, "gpu");
            assert_eq!(expected, nixl_telemetry_processor::AttributeType::List);
            assert_eq!(found, "a string");
        }
        other => panic!("unexpected {other:?}"),
    }
}

/// Fails after writing, for records whose action is `explode`.
struct Exploder;

impl MetricBuilder for Exploder {
    fn name(&self) -> &str {
        "exploder"
    }
    fn build(
        &mut self,
        metrics: &mut MetricsUpdate<'_>,
        data: &TelemetryData<'_>,
        _context: &BuildContext,
    ) -> Result<(), BuildError> {
        metrics.add("exploder_seen", 1)?;
        metrics.set("time_lapsed_today", -1)?;
        if data.str("action") == Some("explode") {
            return Err(BuildError::Custom("refused".into()));
        }
        Ok(())
    }
}

#[test]
fn a_failing_builder_undoes_every_builder_s_writes() {
    let (mut processor, mut metrics) = warm();
    processor.add_builder(Exploder).unwrap();
    processor
        .process_json(
            &mut metrics,
            r#"{"action": "train"}"#,
            &at("2025-01-14T08:00:00"),
        )
        .unwrap();
    let message = rejected(
        &mut processor,
        &mut metrics,
        r#"{"action": "explode", "network": "brand_new", "gpu": ["New GPU 1", "New GPU 2"], "time_lapsed": 5}"#,
    );
    assert_eq!(message, "builder `exploder`: refused");
    // The slots remembered for keys created by the rejected record are forgotten:
    // the same labels later still count from zero.
    processor
        .process_json(
            &mut metrics,
            r#"{"action": "other", "network": "brand_new", "gpu": ["New GPU 1", "New GPU 2"], "time_lapsed": 5}"#,
            &at("2025-01-14T10:00:00"),
        )
        .unwrap();
    assert_eq!(metrics.get("network_brand_new_action_other"), Some(1));
    assert_eq!(metrics.get("network_brand_new_action_explode"), None);
    assert_eq!(
        metrics.get("tao_job_gpu_total{tao_gpu_type=\"NEW\"}"),
        Some(2)
    );
}

#[test]
fn an_overflow_changes_nothing() {
    let mut processor = MetricProcessor::new();
    let mut metrics = Metrics::new();
    let ctx = at("2025-01-14T08:00:00");
    processor
        .process_json(
            &mut metrics,
            r#"{"time_lapsed": 9223372036854775000}"#,
            &ctx,
        )
        .unwrap();
    let message = rejected(
        &mut processor,
        &mut metrics,
        r#"{"time_lapsed": 9223372036854775000}"#,
    );
    assert!(
        message.contains("would overflow a 64-bit integer"),
        "{message}"
    );
    // GPU time is count × time_lapsed: its product overflows on its own.
    let mut fresh = Metrics::new();
    let err = processor
        .process_json(
            &mut fresh,
            r#"{"gpu": ["a", "b"], "time_lapsed": 9223372036854775000}"#,
            &ctx,
        )
        .unwrap_err();
    assert!(err.to_string().contains("tao_job_gpu_time_sum{"), "{err}");
    assert!(fresh.is_empty() && fresh.last_updated().is_none());
}

#[test]
fn a_bad_last_updated_rejects_the_record() {
    let mut processor = MetricProcessor::new();
    let mut metrics = Metrics::new();
    metrics.set_last_updated(Some("yesterday".into()));
    let err = processor
        .process_json(&mut metrics, "{}", &at("2025-01-14T08:00:00"))
        .unwrap_err();
    assert!(matches!(err, ProcessError::LastUpdated(_)), "{err}");
    assert!(metrics.is_empty());
    assert_eq!(metrics.last_updated().as_deref(), Some("yesterday"));
}
