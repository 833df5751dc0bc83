//! A Rust plug-in (crates/plugins/testkit, built with `export_plugin!`) that
//! panics: the panic never crosses the boundary, the exporter is disabled with
//! an error, later events count as lost, and the host goes on.

use nixl_telemetry_testsupport as support;
use support::capture;

use std::path::{Path, PathBuf};

use capture::Capture;
use nixl_telemetry::exporter::plugin::{LoadedPluginExporter, PluginError};
use nixl_telemetry::{Category, Event, Exporter, Telemetry, TelemetryConfig, TelemetryError};
use support::{build_rust_plugin, config, install_plugin};

fn testkit(dir: &Path) -> PathBuf {
    install_plugin(
        &build_rust_plugin("nixl-telemetry-exporter-testkit"),
        dir,
        "testkit",
    )
}

fn testkit_config(dir: &Path, output: &str) -> TelemetryConfig {
    config(&[
        ("NIXL_TELEMETRY_ENABLE", "1"),
        ("NIXL_TELEMETRY_EXPORTER", "testkit"),
        ("NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR", dir.to_str().unwrap()),
        ("NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH", output),
        ("NIXL_TELEMETRY_BUFFER_SIZE", "64"),
        ("NIXL_TELEMETRY_RUN_INTERVAL", "1000"),
    ])
}

fn log_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_panic_in_create_is_a_creation_error() {
    let dir = tempfile::tempdir().unwrap();
    testkit(dir.path());
    let err = Telemetry::new("agent-p", testkit_config(dir.path(), "panic-create")).unwrap_err();
    assert!(
        matches!(&err, TelemetryError::Plugin(e) if matches!(**e, PluginError::CreateFailed { .. })),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("exporter panicked while being created"),
        "{msg}"
    );
    assert!(msg.contains("testkit panics in create as asked"), "{msg}");
    // The host goes on: the same plug-in works for the next agent.
    let log = dir.path().join("ok.log");
    let ok = Telemetry::new(
        "agent-q",
        testkit_config(dir.path(), &format!("ok:{}", log.display())),
    )
    .unwrap();
    ok.record(Category::CUSTOM, "fine", 2);
    ok.flush();
    assert_eq!(ok.stats().delivered, 1);
}

#[test]
fn a_panic_while_exporting_disables_the_exporter() {
    let dir = tempfile::tempdir().unwrap();
    testkit(dir.path());
    let log = dir.path().join("calls.log");
    let cfg = testkit_config(dir.path(), &format!("panic-export:{}", log.display()));
    let telemetry = Telemetry::new("agent-p", cfg).unwrap();
    telemetry.record(Category::CUSTOM, "ev", 1);
    telemetry.record(Category::CUSTOM, "ev", 2);
    telemetry.flush();
    assert_eq!(telemetry.stats().delivered, 2);

    telemetry.record(Category::CUSTOM, "ev", 13); // the plug-in panics on 13
    telemetry.flush();
    for i in 0..10 {
        telemetry.record(Category::CUSTOM, "ev", i);
    }
    telemetry.flush();
    let stats = telemetry.stats();
    assert_eq!(stats.delivered, 2, "{stats:?}");
    assert_eq!(stats.recorded, 13);
    assert_eq!(
        stats.dropped.exporter_failed,
        11 + stats.generated,
        "the panicking batch, later events and loss reports all failed: {stats:?}"
    );
    drop(telemetry);
    // The plug-in saw the panicking batch and nothing after it but its
    // destruction: no batch and no flush once it was disabled. (The flush
    // thread's own passes add "flush" lines before that, how many depends on timing.)
    let lines = log_lines(&log);
    let panic_at = lines
        .iter()
        .position(|l| l == "batch 1 13")
        .unwrap_or_else(|| panic!("no panicking batch: {lines:?}"));
    assert_eq!(lines[panic_at + 1..], ["drop agent-p"], "{lines:?}");
    let batches: Vec<_> = lines.iter().filter(|l| l.starts_with("batch")).collect();
    assert_eq!(batches, ["batch 2 3", "batch 1 13"], "{lines:?}");
    assert_eq!(lines[0], "create agent-p");
}

#[test]
fn a_panic_is_reported_once_as_an_error() {
    let dir = tempfile::tempdir().unwrap();
    testkit(dir.path());
    for (mode, function) in [("panic-export", "export_batch"), ("panic-flush", "flush")] {
        let capture = Capture::default();
        let cfg = testkit_config(dir.path(), mode);
        let events = capture.run(|| {
            let mut e = LoadedPluginExporter::load("testkit", &cfg, "agent-p").unwrap();
            let bad = [Event::new(1, Category::CUSTOM, "ev", 13)];
            let good = [Event::new(1, Category::CUSTOM, "ev", 1)];
            let first = e.export(&bad);
            e.flush();
            assert!(e.is_disabled(), "{mode}");
            if mode == "panic-export" {
                assert_eq!(first.failed, 1);
            } else {
                assert_eq!(first.delivered, 1);
            }
            for _ in 0..5 {
                assert_eq!(e.export(&good).failed, 1, "{mode}: disabled for good");
                e.flush();
            }
            let events = capture.events();
            drop(e);
            events
        });
        let errors: Vec<_> = events
            .iter()
            .filter(|c| c.level == tracing::Level::ERROR)
            .collect();
        assert_eq!(errors.len(), 1, "{mode}: {events:#?}");
        let text = &errors[0].text;
        assert!(
            text.contains("panicked") && text.contains("disabled"),
            "{text}"
        );
        assert!(text.contains(&format!("function=\"{function}\"")), "{text}");
        assert!(
            text.contains("plugin=testkit") && text.contains("agent=agent-p"),
            "{text}"
        );
    }
}
