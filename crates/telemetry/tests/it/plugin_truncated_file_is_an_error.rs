//! A truncated plug-in file (a half-written install, a copy cut short) is a
//! clear load error, not a SIGBUS inside `dlopen`: the loader would map its
//! loadable segments past the end of the file, and the first touch of the
//! missing part kills the process. Checked with truncated copies of the real
//! CSV and Prometheus plug-ins. (Should the check regress, this test binary
//! dies of SIGBUS: a failure that cannot pass unnoticed.)

use nixl_telemetry_testsupport as support;

use std::path::Path;

use nixl_telemetry::exporter::plugin::{ElfDefect, LoadedPluginExporter, PluginError};
use nixl_telemetry::{Telemetry, TelemetryError};
use support::{build_rust_plugin, config};

fn install_truncated(built: &Path, dir: &Path, size: usize) {
    let bytes = std::fs::read(built).unwrap();
    assert!(
        size < bytes.len(),
        "{} is only {} bytes",
        built.display(),
        bytes.len()
    );
    std::fs::write(dir.join("libtelemetry_exporter_t.so"), &bytes[..size]).unwrap();
}

fn plugin_config(dir: &Path, output: &str) -> nixl_telemetry::TelemetryConfig {
    config(&[
        ("NIXL_TELEMETRY_ENABLE", "1"),
        ("NIXL_TELEMETRY_EXPORTER", "t"),
        ("NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR", dir.to_str().unwrap()),
        ("NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH", output),
    ])
}

fn assert_refused_as_incomplete(package: &str, sizes: &[usize], output: &str) {
    let built = build_rust_plugin(package);
    for &size in sizes {
        let dir = tempfile::tempdir().unwrap();
        install_truncated(&built, dir.path(), size);
        let cfg = plugin_config(dir.path(), output);
        let err = LoadedPluginExporter::load("t", &cfg, "agent-t")
            .expect_err("a truncated library must not load");
        assert!(
            matches!(
                &err,
                PluginError::IncompleteFile {
                    defect: ElfDefect::SegmentCut { .. } | ElfDefect::ProgramHeadersCut { .. },
                    ..
                }
            ),
            "{package} cut to {size} bytes: {err:?}"
        );
        let msg = err.to_string();
        assert!(
            msg.contains("exporter plug-in \"t\"")
                && msg.contains("libtelemetry_exporter_t.so")
                && msg.contains("is not a complete library")
                && msg.contains("truncated")
                && msg.contains(&format!("{size}-byte file")),
            "{msg}"
        );
        // Through the public entry point too: an error, and the host goes on.
        let err = Telemetry::new("agent-t", cfg).unwrap_err();
        assert!(matches!(err, TelemetryError::Plugin(_)), "{err:?}");
    }
}

#[test]
fn truncated_copies_of_the_csv_plugin_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("out.csv");
    assert_refused_as_incomplete(
        "nixl-telemetry-exporter-csv",
        &[1_000, 4_096, 10_000, 65_536, 100_000, 200_000],
        csv.to_str().unwrap(),
    );
}

#[test]
fn truncated_copies_of_the_prometheus_plugin_are_refused() {
    assert_refused_as_incomplete(
        "nixl-telemetry-exporter-prometheus",
        &[1_000, 10_000, 100_000, 200_000],
        "127.0.0.1:0",
    );
}

#[test]
fn a_header_cut_short_is_refused_and_a_whole_copy_still_loads() {
    let built = build_rust_plugin("nixl-telemetry-exporter-csv");
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("out.csv");
    let cfg = plugin_config(dir.path(), csv.to_str().unwrap());
    for size in [10, 63] {
        install_truncated(&built, dir.path(), size);
        let err = LoadedPluginExporter::load("t", &cfg, "agent-t").unwrap_err();
        assert!(
            matches!(
                &err,
                PluginError::IncompleteFile {
                    defect: ElfDefect::HeaderCut { .. },
                    ..
                }
            ),
            "cut to {size} bytes: {err:?}"
        );
    }
    std::fs::copy(&built, dir.path().join("libtelemetry_exporter_t.so")).unwrap();
    let exporter = LoadedPluginExporter::load("t", &cfg, "agent-t").expect("the whole copy loads");
    assert_eq!(exporter.plugin_name(), "csv");
}
