//! Consuming versus peeking: a second `--once` after a consuming read prints
//! nothing; after `--peek` it prints everything again, and `--peek` never
//! changes a byte of the file.

use crate::read_support::*;
use nixl_telemetry::{Direction, Telemetry};

fn ring_with_events(dir: &std::path::Path) -> std::path::PathBuf {
    let t = Telemetry::builder("agent")
        .ring_directory(dir)
        .build()
        .unwrap();
    for i in 0..50 {
        t.transfer_completed(10 + i, Direction::Write, 4096);
    }
    t.flush();
    drop(t);
    dir.join("agent")
}

#[test]
fn consuming_reads_once_and_peeking_reads_again() {
    let tmp = tempfile::tempdir().unwrap();
    let ring = ring_with_events(tmp.path());
    let before = std::fs::read(&ring).unwrap();

    // Peek twice: the same 150 events both times, the file untouched.
    let first = ok(&run(reader()
        .args(["--once", "--peek", "--json"])
        .arg(&ring)));
    assert_eq!(first.lines().count(), 150);
    let second = ok(&run(reader()
        .args(["--once", "--peek", "--json"])
        .arg(&ring)));
    assert_eq!(first, second);
    assert_eq!(
        std::fs::read(&ring).unwrap(),
        before,
        "--peek wrote to the file"
    );

    // Consume: the same events, then nothing; read_pos caught up with write_pos.
    let consumed = ok(&run(reader().args(["--once", "--json"]).arg(&ring)));
    assert_eq!(consumed, first);
    let (read_pos, write_pos) = positions(&ring);
    assert_eq!((read_pos, write_pos), (150, 150));
    let again = run(reader().args(["--once", "--json"]).arg(&ring));
    assert_eq!(ok(&again), "");
    assert!(stderr(&again).contains("Total events read: 0\n"));
    let peek_after = ok(&run(reader().args(["--once", "--peek"]).arg(&ring)));
    assert_eq!(peek_after, "");

    // Only the header's read_pos changed.
    let after = std::fs::read(&ring).unwrap();
    assert_eq!(after.len(), before.len());
    assert_eq!(after[..8], before[..8]);
    assert_eq!(after[16..], before[16..]);
}

#[test]
fn peek_works_on_a_file_opened_read_only() {
    // A read-only copy (never the shared fixture itself: a consuming reader
    // run as root could write to it).
    let tmp = tempfile::tempdir().unwrap();
    let ring = tmp.path().join("basic.ring");
    std::fs::copy(fixtures().join("nixl_v1_basic.ring"), &ring).unwrap();
    let mut perm = std::fs::metadata(&ring).unwrap().permissions();
    perm.set_readonly(true);
    std::fs::set_permissions(&ring, perm).unwrap();
    let before = std::fs::read(&ring).unwrap();
    let out = ok(&run(reader().args(["--once", "--peek"]).arg(&ring)));
    assert_eq!(out.matches("=== NIXL Telemetry Event ===").count(), 5);
    assert_eq!(std::fs::read(&ring).unwrap(), before);
    // Consuming one that cannot be written is refused with advice (unless
    // the tests run as a user allowed to write anyway, e.g. root).
    let consume = run(reader().arg("--once").arg(&ring));
    if !consume.status.success() {
        assert_eq!(consume.status.code(), Some(2));
        let err = stderr(&consume);
        assert!(
            err.contains("permission denied") && err.contains("--peek"),
            "{err}"
        );
    }
}

#[test]
fn filters_still_consume_what_they_hide() {
    let tmp = tempfile::tempdir().unwrap();
    let ring = ring_with_events(tmp.path());
    let out = run(reader()
        .args(["--once", "--category", "PERFORMANCE", "--name", "*time"])
        .arg(&ring));
    let text = ok(&out);
    assert_eq!(text.matches("Event: agent_xfer_time\n").count(), 50);
    assert!(!text.contains("agent_tx_bytes"));
    let err = stderr(&out);
    assert!(err.contains("Total events read: 150\n"), "{err}");
    assert!(err.contains("Events matching the filters: 50\n"), "{err}");
    assert_eq!(positions(&ring), (150, 150));
    let bad = run(reader().args(["--once", "--category", "NOPE"]).arg(&ring));
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("accepted: MEMORY, TRANSFER"));
}
