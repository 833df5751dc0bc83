//! `nixl-telemetry emit` end to end, driven by the environment alone.

use std::io::Write;
use std::process::{Command, Stdio};

use nixl_telemetry::ring::{ReadMode, RingReader};

fn emit(env: &[(&str, &str)], agent: &str, input: &str) -> (i32, String) {
    emit_bytes(env, agent, input.as_bytes(), &[])
}

/// Runs `emit` with `input` on standard input (raw bytes) and extra arguments.
fn emit_bytes(env: &[(&str, &str)], agent: &str, input: &[u8], args: &[&str]) -> (i32, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nixl-telemetry"));
    cmd.args(["emit", "--agent", agent])
        .args(args)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("NIXL_")) {
        cmd.env_remove(k);
    }
    cmd.envs(env.iter().copied());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        // A refused --events file means emit never reads its standard input.
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
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

/// A line that is not UTF-8 is reported and skipped like any malformed line: the
/// lines after it are recorded and the summary is printed (it used to end `emit` with
/// status 2, no summary, and the rest of the input lost). A line over the 1 MiB limit
/// is skipped the same way.
#[test]
fn invalid_utf8_and_overlong_lines_are_reported_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let mut input = Vec::new();
    input.extend_from_slice(b"{\"error\": \"NIXL_ERR_A\"}\n");
    input.extend_from_slice(b"{\"error\": \"NIXL_ERR_\xff\xfe\"}\n");
    input.extend_from_slice(b"{\"error\": \"NIXL_ERR_B\"}\n");
    input.extend_from_slice(format!("{{\"error\": \"{}\"}}\n", "E".repeat(2 << 20)).as_bytes());
    input.extend_from_slice(b"{\"error\": \"NIXL_ERR_C\"}\n");
    let (code, stderr) = emit_bytes(
        &[
            ("NIXL_TELEMETRY_ENABLE", "yes"),
            ("NIXL_TELEMETRY_DIR", dir.path().to_str().unwrap()),
        ],
        "utf8",
        &input,
        &[],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("line 2: not UTF-8 text (invalid byte at offset 20); skipped"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "line 4: the line is 2097165 bytes, longer than the limit of 1048576 bytes; skipped"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("lines=5 rejected=2 recorded=3"), "{stderr}");
    let mut r = RingReader::open(&dir.path().join("utf8"), ReadMode::Peek).unwrap();
    let mut events = Vec::new();
    r.read_batch(&mut events, usize::MAX).unwrap();
    let names: Vec<String> = events.iter().map(|e| e.name().into_owned()).collect();
    assert_eq!(names, ["NIXL_ERR_A", "NIXL_ERR_B", "NIXL_ERR_C"]);
}

/// `--events` naming a device or a directory is refused at once (it used to read
/// /dev/zero into memory without end).
#[test]
fn events_from_a_device_or_directory_are_refused() {
    for (events, says) in [
        ("/dev/zero", "--events /dev/zero is a character device"),
        ("/", "--events / is a directory"),
    ] {
        let (code, stderr) = emit_bytes(
            &[
                ("NIXL_TELEMETRY_ENABLE", "1"),
                ("NIXL_TELEMETRY_EXPORTER", "nop"),
            ],
            "a",
            b"",
            &["--events", events],
        );
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
    }
}
