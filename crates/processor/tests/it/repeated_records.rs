//! Records seen again: builders replay what they wrote per record class, so a long run
//! through one processor must give exactly what the same records give through a fresh
//! processor each, or through one processor with the memo off (both remember nothing),
//! and K passes over the corpus K times the counts of one pass.

use nixl_telemetry_processor::{
    builders_from_list, parse_input_line, AttributeRegistry, BuildContext, BuildError, Context,
    MetricBuilder, MetricProcessor, Metrics, MetricsUpdate, TelemetryData, Timestamp,
};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/data/tao_processor/"
);

const CONFIGS: [&str; 5] = [
    "legacy,comprehensive,time,labeled",
    "legacy",
    "comprehensive",
    "time",
    "labeled",
];

fn processor(builders: &str) -> MetricProcessor {
    MetricProcessor::with_builders(
        AttributeRegistry::default(),
        builders_from_list(builders).unwrap(),
    )
    .unwrap()
}

fn corpus() -> Vec<(String, Context)> {
    std::fs::read_to_string(format!("{FIXTURES}corpus.jsonl"))
        .unwrap()
        .lines()
        .map(|line| {
            let input = parse_input_line(line).unwrap();
            let line: serde_json::Value = serde_json::from_str(line).unwrap();
            (line["record"].to_string(), Context::at(input.now.unwrap()))
        })
        .collect()
}

/// Applies the records through one processor, or through a fresh processor each.
fn run(builders: &str, records: &[(String, Context)], shared: bool) -> Metrics {
    let mut metrics = Metrics::new();
    let mut one = processor(builders);
    for (record, context) in records {
        let result = if shared {
            one.process_json(&mut metrics, record, context)
        } else {
            processor(builders).process_json(&mut metrics, record, context)
        };
        result.unwrap();
    }
    metrics
}

#[test]
fn three_passes_through_one_processor_equal_fresh_processors() {
    let once = corpus();
    let thrice: Vec<_> = once.iter().chain(&once).chain(&once).cloned().collect();
    for builders in CONFIGS {
        let shared = run(builders, &thrice, true);
        let fresh = run(builders, &thrice, false);
        assert_eq!(
            shared.to_json_string(),
            fresh.to_json_string(),
            "{builders}"
        );
    }
}

/// The memo replays what the rules wrote; switched off, the rules run for every
/// record. Over the corpus three times, with repeated records in every builder
/// configuration, both give the same bytes.
#[test]
fn the_memo_on_and_off_give_the_same_metrics() {
    let once = corpus();
    let thrice: Vec<_> = once.iter().chain(&once).chain(&once).cloned().collect();
    for builders in CONFIGS {
        let mut results = Vec::new();
        for memo in [true, false] {
            let mut one = processor(builders);
            one.set_memo(memo);
            let mut metrics = Metrics::new();
            for (record, context) in &thrice {
                one.process_json(&mut metrics, record, context).unwrap();
            }
            results.push(metrics.to_json_string());
        }
        assert_eq!(results[0], results[1], "{builders}");
    }
}

#[test]
fn three_passes_count_three_times_one_pass() {
    let once = corpus();
    let thrice: Vec<_> = once.iter().chain(&once).chain(&once).cloned().collect();
    let builders = CONFIGS[0];
    let one = run(builders, &once, true);
    let three = run(builders, &thrice, true);
    assert_eq!(one.len(), three.len());
    for (key, value) in one.iter() {
        if key == "time_lapsed_today" {
            continue;
        }
        assert_eq!(three.get(key), Some(3 * value), "{key}");
    }
}

#[test]
fn a_class_seen_without_time_then_with_time() {
    let at = |t: &str| Context::at(Timestamp::parse_iso(t).unwrap());
    let records: Vec<(String, Context)> = [
        r#"{"action": "train", "gpu": ["NVIDIA A100", "NVIDIA A100"], "time_lapsed": 0}"#,
        r#"{"action": "train", "gpu": ["NVIDIA A100", "NVIDIA A100"]}"#,
        r#"{"action": "train", "gpu": ["NVIDIA A100", "NVIDIA A100"], "time_lapsed": 7}"#,
        r#"{"action": "train", "gpu": ["NVIDIA A100", "NVIDIA A100"], "time_lapsed": 9}"#,
        r#"{"action": "train", "gpu": ["NVIDIA A100", "NVIDIA A100"], "time_lapsed": -3}"#,
        r#"{"action": "Train", "gpu": ["NVIDIA A100", "NVIDIA A100"], "time_lapsed": 2}"#,
        r#"{"action": "train", "gpu": [], "time_lapsed": 4}"#,
        r#"{"action": "train", "gpu": [], "time_lapsed": 4}"#,
        r#"{"action": "train", "success": 1, "gpu": ["A", "B", "A"], "time_lapsed": 4}"#,
        r#"{"action": "train", "success": true, "gpu": ["A", "B", "A"], "time_lapsed": 4}"#,
        r#"{"action": "train", "success": 1, "gpu": ["A", "A", "B"], "time_lapsed": 4}"#,
    ]
    .iter()
    .map(|r| (r.to_string(), at("2025-01-14T08:00:00")))
    .collect();
    let twice: Vec<_> = records.iter().chain(&records).cloned().collect();
    for builders in CONFIGS {
        assert_eq!(
            run(builders, &twice, true).to_json_string(),
            run(builders, &twice, false).to_json_string(),
            "{builders}"
        );
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
        if data.str("action") == Some("explode") {
            return Err(BuildError::Custom("refused".into()));
        }
        metrics.add("seen", 1).map(drop)
    }
}

#[test]
fn remembered_slots_survive_rejected_records() {
    let records = corpus();
    let mut with_failures = processor(CONFIGS[0]);
    with_failures.add_builder(Exploder).unwrap();
    let mut reference = processor(CONFIGS[0]);
    reference.add_builder(Exploder).unwrap();
    let mut got = Metrics::new();
    let mut want = Metrics::new();
    for pass in 0..3 {
        for (i, (record, context)) in records.iter().enumerate() {
            with_failures
                .process_json(&mut got, record, context)
                .unwrap();
            reference.process_json(&mut want, record, context).unwrap();
            if i % 7 == pass {
                // A rejected record creating new keys: removed again, slots renumbered.
                let mut bad: serde_json::Value = serde_json::from_str(record).unwrap();
                bad["action"] = "explode".into();
                let err = with_failures
                    .process_json(&mut got, &bad.to_string(), context)
                    .unwrap_err();
                assert_eq!(err.to_string(), "builder `exploder`: refused");
            }
        }
        assert_eq!(got.to_json_string(), want.to_json_string(), "pass {pass}");
    }
}
