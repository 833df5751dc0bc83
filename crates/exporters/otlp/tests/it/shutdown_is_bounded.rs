//! A collector that accepts the connection and never answers holds up the
//! host's exit (the last exporter's drop) for the shutdown bound at most,
//! `NIXL_TELEMETRY_SHUTDOWN_TIMEOUT_MS`, whatever the request timeout.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use nixl_telemetry_abi::{Category, Event};
use nixl_telemetry_otlp::{OtlpExporter, Settings};

/// A listener that accepts connections, reads nothing and never answers.
fn hanging_collector() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    format!("http://{addr}")
}

fn settings(base: &str, shutdown_ms: Option<&str>) -> Settings {
    let base = base.to_owned();
    let shutdown_ms = shutdown_ms.map(str::to_owned);
    Settings::from_lookup(None, move |name| match name {
        "OTEL_EXPORTER_OTLP_ENDPOINT" => Some(base.clone()),
        // Requests would wait a minute for an answer.
        "OTEL_EXPORTER_OTLP_TIMEOUT" => Some("60000".to_owned()),
        "OTEL_METRIC_EXPORT_INTERVAL" => Some("50".to_owned()),
        "NIXL_TELEMETRY_SHUTDOWN_TIMEOUT_MS" => shutdown_ms.clone(),
        _ => None,
    })
    .unwrap()
}

/// How long dropping the last exporter takes while a request hangs.
fn drop_time(settings: &Settings) -> Duration {
    let mut e = OtlpExporter::with_settings("hung", settings).unwrap();
    e.record(&[Event::new(1, Category::TRANSFER, "agent_tx_bytes", 64)])
        .unwrap();
    e.publish();
    // A periodic export is under way, waiting for its answer.
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    drop(e);
    started.elapsed()
}

#[test]
fn the_default_bound_is_a_few_seconds() {
    assert_eq!(
        settings("http://x:1", None).shutdown,
        Duration::from_secs(3)
    );
    let took = drop_time(&settings(&hanging_collector(), None));
    assert!(
        took >= Duration::from_millis(2900) && took < Duration::from_secs(6),
        "{took:?}"
    );
}

#[test]
fn the_variable_changes_the_bound() {
    let took = drop_time(&settings(&hanging_collector(), Some("500")));
    assert!(took < Duration::from_millis(2500), "{took:?}");
    let bad = Settings::from_lookup(None, |name| {
        (name == "NIXL_TELEMETRY_SHUTDOWN_TIMEOUT_MS").then(|| "soon".to_owned())
    })
    .unwrap_err()
    .to_string();
    assert!(
        bad.contains("NIXL_TELEMETRY_SHUTDOWN_TIMEOUT_MS") && bad.contains("milliseconds"),
        "{bad}"
    );
}
