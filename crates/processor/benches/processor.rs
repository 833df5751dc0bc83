//! Throughput of the processor on the fixture corpus, repeated.
//!
//! Run with `cargo bench -p nixl-telemetry-processor --bench processor`
//! (optionally followed by `-- SECONDS` for the time spent per measurement, default 3).
//!
//! Measures, on one thread:
//! * `process`: records already parsed, default builders (the library's hot path);
//! * `parse+process`: from the JSON text of each line, default builders;
//! * each built-in builder alone, records already parsed.
//!
//! The corpus is applied again and again to the same metrics, so the number of
//! distinct keys stays that of one pass; the bench prints it to show that memory
//! follows keys, not records.

use std::hint::black_box;
use std::time::{Duration, Instant};

use nixl_telemetry_processor::{
    builders_from_list, parse_input_line, AttributeRegistry, Context, InputLine, MetricProcessor,
    Metrics,
};

const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/fixtures/tao_processor/corpus.jsonl"
);

fn processor(builders: Option<&str>) -> MetricProcessor {
    match builders {
        None => MetricProcessor::new(),
        Some(list) => MetricProcessor::with_builders(
            AttributeRegistry::default(),
            builders_from_list(list).expect("built-in builders"),
        )
        .expect("built-in builders bind"),
    }
}

/// Runs `pass` (one pass over the corpus) until `budget` is spent; returns records/s.
fn measure(budget: Duration, records_per_pass: usize, mut pass: impl FnMut()) -> (f64, u64) {
    pass(); // warm up: the map reaches its final size
    let start = Instant::now();
    let mut passes = 0u64;
    while start.elapsed() < budget {
        pass();
        passes += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    ((passes as f64 * records_per_pass as f64) / secs, passes)
}

fn main() {
    let seconds: f64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(3.0);
    let budget = Duration::from_secs_f64(seconds);
    let text = std::fs::read_to_string(CORPUS).expect("fixture corpus");
    let lines: Vec<&str> = text.lines().collect();
    let parsed: Vec<InputLine<'_>> = lines
        .iter()
        .map(|l| parse_input_line(l).expect("corpus line"))
        .collect();
    let contexts: Vec<Context> = parsed
        .iter()
        .map(|l| Context::at(l.now.expect("corpus lines carry now")))
        .collect();
    let n = parsed.len();
    println!("corpus: {n} records; {seconds} s per measurement; one thread");

    let mut p = processor(None);
    let mut metrics = Metrics::new();
    let (rate, passes) = measure(budget, n, || {
        for (line, ctx) in parsed.iter().zip(&contexts) {
            p.process(&mut metrics, black_box(&line.record), ctx)
                .expect("corpus record");
        }
    });
    println!(
        "process (default builders):        {:>12.0} records/s  ({} records, {} distinct keys)",
        rate,
        (passes + 1) * n as u64,
        metrics.len()
    );

    let mut p = processor(None);
    let mut metrics = Metrics::new();
    let (rate, passes) = measure(budget, n, || {
        for line in &lines {
            let input = parse_input_line(black_box(line)).expect("corpus line");
            let ctx = Context::at(input.now.expect("now"));
            p.process(&mut metrics, &input.record, &ctx)
                .expect("corpus record");
        }
    });
    println!(
        "parse+process (default builders):  {:>12.0} records/s  ({} records, {} distinct keys)",
        rate,
        (passes + 1) * n as u64,
        metrics.len()
    );

    for name in ["legacy", "comprehensive", "time", "labeled"] {
        let mut p = processor(Some(name));
        let mut metrics = Metrics::new();
        let (rate, _) = measure(budget / 2, n, || {
            for (line, ctx) in parsed.iter().zip(&contexts) {
                p.process(&mut metrics, black_box(&line.record), ctx)
                    .expect("corpus record");
            }
        });
        println!(
            "process ({name} only): {:>width$.0} records/s",
            rate,
            width = 27 - name.len()
        );
    }
}
