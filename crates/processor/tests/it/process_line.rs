//! `MetricProcessor::process_line` gives, line by line, what `parse_input_line`
//! followed by `MetricProcessor::process` gives: the same metrics after every line and
//! the same message for every rejected one, over the corpus and over a file of edge
//! cases (escapes, duplicates, values of every type, envelopes of every shape, syntax
//! errors).

use nixl_telemetry_processor::{
    parse_input_line, AttributeRegistry, Context, MetricProcessor, Metrics, Timestamp,
};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/");
const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/data/tao_processor/corpus.jsonl"
);

/// The general path: the line parsed into a record, then processed.
fn by_record(
    processor: &mut MetricProcessor,
    metrics: &mut Metrics,
    line: &str,
    context: &Context,
) -> Result<(), String> {
    let input = parse_input_line(line).map_err(|e| e.to_string())?;
    let context = Context {
        now: input.now.or(context.now),
        old_now: context.old_now,
    };
    processor
        .process(metrics, &input.record, &context)
        .map_err(|e| e.to_string())
}

/// Applies every line both ways, from the same start, and compares after each.
fn compare(registry: &AttributeRegistry, lines: &[&str]) {
    let mut direct = MetricProcessor::with_registry(registry.clone()).unwrap();
    let mut general = MetricProcessor::with_registry(registry.clone()).unwrap();
    let (mut ours, mut theirs) = (Metrics::new(), Metrics::new());
    let context = Context::at(Timestamp::parse_iso("2025-01-14T08:00:00").unwrap());
    let mut rejected = 0;
    for line in lines {
        let a = direct
            .process_line(&mut ours, line, &context)
            .map_err(|e| e.to_string());
        let b = by_record(&mut general, &mut theirs, line, &context);
        assert_eq!(a, b, "{line}");
        let (a_json, b_json) = (ours.to_json_string(), theirs.to_json_string());
        if let Some((x, y)) = a_json.lines().zip(b_json.lines()).find(|(x, y)| x != y) {
            panic!("after {line}\nprocess_line: {x}\nby record:    {y}");
        }
        assert_eq!(a_json, b_json, "{line}");
        rejected += usize::from(a.is_err());
    }
    // The cases hold both kinds: a comparison of two failures only would prove little.
    assert!(rejected < lines.len(), "every line was rejected");
}

fn corpus() -> String {
    std::fs::read_to_string(CORPUS).unwrap()
}

fn cases() -> String {
    std::fs::read_to_string(format!("{DATA}process_line_cases.txt")).unwrap()
}

/// The corpus, then the cases: each case meets metrics the corpus filled.
fn lines<'a>(corpus: &'a str, cases: &'a str) -> Vec<&'a str> {
    let cases = cases
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'));
    corpus.lines().take(60).chain(cases).collect()
}

#[test]
fn the_corpus_and_every_edge_case_give_what_a_parsed_record_gives() {
    let (corpus, cases) = (corpus(), cases());
    compare(&AttributeRegistry::default(), &lines(&corpus, &cases));
}

#[test]
fn a_registry_with_shared_and_extra_keys_gives_the_same_too() {
    let (corpus, cases) = (corpus(), cases());
    let text = std::fs::read_to_string(format!("{DATA}process_line_registry.toml")).unwrap();
    let registry = AttributeRegistry::from_toml_str(&text).unwrap();
    compare(&registry, &lines(&corpus, &cases));
}

#[test]
fn the_whole_corpus_gives_the_same_metrics() {
    let corpus = corpus();
    let lines: Vec<&str> = corpus.lines().collect();
    compare(&AttributeRegistry::default(), &lines);
}
