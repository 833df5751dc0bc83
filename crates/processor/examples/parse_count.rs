//! Parses the fixture corpus N times with one parser, for instruction counts
//! under `valgrind --tool=callgrind` (the timed bench reads its thread's CPU
//! clock through the vDSO, which valgrind does not run):
//!
//! `parse_count record|sonic_ours|sonic_value N`
//!
//! `record` is `Record::parse` (serde_json into our borrowed values),
//! `sonic_ours` the same values through sonic-rs's serde path, `sonic_value`
//! sonic-rs into its own `Value` (the parse-only floor). Instructions per record:
//! the difference of two runs with different N, divided by 300 × the difference.

use std::hint::black_box;

use nixl_telemetry_processor::{JsonValue, Record};

const CORPUS: &str = include_str!("../../../tests/data/tao_processor/corpus.jsonl");

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_default();
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10);
    let lines: Vec<&str> = CORPUS.lines().collect();
    for _ in 0..n {
        for line in &lines {
            match which.as_str() {
                "record" => {
                    black_box(Record::parse(black_box(line)).expect("corpus line"));
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
                    eprintln!("unknown parser {other:?}: record, sonic_ours or sonic_value");
                    std::process::exit(2);
                }
            }
        }
    }
    println!("{which}: {} records parsed", n * lines.len());
}
