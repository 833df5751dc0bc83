//! `nixl-telemetry emit` driving each exporter from the environment alone:
//! the built-in `buffer` and `nop`, the CSV plug-in, and a C plug-in compiled
//! against include/nixl_telemetry_plugin.h during the test.

use nixl_telemetry_testsupport as support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use nixl_telemetry::ring::{ReadMode, RingReader};
use nixl_telemetry::Event;

/// Lines of input and the events they record (category, name, value), in order.
const INPUT: &str = r#"{"category": "TRANSFER", "name": "agent_tx_bytes", "value": 4096}
{"xfer": {"us": 120, "write": false, "bytes": 8192}}
{"error": "NIXL_ERR_BACKEND"}
{"category": "CUSTOM", "name": "a,\"b\"", "value": 3}
{"memory_registered": 65536}
"#;

fn expected() -> Vec<(i32, &'static str, u64)> {
    vec![
        (1, "agent_tx_bytes", 4096),
        (5, "agent_xfer_time", 120),
        (1, "agent_rx_bytes", 8192),
        (1, "agent_rx_requests_num", 1),
        (4, "NIXL_ERR_BACKEND", 1),
        (7, "a,\"b\"", 3),
        (0, "agent_memory_registered", 65536),
    ]
}

/// Runs `emit` with exactly `env` as its NIXL_* environment; returns the exit
/// code and stderr.
fn emit(env: &[(&str, &str)], agent: &str) -> (i32, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nixl-telemetry"));
    cmd.args(["emit", "--agent", agent])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("NIXL_")) {
        cmd.env_remove(k);
    }
    cmd.envs(env.iter().copied());
    let mut child = cmd.spawn().unwrap();
    // emit stops before reading its input on a configuration error: a broken
    // pipe here is expected then.
    let _ = child.stdin.take().unwrap().write_all(INPUT.as_bytes());
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn triples(events: &[Event]) -> Vec<(i32, String, u64)> {
    events
        .iter()
        .map(|e| (e.category, e.name().into_owned(), e.value))
        .collect()
}

fn expected_owned() -> Vec<(i32, String, u64)> {
    expected()
        .into_iter()
        .map(|(c, n, v)| (c, n.to_owned(), v))
        .collect()
}

fn assert_success(code: i32, stderr: &str) {
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("recorded=7 generated=0 delivered=7 dropped=0"),
        "{stderr}"
    );
}

#[test]
fn buffer_exporter_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = emit(
        &[
            ("NIXL_TELEMETRY_ENABLE", "1"),
            ("NIXL_TELEMETRY_EXPORTER", "buffer"),
            (
                "NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH",
                dir.path().to_str().unwrap(),
            ),
        ],
        "ring-agent",
    );
    assert_success(code, &stderr);
    let mut reader = RingReader::open(&dir.path().join("ring-agent"), ReadMode::Peek).unwrap();
    let mut events = Vec::new();
    reader.read_batch(&mut events, usize::MAX).unwrap();
    assert_eq!(triples(&events), expected_owned());
}

#[test]
fn nop_exporter_from_the_environment() {
    let (code, stderr) = emit(
        &[
            ("NIXL_TELEMETRY_ENABLE", "1"),
            ("NIXL_TELEMETRY_EXPORTER", "nop"),
        ],
        "nop-agent",
    );
    assert_success(code, &stderr);
    assert!(stderr.contains("exporter=configured"), "{stderr}");
}

/// The CSV lines without their timestamps (taken at record time).
fn csv_body(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("timestamp_us,category,event_name,value"));
    lines
        .map(|l| {
            let (ts, rest) = l.split_once(',').unwrap();
            assert!(ts.parse::<u64>().unwrap() > 1_600_000_000_000_000, "{l}");
            rest.to_owned()
        })
        .collect()
}

fn csv_expected() -> Vec<String> {
    vec![
        "1,agent_tx_bytes,4096".to_owned(),
        "5,agent_xfer_time,120".to_owned(),
        "1,agent_rx_bytes,8192".to_owned(),
        "1,agent_rx_requests_num,1".to_owned(),
        "4,NIXL_ERR_BACKEND,1".to_owned(),
        "7,\"a,\"\"b\"\"\",3".to_owned(),
        "0,agent_memory_registered,65536".to_owned(),
    ]
}

#[test]
fn csv_plugin_from_the_environment() {
    let plugins = tempfile::tempdir().unwrap();
    support::install_plugin(
        &support::build_rust_plugin("nixl-telemetry-exporter-csv"),
        plugins.path(),
        "csv",
    );
    let out = tempfile::tempdir().unwrap();
    let plugins_dir = plugins.path().to_str().unwrap();

    // Output path given: that file; the plug-in directory from the variable.
    let file = out.path().join("out.csv");
    let (code, stderr) = emit(
        &[
            ("NIXL_TELEMETRY_ENABLE", "1"),
            ("NIXL_TELEMETRY_EXPORTER", "csv"),
            ("NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR", plugins_dir),
            (
                "NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH",
                file.to_str().unwrap(),
            ),
            ("NIXL_TELEMETRY_CSV_FILE", "/nonexistent/ignored.csv"),
        ],
        "csv-agent",
    );
    assert_success(code, &stderr);
    assert_eq!(csv_body(&file), csv_expected());

    // No output path: NIXL_TELEMETRY_CSV_FILE; the plug-in found via NIXL_PLUGIN_DIR.
    // Run twice: the second run appends without a second header.
    let file = out.path().join("fallback.csv");
    for _ in 0..2 {
        let (code, stderr) = emit(
            &[
                ("NIXL_TELEMETRY_ENABLE", "1"),
                ("NIXL_TELEMETRY_EXPORTER", "csv"),
                ("NIXL_PLUGIN_DIR", plugins_dir),
                ("NIXL_TELEMETRY_CSV_FILE", file.to_str().unwrap()),
            ],
            "csv-agent",
        );
        assert_success(code, &stderr);
    }
    assert_eq!(csv_body(&file), [csv_expected(), csv_expected()].concat());

    // An unwritable file: a configuration error naming the cause, exit code 2.
    let bad = out.path().join("missing-dir/x.csv");
    let (code, stderr) = emit(
        &[
            ("NIXL_TELEMETRY_ENABLE", "1"),
            ("NIXL_TELEMETRY_EXPORTER", "csv"),
            ("NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR", plugins_dir),
            ("NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH", bad.to_str().unwrap()),
        ],
        "csv-agent",
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("cannot open CSV file") && stderr.contains("No such file or directory"),
        "{stderr}"
    );
}

#[test]
fn c_plugin_from_the_environment() {
    let plugins = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    support::build_c_plugin("record.c", plugins.path(), "record", &[]);
    let (code, stderr) = emit(
        &[
            ("NIXL_TELEMETRY_ENABLE", "1"),
            ("NIXL_TELEMETRY_EXPORTER", "record"),
            (
                "NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR",
                &format!("/nonexistent:{}", plugins.path().display()),
            ),
            (
                "NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH",
                out.path().to_str().unwrap(),
            ),
        ],
        "c-agent",
    );
    assert_success(code, &stderr);
    let events = support::read_raw_events(&out.path().join("c-agent.events"));
    assert_eq!(triples(&events), expected_owned());
    // One transfer: three events with one timestamp.
    assert!(
        events[1].timestamp_us == events[2].timestamp_us
            && events[2].timestamp_us == events[3].timestamp_us
    );
}

#[test]
fn a_variable_that_is_not_utf8_is_a_clear_error() {
    use std::os::unix::ffi::OsStrExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nixl-telemetry"));
    cmd.args(["emit", "--agent", "agent"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("NIXL_")) {
        cmd.env_remove(k);
    }
    cmd.env("NIXL_TELEMETRY_ENABLE", "1").env(
        "NIXL_TELEMETRY_DIR",
        std::ffi::OsStr::from_bytes(b"/tmp/rings-\xff"),
    );
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("NIXL_TELEMETRY_DIR") && stderr.contains("UTF-8"),
        "{stderr}"
    );
}

#[test]
fn a_missing_plugin_is_a_clear_error() {
    let empty = tempfile::tempdir().unwrap();
    let (code, stderr) = emit(
        &[
            ("NIXL_TELEMETRY_ENABLE", "1"),
            ("NIXL_TELEMETRY_EXPORTER", "nosuch"),
            (
                "NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR",
                empty.path().to_str().unwrap(),
            ),
        ],
        "agent",
    );
    assert_eq!(code, 2, "{stderr}");
    let file = empty.path().join("libtelemetry_exporter_nosuch.so");
    assert!(
        stderr.contains("exporter plug-in \"nosuch\": libtelemetry_exporter_nosuch.so not found")
            && stderr.contains(&format!(
                "{} (NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR)",
                file.display()
            )),
        "{stderr}"
    );
}
