//! Throughput of the processor on the fixture corpus, repeated.
//!
//! Run with `cargo bench -p nixl-telemetry-processor --bench processor`, optionally
//! followed by `-- SECONDS` (time per measurement, default 3) and a word that selects
//! the measurements whose name starts with it.
//!
//! Measures, on one thread:
//! * `process`: records already parsed, default builders (the library's hot path);
//! * `parse+process`: from the JSON text of each line, default builders;
//! * each built-in builder alone, records already parsed;
//! * `first pass`: records already parsed, default builders, a new processor and a new
//!   metrics map for every pass, so that every record is new to every cache (what a
//!   record with a combination of values not seen before costs, key creation
//!   included);
//! * `cold caches`: the same with one metrics map kept across passes, so every key
//!   exists and only the processor's caches are new;
//! * `memo off`: the default builders and each builder alone with the per-class memo
//!   switched off (`MetricProcessor::set_memo(false)`), so every record's keys are
//!   built and looked up: what the rule code costs without the memo;
//! * `one record, N GPU names`: one record listing N distinct GPU names (65,536 and
//!   200,000), default builders, a new processor and map: the time it takes.
//!
//! The corpus is applied again and again to the same metrics, so the number of
//! distinct keys stays that of one pass; the bench prints it to show that memory
//! follows keys, not records.

use std::hint::black_box;
use std::time::{Duration, Instant};

use nixl_telemetry_benchsupport::thread_cpu_time;
use nixl_telemetry_processor::{
    builders_from_list, parse_input_line, AttributeRegistry, Context, InputLine, JsonValue,
    MetricProcessor, Metrics, Record,
};

const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/data/tao_processor/corpus.jsonl"
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

/// One measurement: records per wall-clock second and per second of this thread's CPU
/// time, and the number of timed passes.
struct Rate {
    wall: f64,
    cpu: f64,
    passes: u64,
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:>10.0} records/s wall, {:>10.0} records/s of CPU time",
            self.wall, self.cpu
        )
    }
}

/// Runs `pass` (one pass over the corpus) until `budget` is spent.
fn measure(budget: Duration, records_per_pass: usize, mut pass: impl FnMut()) -> Rate {
    pass(); // warm up: the map reaches its final size
    let cpu_start = thread_cpu_time();
    let start = Instant::now();
    let mut passes = 0u64;
    while start.elapsed() < budget {
        pass();
        passes += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    let records = passes as f64 * records_per_pass as f64;
    let cpu = records / (thread_cpu_time() - cpu_start).as_secs_f64();
    Rate {
        wall: records / secs,
        cpu,
        passes,
    }
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let seconds: f64 = args.iter().find_map(|a| a.parse().ok()).unwrap_or(3.0);
    let filter = args.iter().find(|a| a.parse::<f64>().is_err()).cloned();
    let wanted = |name: &str| match filter.as_deref() {
        Some(f) => name.starts_with(f),
        None => true,
    };
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

    if wanted("process (default builders)") {
        let mut p = processor(None);
        let mut metrics = Metrics::new();
        let rate = measure(budget, n, || {
            for (line, ctx) in parsed.iter().zip(&contexts) {
                p.process(&mut metrics, black_box(&line.record), ctx)
                    .expect("corpus record");
            }
        });
        println!(
            "process (default builders):       {rate}  ({} records, {} distinct keys)",
            (rate.passes + 1) * n as u64,
            metrics.len()
        );
    }

    if wanted("parse+process (default builders)") {
        let mut p = processor(None);
        let mut metrics = Metrics::new();
        let rate = measure(budget, n, || {
            for line in &lines {
                let input = parse_input_line(black_box(line)).expect("corpus line");
                let ctx = Context::at(input.now.expect("now"));
                p.process(&mut metrics, &input.record, &ctx)
                    .expect("corpus record");
            }
        });
        println!(
            "parse+process (default builders): {rate}  ({} records, {} distinct keys)",
            (rate.passes + 1) * n as u64,
            metrics.len()
        );
    }

    // End to end, as `nixl-telemetry process` runs over a file: each line applied by
    // `process_line`, which reads an envelope straight into the attributes, the
    // default builders, and the result written once at the end (the
    // metrics as JSON). A pass is one such run over the corpus repeated
    // END_TO_END_REPEATS times.
    if wanted("end to end (default builders)") {
        const END_TO_END_REPEATS: usize = 20;
        let file: Vec<&str> = (0..END_TO_END_REPEATS)
            .flat_map(|_| lines.iter().copied())
            .collect();
        let mut p = processor(None);
        let mut metrics = Metrics::new();
        let mut out = Vec::new();
        let rate = measure(budget, file.len(), || {
            for line in &file {
                p.process_line(&mut metrics, black_box(line), &Context::default())
                    .expect("corpus line");
            }
            out.clear();
            metrics.write_json(&mut out).expect("write to memory");
            black_box(&out);
        });
        println!(
            "end to end (default builders):    {rate}  ({} records, {} bytes written every {} records)",
            (rate.passes + 1) * file.len() as u64,
            out.len(),
            file.len()
        );
    }

    // The floor: the fastest JSON parsers on the registry, each parsing the same
    // lines into its own value tree and nothing else.
    if wanted("parse only") {
        let rate = measure(budget / 2, n, || {
            for line in &lines {
                black_box(parse_input_line(black_box(line)).expect("corpus line"));
            }
        });
        println!("parse only (ours):                {rate}");
        let rate = measure(budget / 2, n, || {
            for line in &lines {
                black_box(Record::parse(black_box(line)).expect("corpus line"));
            }
        });
        println!("parse only (Record::parse):       {rate}  (serde_json into our borrowed values)");
        let rate = measure(budget / 2, n, || {
            for line in &lines {
                let value: JsonValue<'_> =
                    sonic_rs::from_str(black_box(line)).expect("corpus line");
                black_box(value);
            }
        });
        println!("parse only (sonic-rs to ours):    {rate}  (the same values through sonic-rs's serde path)");
        let rate = measure(budget / 2, n, || {
            for line in &lines {
                let value: serde_json::Value =
                    serde_json::from_str(black_box(line)).expect("corpus line");
                black_box(value);
            }
        });
        println!("parse only (serde_json Value):    {rate}");
        let rate = measure(budget / 2, n, || {
            for line in &lines {
                let value: sonic_rs::Value =
                    sonic_rs::from_str(black_box(line)).expect("corpus line");
                black_box(value);
            }
        });
        println!("parse only (sonic-rs Value):      {rate}");
        let mut buffers = simd_json::Buffers::default();
        let mut copy = Vec::new();
        let rate = measure(budget / 2, n, || {
            for line in &lines {
                copy.clear();
                copy.extend_from_slice(black_box(line).as_bytes());
                let value = simd_json::to_borrowed_value_with_buffers(&mut copy, &mut buffers)
                    .expect("corpus line");
                black_box(value);
            }
        });
        println!(
            "parse only (simd-json borrowed):  {rate}  (the line copied first: it parses in place)"
        );
    }

    if wanted("first pass (default builders)") {
        let mut keys = 0;
        let rate = measure(budget, n, || {
            let mut p = processor(None);
            let mut metrics = Metrics::new();
            for (line, ctx) in parsed.iter().zip(&contexts) {
                p.process(&mut metrics, black_box(&line.record), ctx)
                    .expect("corpus record");
            }
            keys = metrics.len();
        });
        println!(
            "first pass (default builders):    {rate}  ({} records, {keys} distinct keys)",
            (rate.passes + 1) * n as u64,
        );
    }

    if wanted("cold caches (default builders)") {
        let mut metrics = Metrics::new();
        let rate = measure(budget, n, || {
            let mut p = processor(None);
            for (line, ctx) in parsed.iter().zip(&contexts) {
                p.process(&mut metrics, black_box(&line.record), ctx)
                    .expect("corpus record");
            }
        });
        println!(
            "cold caches (default builders):   {rate}  ({} records, {} distinct keys)",
            (rate.passes + 1) * n as u64,
            metrics.len()
        );
    }

    if wanted("memo off (default builders)") {
        let mut p = processor(None);
        p.set_memo(false);
        let mut metrics = Metrics::new();
        let rate = measure(budget, n, || {
            for (line, ctx) in parsed.iter().zip(&contexts) {
                p.process(&mut metrics, black_box(&line.record), ctx)
                    .expect("corpus record");
            }
        });
        println!(
            "memo off (default builders):      {rate}  ({} records, {} distinct keys)",
            (rate.passes + 1) * n as u64,
            metrics.len()
        );
    }

    for name in ["legacy", "comprehensive", "time", "labeled"] {
        if !wanted(&format!("memo off ({name} only)")) {
            continue;
        }
        let mut p = processor(Some(name));
        p.set_memo(false);
        let mut metrics = Metrics::new();
        let rate = measure(budget / 2, n, || {
            for (line, ctx) in parsed.iter().zip(&contexts) {
                p.process(&mut metrics, black_box(&line.record), ctx)
                    .expect("corpus record");
            }
        });
        println!(
            "memo off ({name} only):{:width$} {rate}  ({} records)",
            "",
            (rate.passes + 1) * n as u64,
            width = 19 - name.len()
        );
    }

    for names in [65_536usize, 200_000] {
        if !wanted(&format!("one record, {names} GPU names")) {
            continue;
        }
        let gpus: Vec<String> = (0..names).map(|i| format!("Accel Z{i}")).collect();
        let record = serde_json::json!({"action": "train", "time_lapsed": 5, "gpu": gpus});
        let mut p = processor(None);
        let mut metrics = Metrics::new();
        let cpu_start = thread_cpu_time();
        let start = Instant::now();
        p.process_value(&mut metrics, black_box(&record), &contexts[0])
            .expect("record");
        let wall = start.elapsed().as_secs_f64();
        let cpu = format!(
            ", {:.3} s of CPU time",
            (thread_cpu_time() - cpu_start).as_secs_f64()
        );
        println!(
            "one record, {names} GPU names: {wall:>8.3} s wall{cpu}, default builders ({} keys)",
            metrics.len()
        );
    }

    for name in ["legacy", "comprehensive", "time", "labeled"] {
        if !wanted(&format!("process ({name} only)")) {
            continue;
        }
        let mut p = processor(Some(name));
        let mut metrics = Metrics::new();
        let rate = measure(budget / 2, n, || {
            for (line, ctx) in parsed.iter().zip(&contexts) {
                p.process(&mut metrics, black_box(&line.record), ctx)
                    .expect("corpus record");
            }
        });
        println!(
            "process ({name} only):{:width$} {rate}  ({} records)",
            "",
            (rate.passes + 1) * n as u64,
            width = 20 - name.len()
        );
    }
}
