//! A C host forks 30 times (no exec) while two threads record into telemetry
//! flushed every millisecond; each child calls one function under `alarm(5)`
//! (`tests/c/fork.c`). Inherited objects must do nothing and return at once —
//! no hang on a lock the parent's flush thread held at the fork, no panic or
//! backtrace from `destroy` — and telemetry a child creates must work: its
//! ring holds exactly what it recorded.

use crate::support;

use support::{build_c, read_ring, run, test_source};

/// The children (of 30) that create telemetry of their own: `i % 10` is 8
/// (after destroying what they inherited) or 9.
const CREATING_CHILDREN: [u32; 6] = [8, 9, 18, 19, 28, 29];

#[test]
fn a_forked_child_leaves_inherited_telemetry_alone_and_records_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("fork");
    build_c(&[test_source("c/fork.c")], &exe, &[]);
    let rings = dir.path().join("rings");
    let out = run(&exe, &[rings.to_str().unwrap()], &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("all checks passed: 30 children"),
        "{stdout}{stderr}"
    );
    for needle in ["panicked", "backtrace", "threads should not terminate"] {
        assert!(
            !stderr.contains(needle),
            "a child printed {needle:?}:\n{stderr}"
        );
    }

    for child in CREATING_CHILDREN {
        let events = read_ring(&rings.join(format!("c-fork-child-{child}")));
        let names: Vec<String> = events.iter().map(|e| e.name().into_owned()).collect();
        assert_eq!(events.len(), 100, "child {child}: {names:?}");
        for (i, pair) in events.chunks(2).enumerate() {
            assert_eq!(
                (pair[0].name(), pair[0].value, pair[1].name(), pair[1].value),
                (
                    "child_handle".into(),
                    i as u64,
                    "child_generic".into(),
                    i as u64
                ),
                "child {child}"
            );
        }
    }
    // The parent's ring is intact and holds the recorders' events.
    let parent = read_ring(&rings.join("c-fork-parent"));
    assert!(!parent.is_empty());
    assert!(parent.iter().all(|e| matches!(
        &*e.name(),
        "fork_handle"
            | "fork_generic"
            | "agent_xfer_time"
            | "agent_tx_bytes"
            | "agent_tx_requests_num"
    )));
}
