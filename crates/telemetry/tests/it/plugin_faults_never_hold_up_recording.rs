//! A plug-in that blocks in `export_batch` or fails every call never holds up
//! the recording threads: records return at once, staging stays within its
//! bound (what does not fit is dropped and counted), and the books stay exact
//! once the plug-in recovers. (Panics and failed creation: `plugin_rust_panic.rs`;
//! failure reasons logged once: `plugin_failure_reasons_are_logged_once.rs`.)

use nixl_telemetry_testsupport as support;
use support::capture;

use std::path::Path;
use std::time::{Duration, Instant};

use capture::Capture;
use nixl_telemetry::{Category, Telemetry, TelemetryConfig};
use support::{build_rust_plugin, config, install_plugin};

const BUFFER: u64 = 64;

/// `interval_ms`: the flush thread's interval.
fn testkit_config(dir: &Path, output: &str, interval_ms: u64) -> TelemetryConfig {
    install_plugin(
        &build_rust_plugin("nixl-telemetry-exporter-testkit"),
        dir,
        "testkit",
    );
    config(&[
        ("NIXL_TELEMETRY_ENABLE", "1"),
        ("NIXL_TELEMETRY_EXPORTER", "testkit"),
        ("NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR", dir.to_str().unwrap()),
        ("NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH", output),
        ("NIXL_TELEMETRY_BUFFER_SIZE", &BUFFER.to_string()),
        ("NIXL_TELEMETRY_RUN_INTERVAL", &interval_ms.to_string()),
    ])
}

/// Waits (up to a minute, for a loaded machine) until `log` holds a line
/// starting with `prefix`.
fn wait_for_line(log: &Path, prefix: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.lines().any(|l| l.starts_with(prefix)) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no {prefix:?} line in the plug-in's log: {text:?}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_blocked_plugin_never_holds_up_records_and_losses_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("block.log");
    let release = dir.path().join("block.log.release");
    let cfg = testkit_config(dir.path(), &format!("block:{}", log.display()), 1);
    let telemetry = Telemetry::new("agent-b", cfg).unwrap();
    let handle = telemetry.handle(Category::CUSTOM, "ev");
    handle.record(1);
    // The flush thread is now inside export_batch, and stays there until the
    // release file exists.
    wait_for_line(&log, "batch");
    let recorded: u64 = 100 * BUFFER;
    for _ in 0..recorded {
        handle.record(1);
    }
    // Every record above returned while the plug-in was still blocked: it has
    // seen one batch only.
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        text.lines().filter(|l| l.starts_with("batch")).count(),
        1,
        "{text}"
    );
    std::fs::write(&release, b"").unwrap();
    telemetry.flush();
    let stats = telemetry.stats();
    assert_eq!(stats.recorded, recorded + 1, "{stats:?}");
    // Staging held at most one queue's worth of the records made meanwhile.
    assert!(
        stats.dropped.staging_full >= recorded - BUFFER,
        "staging is bounded: {stats:?}"
    );
    assert_eq!(
        stats.recorded + stats.generated,
        stats.delivered + stats.dropped.total() + stats.pending,
        "{stats:?}"
    );
    assert_eq!(stats.dropped.exporter_failed, 0, "{stats:?}");
}

#[test]
fn a_plugin_that_fails_every_call_costs_records_nothing_but_their_loss() {
    let dir = tempfile::tempdir().unwrap();
    // Flushed from this thread only, so the capture, which sees this thread's
    // logs, sees every export: the flush thread makes its first pass at once
    // (with nothing to export yet, ending in the plug-in's flush) and then
    // waits an hour, so recording starts once that pass is over.
    let log = dir.path().join("fail.log");
    let cfg = testkit_config(dir.path(), &format!("fail:{}", log.display()), 3_600_000);
    let capture = Capture::default();
    let (stats, logged) = capture.run(|| {
        let telemetry = Telemetry::new("agent-f", cfg).unwrap();
        wait_for_line(&log, "flush");
        let handle = telemetry.handle(Category::CUSTOM, "ev");
        for round in 0..20 {
            for _ in 0..BUFFER / 2 {
                handle.record(round);
            }
            telemetry.flush();
        }
        let stats = telemetry.stats();
        drop(telemetry);
        (stats, capture.events())
    });
    assert_eq!(stats.recorded, 20 * (BUFFER / 2), "{stats:?}");
    assert_eq!(stats.delivered, 0, "{stats:?}");
    assert_eq!(stats.pending, 0, "{stats:?}");
    assert_eq!(
        stats.dropped.exporter_failed,
        stats.recorded + stats.generated,
        "every event, loss reports included, failed and was counted: {stats:?}"
    );
    let reasons: Vec<_> = logged
        .iter()
        .filter(|c| c.text.contains("testkit export fails as asked"))
        .collect();
    assert_eq!(reasons.len(), 1, "the reason is logged once: {logged:#?}");
}
