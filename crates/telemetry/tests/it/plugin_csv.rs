//! The CSV plug-in (crates/plugins/csv) loaded by the host: exact content,
//! quoting, header only once, flushed at flush, unwritable paths.

use nixl_telemetry_testsupport as support;

use std::path::Path;

use nixl_telemetry::exporter::plugin::{LoadedPluginExporter, PluginError};
use nixl_telemetry::{Category, Event, Exporter, Telemetry, TelemetryConfig, TelemetryError};
use support::{build_rust_plugin, config, install_plugin};

const HEADER: &str = "timestamp_us,category,event_name,value\n";

fn csv_plugin_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    install_plugin(
        &build_rust_plugin("nixl-telemetry-exporter-csv"),
        dir.path(),
        "csv",
    );
    dir
}

fn csv_config(plugins: &Path, output: &Path) -> TelemetryConfig {
    config(&[
        ("NIXL_TELEMETRY_ENABLE", "1"),
        ("NIXL_TELEMETRY_EXPORTER", "csv"),
        (
            "NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR",
            plugins.to_str().unwrap(),
        ),
        (
            "NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH",
            output.to_str().unwrap(),
        ),
        ("NIXL_TELEMETRY_RUN_INTERVAL", "1000"),
    ])
}

fn record_known_sequence(t: &Telemetry, base: u64) {
    let at = |c: Category, name: &str, dt: u64, v: u64| t.handle(c, name).record_at(base + dt, v);
    at(Category::MEMORY, "agent_memory_registered", 0, 67_108_864);
    at(Category::TRANSFER, "agent_tx_bytes", 1, 4096);
    at(Category::PERFORMANCE, "agent_xfer_time", 2, 120);
    at(Category::ERROR, "NIXL_ERR_BACKEND", 3, 1);
    at(Category::BACKEND, "rdma,read", 4, 7);
    at(Category::CUSTOM, "say \"hi\"", 5, 8);
    at(Category::CUSTOM, "a\"b,c", 6, 9);
    at(Category(42), "odd", 7, u64::MAX);
}

fn expected_lines(base: u64) -> String {
    [
        format!("{},0,agent_memory_registered,67108864\n", base),
        format!("{},1,agent_tx_bytes,4096\n", base + 1),
        format!("{},5,agent_xfer_time,120\n", base + 2),
        format!("{},4,NIXL_ERR_BACKEND,1\n", base + 3),
        format!("{},3,\"rdma,read\",7\n", base + 4),
        format!("{},7,\"say \"\"hi\"\"\",8\n", base + 5),
        format!("{},7,\"a\"\"b,c\",9\n", base + 6),
        format!("{},42,odd,18446744073709551615\n", base + 7),
    ]
    .concat()
}

#[test]
fn exact_content_and_no_second_header_on_reopen() {
    let plugins = csv_plugin_dir();
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("events.csv");
    let base = 1_750_000_000_000_000;

    let t = Telemetry::new("agent-csv", csv_config(plugins.path(), &file)).unwrap();
    record_known_sequence(&t, base);
    t.flush();
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        format!("{HEADER}{}", expected_lines(base))
    );
    drop(t);

    // Reopen: appended, header not repeated.
    let t = Telemetry::new("agent-csv", csv_config(plugins.path(), &file)).unwrap();
    record_known_sequence(&t, base + 100);
    drop(t); // the final flush happens on drop
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        format!(
            "{HEADER}{}{}",
            expected_lines(base),
            expected_lines(base + 100)
        )
    );
}

#[test]
fn an_existing_empty_file_gets_the_header_and_a_non_empty_one_does_not() {
    let plugins = csv_plugin_dir();
    let out = tempfile::tempdir().unwrap();
    let empty = out.path().join("empty.csv");
    std::fs::write(&empty, "").unwrap();
    let cfg = csv_config(plugins.path(), &empty);
    drop(LoadedPluginExporter::load("csv", &cfg, "a").unwrap());
    assert_eq!(std::fs::read_to_string(&empty).unwrap(), HEADER);

    let old = out.path().join("old.csv");
    std::fs::write(&old, "1,2,x,3\n").unwrap();
    let cfg = csv_config(plugins.path(), &old);
    let mut e = LoadedPluginExporter::load("csv", &cfg, "a").unwrap();
    e.export(&[Event::new(4, Category::CUSTOM, "y", 5)]);
    e.flush();
    assert_eq!(std::fs::read_to_string(&old).unwrap(), "1,2,x,3\n4,7,y,5\n");
}

#[test]
fn lines_are_written_at_flush_not_at_each_event() {
    let plugins = csv_plugin_dir();
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("buffered.csv");
    let cfg = csv_config(plugins.path(), &file);
    let mut e = LoadedPluginExporter::load("csv", &cfg, "a").unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), HEADER);
    for i in 0..100 {
        let outcome = e.export(&[Event::new(i, Category::TRANSFER, "agent_tx_bytes", i)]);
        assert_eq!(outcome.delivered, 1);
    }
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        HEADER,
        "nothing written before flush"
    );
    e.flush();
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.lines().count(), 101);
    assert!(text.ends_with("99,1,agent_tx_bytes,99\n"));
}

#[test]
fn an_unwritable_path_fails_creation_with_the_reason() {
    let plugins = csv_plugin_dir();
    let out = tempfile::tempdir().unwrap();
    let cases = [
        (
            out.path().join("no/such/dir/x.csv"),
            "No such file or directory",
        ),
        (out.path().to_owned(), "Is a directory"),
    ];
    for (path, reason) in cases {
        let err = Telemetry::new("agent-csv", csv_config(plugins.path(), &path)).unwrap_err();
        assert!(
            matches!(&err, TelemetryError::Plugin(e) if matches!(**e, PluginError::CreateFailed { .. })),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(
            msg.contains(&format!(
                "cannot open CSV file {} for appending",
                path.display()
            )),
            "{msg}"
        );
        assert!(msg.contains(reason), "{msg}");
        assert!(msg.contains("exporter plug-in \"csv\""), "{msg}");
    }
}

#[test]
fn without_any_file_setting_creation_fails() {
    if std::env::var_os("NIXL_TELEMETRY_CSV_FILE").is_some() {
        // The plug-in would read it from this process's environment: check in
        // a child process (this test binary, this test alone) without it.
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "without_any_file_setting_creation_fails",
                "--exact",
                "--test-threads=1",
            ])
            .env_remove("NIXL_TELEMETRY_CSV_FILE")
            .output()
            .expect("the test binary runs again as a child");
        let said = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && said.contains("1 passed"),
            "the check without NIXL_TELEMETRY_CSV_FILE failed:\n{said}"
        );
        return;
    }
    let plugins = csv_plugin_dir();
    let cfg = config(&[
        ("NIXL_TELEMETRY_EXPORTER", "csv"),
        (
            "NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR",
            plugins.path().to_str().unwrap(),
        ),
    ]);
    let err = LoadedPluginExporter::load("csv", &cfg, "agent-csv").unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("no CSV file for agent \"agent-csv\"")
            && msg.contains("NIXL_TELEMETRY_CSV_FILE"),
        "{msg}"
    );
}
