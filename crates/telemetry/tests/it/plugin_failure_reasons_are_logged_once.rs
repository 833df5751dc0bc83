//! The reason a plug-in gives for a failed call (a Rust plug-in's
//! `Err(String)`, or what a C plug-in's `nixl_telemetry_exporter_last_error`
//! writes) reaches the host's log: each distinct reason once, however often
//! the call fails. A plug-in without that symbol is logged by return code only.

use nixl_telemetry_testsupport as support;
use support::capture;

use std::path::Path;

use capture::{Capture, Captured};
use nixl_telemetry::exporter::plugin::LoadedPluginExporter;
use nixl_telemetry::{Category, Event, Exporter, TelemetryConfig};
use support::{build_c_plugin, build_rust_plugin, config, install_plugin};

fn testkit_config(dir: &Path, output: &str) -> TelemetryConfig {
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
    ])
}

fn reasons(events: &[Captured]) -> Vec<String> {
    events
        .iter()
        .filter(|c| c.text.contains("exporter plug-in call failed"))
        .map(|c| {
            assert_eq!(c.level, tracing::Level::WARN, "{}", c.text);
            assert!(
                c.text.contains("plugin=testkit") && c.text.contains("agent=agent-r"),
                "{}",
                c.text
            );
            c.text.clone()
        })
        .collect()
}

#[test]
fn each_distinct_reason_is_logged_once_with_its_function() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = testkit_config(dir.path(), "fail");
    let capture = Capture::default();
    let logged = capture.run(|| {
        let mut e = LoadedPluginExporter::load("testkit", &cfg, "agent-r").unwrap();
        let batch = [Event::new(1, Category::CUSTOM, "ev", 1); 4];
        for _ in 0..100 {
            assert_eq!(e.export(&batch).failed, 4);
            e.flush();
        }
        assert!(!e.is_disabled());
        reasons(&capture.events())
    });
    assert_eq!(logged.len(), 2, "{logged:#?}");
    assert!(
        logged[0].contains("function=\"export_batch\"")
            && logged[0].contains("testkit export fails as asked"),
        "{}",
        logged[0]
    );
    assert!(
        logged[1].contains("function=\"flush\"")
            && logged[1].contains("testkit flush fails as asked"),
        "{}",
        logged[1]
    );
}

#[test]
fn a_reason_that_changes_is_logged_once_per_text() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = testkit_config(dir.path(), "fail-cycling");
    let capture = Capture::default();
    let logged = capture.run(|| {
        let mut e = LoadedPluginExporter::load("testkit", &cfg, "agent-r").unwrap();
        let batch = [Event::new(1, Category::CUSTOM, "ev", 1)];
        for _ in 0..30 {
            assert_eq!(e.export(&batch).failed, 1);
        }
        reasons(&capture.events())
    });
    assert_eq!(logged.len(), 3, "{logged:#?}");
    for (text, want) in logged.iter().zip(["failure 1", "failure 2", "failure 0"]) {
        assert!(text.contains(want), "{text}");
    }
}

#[test]
fn a_panic_is_logged_with_its_message() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = testkit_config(dir.path(), "panic-flush");
    let capture = Capture::default();
    let events = capture.run(|| {
        let mut e = LoadedPluginExporter::load("testkit", &cfg, "agent-r").unwrap();
        e.flush();
        assert!(e.is_disabled());
        capture.events()
    });
    let errors: Vec<_> = events
        .iter()
        .filter(|c| c.level == tracing::Level::ERROR)
        .collect();
    assert_eq!(errors.len(), 1, "{events:#?}");
    assert!(
        errors[0]
            .text
            .contains("panicked: testkit panics in flush as asked"),
        "{}",
        errors[0].text
    );
}

fn c_plugin_reasons(defines: &[&str]) -> Vec<Captured> {
    let dir = tempfile::tempdir().unwrap();
    build_c_plugin("hostile.c", dir.path(), "failing", defines);
    let cfg = config(&[
        ("NIXL_TELEMETRY_ENABLE", "1"),
        ("NIXL_TELEMETRY_EXPORTER", "failing"),
        (
            "NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR",
            dir.path().to_str().unwrap(),
        ),
    ]);
    let capture = Capture::default();
    capture.run(|| {
        let mut e = LoadedPluginExporter::load("failing", &cfg, "agent-c").unwrap();
        let batch = [Event::new(1, Category::CUSTOM, "ev", 1); 3];
        for _ in 0..50 {
            assert_eq!(e.export(&batch).failed, 3);
            e.flush();
        }
        capture.events()
    })
}

#[test]
fn a_c_plugin_gives_its_reason_through_the_optional_symbol() {
    let events = c_plugin_reasons(&["EXPORT_FAILS", "LAST_ERROR"]);
    let reasons: Vec<_> = events
        .iter()
        .filter(|c| c.text.contains("the disk is on fire"))
        .collect();
    // Once for export_batch, and flush gives the same text: not again.
    assert_eq!(reasons.len(), 1, "{events:#?}");
    assert!(
        reasons[0].text.contains("function=\"export_batch\"")
            && reasons[0].text.contains("plugin=failing"),
        "{}",
        reasons[0].text
    );
}

#[test]
fn a_c_plugin_without_the_symbol_is_logged_by_code_only() {
    let events = c_plugin_reasons(&["EXPORT_FAILS"]);
    assert!(
        !events
            .iter()
            .any(|c| c.text.contains("exporter plug-in call failed")),
        "{events:#?}"
    );
    assert!(
        events.iter().any(|c| c.text.contains("failed to export")),
        "{events:#?}"
    );
}
