//! Parses the fixture corpus N times with one parser, for instruction counts
//! under `valgrind --tool=callgrind` (the timed bench reads its thread's CPU
//! clock through the vDSO, which valgrind does not run):
//!
//! `parse_count record|input|sonic_ours|sonic_value|end_to_end N`
//!
//! `record` is `Record::parse` (serde_json into our borrowed values), `input`
//! `parse_input_line` (the envelope's `now` too, as the processor reads a line),
//! `sonic_ours` the same values through sonic-rs's serde path, `sonic_value`
//! sonic-rs into its own `Value` (the parse-only floor), `end_to_end` what the
//! bench's "end to end" measures: each line applied by `process_line`, the four default builders, and
//! the metrics written as JSON after every 20 passes. Instructions per record:
//! the difference of two runs with different N, divided by 300 × the difference.

use std::hint::black_box;

use nixl_telemetry_processor::{
    parse_input_line, Context, JsonValue, MetricProcessor, Metrics, Record,
};

const CORPUS: &str = include_str!("../../../tests/data/tao_processor/corpus.jsonl");

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_default();
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10);
    let lines: Vec<&str> = CORPUS.lines().collect();
    let mut processor = MetricProcessor::new();
    let mut metrics = Metrics::new();
    let mut out = Vec::new();
    for pass in 0..n {
        for line in &lines {
            match which.as_str() {
                "record" => {
                    black_box(Record::parse(black_box(line)).expect("corpus line"));
                }
                "input" => {
                    black_box(parse_input_line(black_box(line)).expect("corpus line"));
                }
                "end_to_end" => {
                    processor
                        .process_line(&mut metrics, black_box(line), &Context::default())
                        .expect("corpus line");
                }
                "sonic_ours" => {
                    let value: JsonValue<'_> =
                        sonic_rs::from_str(black_box(line)).expect("corpus line");
                    black_box(value);
                }
                "sonic_value" => {
                    let value: sonic_rs::Value =
                        sonic_rs::from_str(black_box(line)).expect("corpus line");
                    black_box(value);
                }
                other => {
                    eprintln!(
                        "unknown parser {other:?}: record, input, sonic_ours, sonic_value or end_to_end"
                    );
                    std::process::exit(2);
                }
            }
        }
        if which == "end_to_end" && (pass + 1) % 20 == 0 {
            out.clear();
            metrics.write_json(&mut out).expect("write to memory");
            black_box(&out);
        }
    }
    println!("{which}: {} records parsed", n * lines.len());
}
