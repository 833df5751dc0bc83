//! The `NIXL_TELEMETRY_*` environment as the host reads it: the input is up to ten
//! values separated by NUL bytes, given to the ten variables in order (an empty
//! value is unset). Properties: parsing never panics and is deterministic; a
//! refusal is a `ConfigError` whose message names the variable; an accepted
//! configuration keeps its values in range (a non-zero buffer size, a ring layout
//! the writers know); each value's on/off reading is a pure function.

#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use nixl_telemetry::TelemetryConfig;
use nixl_telemetry_abi::env::{
    parse_switch, BUFFER_SIZE, DIR, ENABLE, ENABLED_METRICS, EXPORTER, EXPORTER_OUTPUT_PATH,
    EXPORTER_PLUGIN_DIR, NIXL_PLUGIN_DIR, RING_VERSION, RUN_INTERVAL,
};
use nixl_telemetry_abi::ring::LAYOUTS;

const VARIABLES: [&str; 10] = [
    ENABLE,
    BUFFER_SIZE,
    RUN_INTERVAL,
    DIR,
    EXPORTER,
    EXPORTER_OUTPUT_PATH,
    EXPORTER_PLUGIN_DIR,
    NIXL_PLUGIN_DIR,
    ENABLED_METRICS,
    RING_VERSION,
];

fuzz_target!(|data: &[u8]| {
    let values: Vec<Option<String>> = data
        .split(|&b| b == 0)
        .chain(std::iter::repeat(&[][..]))
        .take(VARIABLES.len())
        .map(|v| (!v.is_empty()).then(|| String::from_utf8_lossy(v).into_owned()))
        .collect();
    let lookup = |name: &str| {
        VARIABLES
            .iter()
            .position(|v| *v == name)
            .and_then(|i| values[i].clone())
    };
    for value in values.iter().flatten() {
        assert_eq!(parse_switch(value), parse_switch(value));
    }
    let first = TelemetryConfig::from_lookup(lookup);
    let second = TelemetryConfig::from_lookup(lookup);
    assert_eq!(
        format!("{first:?}"),
        format!("{second:?}"),
        "not deterministic"
    );
    match first {
        Ok(config) => {
            assert!(config.buffer_size > 0, "buffer size 0 accepted");
            assert!(
                LAYOUTS.iter().any(|l| *l == config.ring_layout),
                "a ring layout the writers do not know"
            );
        }
        Err(e) => {
            let message = e.to_string();
            assert!(
                VARIABLES.iter().any(|v| message.contains(v)),
                "the error names no variable: {message}"
            );
        }
    }
});
