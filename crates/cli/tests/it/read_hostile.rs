//! Hostile and broken files: each gets one clear line naming the path, what is
//! wrong and what is accepted, and exit status 2 (a bad slot: a warning and the
//! slot skipped) — never a panic, a hang or a crash.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::read_support::*;

/// Runs the reader (`--once`, consuming and peeking) on `path` and checks
/// the failure: status 2, one error line naming the path and containing
/// every one of `wants`.
fn assert_rejected(path: &Path, wants: &[&str]) {
    for peek in [false, true] {
        let mut cmd = reader();
        cmd.arg("--once");
        if peek {
            cmd.arg("--peek");
        }
        let out = run(cmd.arg(path));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", path.display());
        assert_eq!(ok_stdout_empty(&out), "", "nothing on stdout");
        let line = err
            .lines()
            .find(|l| l.starts_with("telemetry_reader: error: "))
            .unwrap_or_else(|| panic!("no error line in {err:?}"));
        assert!(line.contains(&path.display().to_string()), "{line}");
        for want in wants {
            assert!(line.contains(want), "{want:?} not in {line:?}");
        }
        assert!(!err.contains("panicked"), "{err}");
    }
}

fn ok_stdout_empty(out: &std::process::Output) -> String {
    stdout(out)
}

fn header_only(write_pos: u64, read_pos: u64, version: i32, capacity: u64, mask: u64) -> RingImage {
    RingImage {
        write_pos,
        read_pos,
        version,
        capacity,
        mask,
        slots: vec![],
        trailer: None,
    }
}

#[test]
fn missing_paths_and_directories_without_rings() {
    let tmp = tempfile::tempdir().unwrap();
    assert_rejected(
        &tmp.path().join("nope"),
        &[
            "no such file or directory",
            "expected a NIXL ring file (version 1 to 4)",
        ],
    );
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert_rejected(
        &empty,
        &[
            "directory holds no ring files (0 other files skipped)",
            "accepted",
        ],
    );
    std::fs::write(empty.join("notes.txt"), b"not a ring").unwrap();
    std::fs::write(empty.join(".agent.1.2.tmp"), b"").unwrap();
    assert_rejected(
        &empty,
        &["directory holds no ring files (1 other files skipped)"],
    );
}

#[test]
fn broken_headers_are_refused_before_mapping() {
    let tmp = tempfile::tempdir().unwrap();
    let p = |name: &str| tmp.path().join(name);

    std::fs::write(p("zero"), b"").unwrap();
    assert_rejected(
        &p("zero"),
        &[
            "file is 0 bytes, too short for the 40-byte ring header",
            "accepted",
        ],
    );
    std::fs::write(p("short"), [1u8; 39]).unwrap();
    assert_rejected(&p("short"), &["file is 39 bytes", "accepted"]);

    for version in [0, 5, -1] {
        let mut image = RingImage::new(8, vec![]);
        image.version = version;
        image.write(&p("version"));
        assert_rejected(
            &p("version"),
            &[
                &format!("ring version {version}"),
                "accepts versions 1, 2, 3 and 4",
            ],
        );
    }

    // Capacity 0, 3, 1: the file is big enough for 8 slots.
    let room = RingImage::new(8, vec![]).bytes().len();
    for (capacity, want) in [
        (0u64, "capacity 0 is not a power of two"),
        (3, "capacity 3 is not a power of two"),
        (1, "capacity 1: a one-slot ring can hold no event"),
    ] {
        let mut bytes = header_only(0, 0, 1, capacity, capacity.wrapping_sub(1)).bytes();
        bytes.resize(room, 0);
        std::fs::write(p("capacity"), &bytes).unwrap();
        assert_rejected(&p("capacity"), &[want, "accepted: a power of two >= 2"]);
    }

    // Larger than the file, also absurdly so.
    let mut bytes = RingImage::new(16, vec![]).bytes();
    bytes[24..32].copy_from_slice(&1024u64.to_le_bytes());
    bytes[32..40].copy_from_slice(&1023u64.to_le_bytes());
    std::fs::write(p("beyond"), &bytes).unwrap();
    assert_rejected(
        &p("beyond"),
        &[
            "capacity 1024 needs 57384 bytes",
            "the file has 936",
            "accepted",
        ],
    );
    bytes[24..32].copy_from_slice(&(1u64 << 62).to_le_bytes());
    bytes[32..40].copy_from_slice(&((1u64 << 62) - 1).to_le_bytes());
    std::fs::write(p("huge"), &bytes).unwrap();
    assert_rejected(&p("huge"), &["capacity 4611686018427387904", "accepted"]);

    let mut image = RingImage::new(8, vec![]);
    image.mask = 5;
    image.write(&p("mask"));
    assert_rejected(
        &p("mask"),
        &[
            "mask 5 is not capacity - 1 = 7",
            "accepted: mask = capacity - 1",
        ],
    );

    for (write_pos, read_pos, want) in [
        (8u64, 0u64, "write_pos 8 is outside [0, 8)"),
        (0, 9, "read_pos 9 is outside [0, 8)"),
        (
            u64::MAX,
            0,
            "write_pos 18446744073709551615 is outside [0, 8)",
        ),
    ] {
        let mut image = RingImage::new(8, vec![]);
        image.write_pos = write_pos;
        image.read_pos = read_pos;
        image.write(&p("position"));
        assert_rejected(
            &p("position"),
            &[want, "accepted: a slot index below the capacity"],
        );
    }
}

#[test]
fn special_files_are_refused_without_blocking() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    // Opening a FIFO for reading would block forever: it must be refused first.
    assert_rejected(
        &fifo,
        &[
            "not a regular file",
            "expected a NIXL ring file (version 1 to 4)",
        ],
    );
    assert_rejected(Path::new("/dev/null"), &["not a regular file"]);
}

#[test]
fn a_name_without_nul_is_skipped_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("agent");
    let mut slots: Vec<Slot> = (0..30)
        .map(|i| Slot::raw(1_700_000_000_000_000 + i, 7, [b'z'; 32], i))
        .collect();
    slots.insert(
        3,
        Slot::new(1_700_000_000_000_100, 1, b"agent_tx_bytes", 4096),
    );
    RingImage::new(64, slots).write(&path);
    let out = run(reader().arg("--once").arg(&path));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.matches("=== NIXL Telemetry Event ===").count(), 1);
    assert!(text.contains("Event: agent_tx_bytes\n"));
    let err = stderr(&out);
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("telemetry_reader: warning: "))
        .collect();
    assert_eq!(warnings.len(), 10, "at most 10 warnings per ring: {err}");
    assert!(warnings[0].contains(&format!(
        "{}: slot 0: event name has no NUL terminator",
        path.display()
    )));
    assert!(warnings[3].contains("slot 4:"), "{}", warnings[3]);
    assert!(warnings[9].contains("only counted"));
    assert!(err.contains("Malformed slots skipped: 30\n"), "{err}");
    assert!(err.contains("Total events read: 1\n"), "{err}");
    // Consumed, malformed slots included.
    assert_eq!(positions(&path), (31, 31));
}

#[test]
fn directory_mode_skips_broken_files_and_reads_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    RingImage::new(8, vec![Slot::new(1, 0, b"good", 1)]).write(&tmp.path().join("good"));
    let mut bad = RingImage::new(8, vec![]);
    bad.version = 7;
    bad.write(&tmp.path().join("bad"));
    std::fs::write(tmp.path().join("tiny"), b"x").unwrap();
    let out = run(reader().args(["--once", "--json"]).arg(tmp.path()));
    let text = ok(&out);
    assert_eq!(text.lines().count(), 1);
    assert!(text.contains(r#""name":"good","value":1,"agent":"good"}"#));
    let err = stderr(&out);
    assert!(
        err.contains("warning: skipping ") && err.contains("bad: ring version 7"),
        "{err}"
    );
    assert!(err.contains("tiny: file is 1 bytes"), "{err}");
}

/// A reader following `path` (consuming); returns the child once it printed
/// its first event.
fn follow(path: &Path) -> std::process::Child {
    let mut child = reader()
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.as_mut().unwrap()).lines();
    let first = lines.next().and_then(|l| l.ok());
    let second = lines.next().and_then(|l| l.ok());
    assert_eq!(first.as_deref(), Some(""));
    assert_eq!(second.as_deref(), Some("=== NIXL Telemetry Event ==="));
    child
}

#[test]
fn truncation_while_following_ends_with_status_2() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("agent");
    RingImage::new(1024, vec![Slot::new(1, 0, b"first", 1)]).write(&path);
    let child = follow(&path);
    std::thread::sleep(Duration::from_millis(200));
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(100)
        .unwrap();
    let out = wait_with_deadline(child, Duration::from_secs(10));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "{}: file truncated to 100 bytes while being read",
            path.display()
        )),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_position_corrupted_while_following_ends_with_status_2() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("agent");
    RingImage::new(16, vec![Slot::new(1, 0, b"first", 1)]).write(&path);
    let child = follow(&path);
    std::thread::sleep(Duration::from_millis(200));
    // Written in place: the file never shrinks.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .write_all_at(&77u64.to_le_bytes(), 0)
        .unwrap();
    let out = wait_with_deadline(child, Duration::from_secs(10));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("write_pos 77 is outside [0, 16)"), "{err}");
}

#[test]
fn usage_errors_exit_2() {
    let both = run(reader().args(["a", "--telemetry_path", "b"]));
    assert_eq!(both.status.code(), Some(2));
    let neither = run(reader().arg("--once"));
    assert_eq!(neither.status.code(), Some(2));
    let json_and_summary = run(reader().args(["--json", "--summary", "x"]));
    assert_eq!(json_and_summary.status.code(), Some(2));
}
