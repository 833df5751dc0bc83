//! `nixl-telemetry process --input`: JSON lines (raw records or
//! `{"now": …, "record": {…}}`) applied by the default builders through the same
//! code path as the command, which exercises the processor's record handling.
//! Properties: no panic; applied + rejected never exceeds the number of lines;
//! the metrics survive their own state file (written as JSON, read back equal);
//! rendering them as Prometheus text never panics; and every line applied by
//! `MetricProcessor::process_line` (which reads envelopes of the common shape
//! straight into the attributes) gives what `parse_input_line` followed by
//! `MetricProcessor::process` gives: the same metrics and the same message.

#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use nixl_telemetry_cli::process::apply_input;
use nixl_telemetry_processor::{
    builders_from_list, parse_input_line, render_prometheus, AttributeRegistry, Context,
    MetricProcessor, Metrics, Timestamp, DEFAULT_BUILDERS,
};

/// Each line both ways, from the same start, compared after each.
fn compare_paths(data: &[u8], now: Timestamp) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut direct = MetricProcessor::new();
    let mut general = MetricProcessor::new();
    let (mut ours, mut theirs) = (Metrics::new(), Metrics::new());
    let context = Context::at(now);
    for line in text.lines() {
        let a = direct
            .process_line(&mut ours, line, &context)
            .map_err(|e| e.to_string());
        let b = parse_input_line(line)
            .map_err(|e| e.to_string())
            .and_then(|input| {
                let context = Context {
                    now: input.now.or(context.now),
                    old_now: None,
                };
                general
                    .process(&mut theirs, &input.record, &context)
                    .map_err(|e| e.to_string())
            });
        assert_eq!(a, b, "{line}");
        assert_eq!(ours.to_json_string(), theirs.to_json_string(), "{line}");
    }
}

fuzz_target!(|data: &[u8]| {
    let builders = builders_from_list(&DEFAULT_BUILDERS.join(",")).expect("the default builders");
    let mut processor = MetricProcessor::with_builders(AttributeRegistry::default(), builders)
        .expect("the default processor");
    let mut metrics = Metrics::new();
    let now = Timestamp::parse_iso("2026-01-02T03:04:05").expect("a fixed time");
    let (applied, rejected) =
        apply_input(data, &mut processor, &mut metrics, Some(now)).expect("reading a slice");
    let lines = data.split(|&b| b == b'\n').count() as u64;
    assert!(
        applied + rejected <= lines,
        "{applied} applied + {rejected} rejected of {lines} lines"
    );
    let json = metrics.to_json_string();
    let back = Metrics::from_json_str(&json)
        .unwrap_or_else(|e| panic!("the metrics' own state is refused: {e}\n{json}"));
    assert!(back == metrics, "the state read back differs\n{json}");
    let _ = render_prometheus(&metrics, |family| processor.metric_kind(family));
    compare_paths(data, now);
});
