//! A stop of the sidecar never waits on a collector that accepts the
//! connection and never answers: the final flush takes
//! `NIXL_TELEMETRY_SHUTDOWN_TIMEOUT_MS` (3 s by default) at most, the sidecar
//! says on stderr what it abandoned, and a second signal ends it at once.

use std::net::TcpListener;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::export_support::*;
use nixl_telemetry::ring::layout;
use nixl_telemetry::{Category, Event};

/// A collector that accepts connections, reads nothing and never answers.
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

/// The sidecar exporting two agents over OTLP to a hanging collector, its
/// periodic export under way; `extra` options too.
fn hung_sidecar(tmp: &std::path::Path, extra: &[&str]) -> Sidecar {
    let rings = tmp.join("rings");
    std::fs::create_dir(&rings).unwrap();
    for agent in ["initiator", "target"] {
        let tx = Event::new(1, Category::TRANSFER, "agent_tx_bytes", 64);
        drop(ring(&rings, agent, &layout::V1, 64, &[tx]));
    }
    let plugins = plugin_dir(
        tmp,
        "nixl-telemetry-exporter-otlp",
        "libtelemetry_exporter_otlp.so",
    );
    let mut sidecar = Sidecar::start(
        export_command(&rings, "otlp")
            .arg("--plugin-dir")
            .arg(&plugins)
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", hanging_collector())
            .env("OTEL_EXPORTER_OTLP_TIMEOUT", "60000")
            .env("OTEL_METRIC_EXPORT_INTERVAL", "100")
            .args(["--interval", "20"])
            .args(extra),
        &tmp.join("export.log"),
    );
    sidecar.wait_for_log("Agent target: following", Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(500));
    sidecar
}

fn kill(signal: &str, pid: u32) {
    let sent = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(sent.success());
}

#[test]
fn sigterm_takes_a_few_seconds_at_most_by_default() {
    let tmp = tempfile::tempdir().unwrap();
    let sidecar = hung_sidecar(tmp.path(), &[]);
    let started = Instant::now();
    let (_, log) = sidecar.stop("TERM");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(6), "{took:?}:\n{log}");
}

#[test]
fn a_stop_past_its_bound_says_what_it_abandoned() {
    let tmp = tempfile::tempdir().unwrap();
    // The plug-in would wait 30 s; the sidecar, 1 s.
    let sidecar = hung_sidecar(
        tmp.path(),
        &[
            "--shutdown-timeout",
            "1000",
            "--set",
            "NIXL_TELEMETRY_SHUTDOWN_TIMEOUT_MS=30000",
        ],
    );
    let started = Instant::now();
    let (status, log) = sidecar.stop("TERM");
    let took = started.elapsed();
    assert!(took < Duration::from_millis(3000), "{took:?}:\n{log}");
    assert_eq!(status.code(), Some(1), "{log}");
    let line = log
        .lines()
        .find(|l| l.contains("abandoned"))
        .unwrap_or_else(|| panic!("no line says what was abandoned:\n{log}"));
    assert!(
        line.contains("after 1000 ms of stopping (NIXL_TELEMETRY_SHUTDOWN_TIMEOUT_MS)")
            && line.contains("final flush")
            && line.contains("sidecar's own series"),
        "{line}"
    );
}

#[test]
fn a_second_signal_ends_the_stop_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let sidecar = hung_sidecar(
        tmp.path(),
        &[
            "--shutdown-timeout",
            "60000",
            "--set",
            "NIXL_TELEMETRY_SHUTDOWN_TIMEOUT_MS=60000",
        ],
    );
    kill("TERM", sidecar.pid());
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    let (status, log) = sidecar.stop("TERM");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "{took:?}:\n{log}");
    assert_eq!(status.code(), Some(1), "{log}");
    assert!(
        log.lines()
            .any(|l| l.contains("after a second signal") && l.contains("abandoned")),
        "{log}"
    );
}

#[test]
fn a_plugin_that_gives_up_first_lets_the_sidecar_exit_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    // The plug-in gives up after 500 ms; the sidecar would wait 20 s.
    let sidecar = hung_sidecar(
        tmp.path(),
        &[
            "--shutdown-timeout",
            "20000",
            "--set",
            "NIXL_TELEMETRY_SHUTDOWN_TIMEOUT_MS=500",
        ],
    );
    let started = Instant::now();
    let (status, log) = sidecar.stop("TERM");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(4), "{took:?}:\n{log}");
    assert!(status.success(), "{status:?}:\n{log}");
}
