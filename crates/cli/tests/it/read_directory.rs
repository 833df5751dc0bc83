//! Directory mode while following: agents that appear later are picked up, a
//! removed ring is finished and closed, SIGINT/SIGTERM end the reader with
//! status 0 and its totals; the summary refreshes while following.

use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::read_support::*;
use nixl_telemetry::{Category, Telemetry};

fn telemetry(dir: &std::path::Path, agent: &str) -> Telemetry {
    Telemetry::builder(agent)
        .ring_directory(dir)
        .run_interval(Duration::from_millis(10))
        .unwrap()
        .build()
        .unwrap()
}

/// Spawns a following reader of `dir`.
fn spawn(args: &[&str], dir: &std::path::Path) -> (Child, Arc<Mutex<Vec<String>>>) {
    let mut cmd = reader();
    cmd.args(args).arg(dir);
    follow(cmd)
}

#[test]
fn a_late_agent_is_picked_up_and_sigint_ends_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let early = telemetry(tmp.path(), "early");
    for i in 0..3 {
        early.record(Category::CUSTOM, "early_event", i);
    }
    early.flush();

    let (child, lines) = spawn(&["--json"], tmp.path());
    assert!(
        wait_until(Duration::from_secs(10), || count(
            &lines,
            r#""agent":"early""#
        ) == 3),
        "early events not read"
    );

    // A new agent appears while the reader follows.
    let late = telemetry(tmp.path(), "late");
    late.record(Category::BACKEND, "late_event", 7);
    late.record(Category::BACKEND, "late_event", 8);
    late.flush();
    assert!(
        wait_until(Duration::from_secs(10), || count(
            &lines,
            r#""agent":"late""#
        ) == 2),
        "late agent not picked up: {:?}",
        lines.lock().unwrap()
    );

    // The early agent goes away: its ring is read to the end and closed.
    early.record(Category::CUSTOM, "early_event", 99);
    drop(early);
    std::fs::remove_file(tmp.path().join("early")).unwrap();
    std::thread::sleep(Duration::from_millis(400));
    late.record(Category::BACKEND, "late_event", 9);
    late.flush();
    assert!(wait_until(Duration::from_secs(10), || count(
        &lines,
        r#""agent":"late""#
    ) == 3));

    kill(child.id(), "INT");
    let (code, err) = finish(child);
    assert_eq!(code, Some(0), "{err}");
    let got = lines.lock().unwrap().clone();
    assert_eq!(got.len(), 7, "{got:?}");
    assert!(
        got.iter()
            .any(|l| l.contains(r#""value":99,"agent":"early""#)),
        "{got:?}"
    );
    for want in [
        "Agent early: ring opened",
        "Agent late: ring opened (version 1, capacity 4096 events",
        "Agent early: ring file removed or replaced; finished reading it",
        "Press Ctrl+C to stop reading telemetry...",
        "Received a stop signal, shutting down...",
        "Agent early: 4 events read, 0 lost by the producer",
        "Agent late: 3 events read, 0 lost by the producer",
        "Total events read: 7",
    ] {
        assert!(err.contains(want), "{want:?} missing from:\n{err}");
    }
    drop(late);
}

#[test]
fn the_summary_refreshes_while_following_and_sigterm_ends_it() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = telemetry(tmp.path(), "node1");
    agent.record(Category::PERFORMANCE, "agent_xfer_time", 10);
    agent.flush();
    let (child, lines) = spawn(&["--summary"], tmp.path());
    assert!(wait_until(Duration::from_secs(10), || count(
        &lines,
        "agent_xfer_time"
    ) == 1));
    for v in [20, 30] {
        agent.record(Category::PERFORMANCE, "agent_xfer_time", v);
    }
    agent.flush();
    assert!(
        wait_until(Duration::from_secs(10), || count(&lines, "agent_xfer_time")
            == 2),
        "no refreshed table: {:?}",
        lines.lock().unwrap()
    );
    kill(child.id(), "TERM");
    let (code, err) = finish(child);
    assert_eq!(code, Some(0), "{err}");
    let got = lines.lock().unwrap().clone();
    assert!(got[0].starts_with("Summary at "), "{got:?}");
    assert_eq!(got[1], "");
    assert_eq!(got[2], "Agent: node1");
    let last = got
        .iter()
        .rposition(|l| l.contains("agent_xfer_time"))
        .unwrap();
    let cells: Vec<&str> = got[last].split_whitespace().collect();
    assert_eq!(
        cells,
        [
            "PERFORMANCE",
            "agent_xfer_time",
            "3",
            "60",
            "10",
            "30",
            "20",
            "30",
            "30"
        ]
    );
    // Separated by an empty line, each print starting with its time line.
    assert!(count(&lines, "Summary at ") >= 2, "{got:?}");
    for (i, line) in got.iter().enumerate().skip(1) {
        if line.starts_with("Summary at ") {
            assert_eq!(got[i - 1], "", "{got:?}");
            assert_eq!(got[i + 1], "", "{got:?}");
        }
    }
}
