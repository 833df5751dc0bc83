//! The OTLP plug-in's settings (the `OTEL_*` and `NIXL_TELEMETRY_OTLP_*`
//! variables and the output path): the input is the values, separated by NUL
//! bytes, in the order of `VARIABLES` below (an empty value is unset). Properties:
//! no panic; deterministic; a refusal is a `SettingsError` with a message naming
//! the variable; accepted endpoints are http(s) URLs.

#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use nixl_telemetry_otlp::Settings;

const VARIABLES: [&str; 19] = [
    "NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT",
    "OTEL_EXPORTER_OTLP_COMPRESSION",
    "OTEL_EXPORTER_OTLP_LOGS_COMPRESSION",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    "OTEL_METRIC_EXPORT_INTERVAL",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
    "NIXL_TELEMETRY_OTLP_EVENTS",
    "NIXL_TELEMETRY_OTLP_QUEUE_EVENTS",
    "OTEL_EXPORTER_OTLP_LOGS_TIMEOUT",
];

fuzz_target!(|data: &[u8]| {
    let values: Vec<Option<String>> = data
        .split(|&b| b == 0)
        .chain(std::iter::repeat(&[][..]))
        .take(VARIABLES.len())
        .map(|v| (!v.is_empty()).then(|| String::from_utf8_lossy(v).into_owned()))
        .collect();
    // The output path is the plug-in's argument; the rest are variables.
    let output_path = values[0].as_deref();
    let lookup = |name: &str| {
        VARIABLES
            .iter()
            .skip(1)
            .position(|v| *v == name)
            .and_then(|i| values[i + 1].clone())
    };
    let first = Settings::from_lookup(output_path, lookup);
    let second = Settings::from_lookup(output_path, lookup);
    assert_eq!(
        format!("{first:?}"),
        format!("{second:?}"),
        "not deterministic"
    );
    match first {
        Ok(settings) => {
            for url in [&settings.metrics.url, &settings.logs.url] {
                let lower = url.to_ascii_lowercase();
                assert!(
                    lower.starts_with("http://") || lower.starts_with("https://"),
                    "an endpoint that is not an http(s) URL: {url}"
                );
            }
        }
        Err(e) => {
            let message = e.to_string();
            assert!(!message.is_empty(), "an error without a message");
        }
    }
});
