//! `nixl-telemetry report` on rings: a directory of rings of several
//! versions is consumed (or only peeked at), its losses come from the
//! trailers, and a report that cannot be written consumes nothing.

use std::path::Path;

use crate::read_support::{cli, ok, positions, run, stderr};
use crate::view_support::{report_data, ring, transfer};
use nixl_telemetry::ring::{layout, TrailerCounts};
use nixl_telemetry::{Category, Event};
use serde_json::json;

/// A directory with a version-1 ring (`alpha`) and a version-4 ring (`beta`).
fn rings() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut alpha = ring(dir.path(), "alpha", 64, &layout::V1);
    for i in 0..10u64 {
        alpha.push_batch(&transfer(1_000_000 + i * 1000, true, 1000, 10 + i));
    }
    alpha.push_batch(&[Event::new(
        1_020_000,
        Category::ERROR,
        "NIXL_ERR_BACKEND",
        1,
    )]);
    alpha.update_trailer(&TrailerCounts {
        dropped_staging_full: 3,
    });
    let mut beta = ring(dir.path(), "beta", 64, &layout::V4);
    for i in 0..4u64 {
        beta.push_batch(&transfer(0, false, 500, 100 * (i + 1)));
    }
    beta.push_batch(&[Event::new(
        0,
        Category::SYSTEM,
        "agent_telemetry_events_dropped",
        2,
    )]);
    dir
}

/// `report --input input --output html`, successful; its stdout.
fn report(input: &Path, html: &Path) -> String {
    ok(&run(cli()
        .arg("report")
        .arg("--input")
        .arg(input)
        .arg("--output")
        .arg(html)))
}

#[test]
fn a_directory_of_rings_is_consumed_and_charted() {
    let dir = rings();
    let out = tempfile::tempdir().unwrap();
    let html = out.path().join("r.html");
    let stdout = report(dir.path(), &html);
    assert!(
        stdout.contains("(2 agents, 44 events, consumed from the rings)"),
        "{stdout}"
    );
    for agent in ["alpha", "beta"] {
        let (read, write) = positions(&dir.path().join(agent));
        assert_eq!(read, write, "{agent} consumed");
    }
    let data = report_data(&std::fs::read_to_string(&html).unwrap());
    // beta has no timestamps: everything is charted by read order.
    assert_eq!(data["axis"]["kind"], "read_order");
    assert!(data["notes"][0]
        .as_str()
        .unwrap()
        .contains("beta (ring version 4)"));
    let a = &data["agents"][0];
    assert_eq!(a["agent"], "alpha");
    assert_eq!(a["ring_version"], 1);
    assert_eq!(
        (a["events"].clone(), a["tx_bytes"].clone()),
        (json!(31), json!(10_000))
    );
    assert_eq!(
        a["xfer_time_us"],
        json!({"count": 10, "p50": 14, "p90": 18, "p99": 19, "max": 19})
    );
    assert_eq!(a["errors_by_status"], json!([["backend", 1]]));
    // The trailer's count (this project's rings carry one).
    assert_eq!(a["events_lost"], 3);
    let b = &data["agents"][1];
    assert_eq!(b["ring_version"], 4);
    assert_eq!(
        (b["events"].clone(), b["rx_bytes"].clone()),
        (json!(13), json!(2000))
    );
    assert_eq!(b["events_lost"], 2);

    // Consumed: a second report finds nothing left.
    let again = report(dir.path(), &html);
    assert!(
        again.contains("(2 agents, 0 events, consumed from the rings)"),
        "{again}"
    );
}

#[test]
fn peek_leaves_the_rings_as_they_were() {
    let dir = rings();
    let out = tempfile::tempdir().unwrap();
    let before: Vec<_> = ["alpha", "beta"]
        .iter()
        .map(|a| std::fs::read(dir.path().join(a)).unwrap())
        .collect();
    let stdout = ok(&run(cli()
        .arg("report")
        .arg("--peek")
        .arg("--input")
        .arg(dir.path().join("alpha"))
        .arg("--output")
        .arg(out.path().join("r.html"))));
    assert!(
        stdout.contains("(1 agents, 31 events, peeked at in the rings)"),
        "{stdout}"
    );
    let after: Vec<_> = ["alpha", "beta"]
        .iter()
        .map(|a| std::fs::read(dir.path().join(a)).unwrap())
        .collect();
    assert_eq!(before, after);
}

#[test]
fn an_output_that_cannot_be_written_consumes_nothing() {
    let dir = rings();
    let out = run(cli()
        .arg("report")
        .arg("--input")
        .arg(dir.path())
        .arg("--output")
        .arg("/nonexistent/dir/r.html"));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("cannot write in /nonexistent/dir (nothing was read)"),
        "{}",
        stderr(&out)
    );
    let (read, write) = positions(&dir.path().join("alpha"));
    assert_ne!(read, write, "nothing consumed");
}
