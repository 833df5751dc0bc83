//! Records and what the library makes of them.

use std::path::PathBuf;

use nixl_telemetry_processor::{
    parse_input_line, AttributeRegistry, Context, MetricProcessor, Metrics,
};

/// The repository's `tests/data/tao_processor/` folder.
pub fn tao_data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/tao_processor")
}

/// The corpus's lines: `{"now": …, "record": {…}}` envelopes of TAO-like records.
pub fn corpus() -> Vec<String> {
    std::fs::read_to_string(tao_data().join("corpus.jsonl"))
        .expect("the corpus")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// The corpus lines whose records the service accepts (only keys of the built-in
/// registry; the others are refused as TAO's server refuses them).
pub fn accepted_corpus() -> Vec<String> {
    let registry = AttributeRegistry::default();
    corpus()
        .into_iter()
        .filter(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            value["record"]
                .as_object()
                .unwrap()
                .keys()
                .all(|k| registry.attributes().iter().any(|a| &a.raw_key == k))
        })
        .collect()
}

/// The corpus records (without their times), each wrapped in an envelope with the
/// time `now`: applied in any order they give the same metrics.
pub fn at_one_time(lines: &[String], now: &str) -> Vec<String> {
    lines
        .iter()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            serde_json::json!({"now": now, "record": value["record"]}).to_string()
        })
        .collect()
}

/// The metrics the library computes for `lines` (envelopes or raw records), in
/// order, with the default registry and builders; lines it rejects are skipped.
pub fn library_metrics<'a>(lines: impl IntoIterator<Item = &'a String>) -> Metrics {
    let mut processor = MetricProcessor::new();
    let mut metrics = Metrics::new();
    for line in lines {
        let input = parse_input_line(line).expect("a record line");
        let context = Context {
            now: input.now,
            old_now: None,
        };
        let _ = processor.process(&mut metrics, &input.record, &context);
    }
    metrics
}
