//! `nixl-telemetry emit` end to end, driven by the environment alone.

use std::io::Write;
use std::process::{Command, Stdio};

use nixl_telemetry::ring::{ReadMode, RingReader};

fn emit(env: &[(&str, &str)], agent: &str, input: &str) -> (i32, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nixl-telemetry"));
    cmd.args(["emit", "--agent", agent])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("NIXL_")) {
        cmd.env_remove(k);
    }
    cmd.envs(env.iter().copied());
    let mut child = cmd.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn emit_writes_the_ring_and_reports_bad_lines() {
    let dir = tempfile::tempdir().unwrap();
    let input = r#"{"category": "TRANSFER", "name": "agent_tx_bytes", "value": 4096}
# comments and blank lines are skipped

{"xfer": {"us": 120, "write": true, "bytes": 4096}}
{"error": "NIXL_ERR_BACKEND"}
not json
{"memory_registered": 65536}
{"category": "NOPE", "name": "x", "value": 1}
"#;
    let (code, stderr) = emit(
        &[
            ("NIXL_TELEMETRY_ENABLE", "yes"),
            ("NIXL_TELEMETRY_DIR", dir.path().to_str().unwrap()),
        ],
        "emitter",
        input,
    );
    assert_eq!(code, 1, "a rejected line makes the exit code 1: {stderr}");
    assert!(stderr.contains("line 6: not JSON"), "{stderr}");
    assert!(stderr.contains("line 8: \"category\""), "{stderr}");
    assert!(
        stderr.contains("recorded=6 generated=0 delivered=6 dropped=0"),
        "{stderr}"
    );
    let mut r = RingReader::open(&dir.path().join("emitter"), ReadMode::Peek).unwrap();
    let mut events = Vec::new();
    r.read_batch(&mut events, usize::MAX).unwrap();
    let names: Vec<String> = events.iter().map(|e| e.name().into_owned()).collect();
    assert_eq!(
        names,
        [
            "agent_tx_bytes",
            "agent_xfer_time",
            "agent_tx_bytes",
            "agent_tx_requests_num",
            "NIXL_ERR_BACKEND",
            "agent_memory_registered"
        ]
    );
}

#[test]
fn a_configuration_error_ends_emit_at_once() {
    let (code, stderr) = emit(
        &[
            ("NIXL_TELEMETRY_ENABLE", "yes"),
            ("NIXL_TELEMETRY_BUFFER_SIZE", "1000"),
        ],
        "a",
        "",
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains("NIXL_TELEMETRY_BUFFER_SIZE=\"1000\" is invalid"),
        "{stderr}"
    );
    let (code, stderr) = emit(&[("NIXL_TELEMETRY_ENABLE", "maybe")], "a", "");
    assert_eq!(code, 2);
    assert!(
        stderr.contains("NIXL_TELEMETRY_ENABLE=\"maybe\""),
        "{stderr}"
    );
}

#[test]
fn nop_and_disabled() {
    let (code, stderr) = emit(
        &[
            ("NIXL_TELEMETRY_ENABLE", "1"),
            ("NIXL_TELEMETRY_EXPORTER", "nop"),
        ],
        "a",
        "{\"error\": \"NIXL_ERR_X\"}\n",
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("recorded=1 generated=0 delivered=1"),
        "{stderr}"
    );
    let (code, stderr) = emit(&[], "a", "{\"error\": \"NIXL_ERR_X\"}\n");
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("telemetry disabled") && stderr.contains("recorded=0"),
        "{stderr}"
    );
}
