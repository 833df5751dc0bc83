//! `nixl-telemetry report` on the captures of `tests/data/report`, whose
//! numbers are known (see its README): the summary, the charts as PNG, the
//! read-order axis of a capture without timestamps.

use crate::read_support::{cli, ok, run, stderr};
use crate::view_support::{colour_stats, decode_png, report_data, report_fixtures};
use serde_json::{json, Value};

const MIB: u64 = 1 << 20;

/// Runs `report` on `input`, writing into a fresh directory; returns the
/// directory, the page and stdout.
fn report(input: &std::path::Path, png: bool) -> (tempfile::TempDir, String, String) {
    let out = tempfile::tempdir().unwrap();
    let html = out.path().join("report.html");
    let mut cmd = cli();
    cmd.arg("report")
        .arg("--input")
        .arg(input)
        .arg("--output")
        .arg(&html);
    if png {
        cmd.arg("--png").arg(out.path().join("png"));
    }
    let stdout = ok(&run(&mut cmd));
    let page = std::fs::read_to_string(&html).unwrap();
    (out, page, stdout)
}

fn agent<'a>(data: &'a Value, name: &str) -> &'a Value {
    data["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == name)
        .unwrap_or_else(|| panic!("agent {name} in {data}"))
}

#[test]
fn a_timed_capture_gives_the_known_summary() {
    let (_dir, page, stdout) = report(&report_fixtures().join("timed.jsonl"), false);
    assert!(
        stdout.contains("(2 agents, 612 events, from a capture)"),
        "{stdout}"
    );
    let data = report_data(&page);
    assert_eq!(
        data["axis"],
        json!({"kind": "time", "origin_us": 1_764_000_000_000_000u64, "bin_us": 100_000, "span_us": 10_000_000})
    );

    let i = agent(&data, "initiator");
    assert_eq!(i["events"], 308);
    assert_eq!(i["span_us"], 10_000_000);
    assert_eq!(
        (i["tx_bytes"].clone(), i["rx_bytes"].clone()),
        (json!(50 * 4096), json!(50 * 8192))
    );
    assert_eq!(
        (i["tx_requests"].clone(), i["rx_requests"].clone()),
        (json!(50), json!(50))
    );
    assert_eq!(
        i["xfer_time_us"],
        json!({"count": 100, "p50": 50, "p90": 90, "p99": 99, "max": 100})
    );
    assert_eq!(i["errors"], 4);
    assert_eq!(
        i["errors_by_status"],
        json!([["not_found", 3], ["backend", 1]])
    );
    assert_eq!(i["memory_registered_bytes"], 16 * MIB);
    assert_eq!(i["events_lost"], 5);
    // 614 400 bytes in 10 s.
    assert_eq!(i["throughput_bytes_per_s"], 61_440.0);

    let t = agent(&data, "target");
    assert_eq!(t["events"], 304);
    assert_eq!(t["span_us"], 10_000_000);
    assert_eq!(
        t["xfer_time_us"],
        json!({"count": 100, "p50": 100, "p90": 180, "p99": 198, "max": 200})
    );
    assert_eq!(t["errors"], 0);
    assert_eq!(t["errors_by_status"], json!([]));

    let all = &data["total"];
    assert_eq!(all["events"], 612);
    assert_eq!(
        all["xfer_time_us"],
        json!({"count": 200, "p50": 67, "p90": 160, "p99": 196, "max": 200})
    );
    assert_eq!(all["errors"], 4);
    assert_eq!(all["memory_registered_bytes"], 32 * MIB);
    assert_eq!(all["events_lost"], 10);

    // The table shows the same.
    assert!(
        page.contains(">4 (not_found 3, backend 1)</td>"),
        "errors cell"
    );
    assert!(
        page.contains("title=\"204800 bytes\">205 kB</td>"),
        "tx bytes cell"
    );
    assert!(page.contains(">16 MiB</td>"), "memory cell");
    // The throughput chart has a line per agent that moved bytes; the
    // errors chart one per status.
    let series: Vec<&str> = data["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["label"].as_str().unwrap())
        .collect();
    assert_eq!(series, ["not_found", "backend"]);
    // Errors happen at 1.1 s, 2.1 s, 3.1 s (not_found) and 4.1 s (backend).
    let not_found = &data["errors"][0]["points"];
    let at = |s: f64| {
        not_found
            .as_array()
            .unwrap()
            .iter()
            .find(|p| (p[0].as_f64().unwrap() - s).abs() < 1e-9)
            .unwrap()[1]
            .as_f64()
            .unwrap()
    };
    assert_eq!(
        (at(1.15), at(2.15), at(3.15), at(1.05)),
        (1.0, 1.0, 1.0, 0.0)
    );
    assert_eq!(data["throughput"].as_array().unwrap().len(), 2);
    // Nothing fetched: no address, no link, no external resource (the SVG
    // namespace is a name, not a fetch).
    let offline = page.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    for needle in ["http:", "https:", "src=", "<link", "@import", "url("] {
        assert!(!offline.contains(needle), "{needle} in the page");
    }
}

#[test]
fn an_untimed_capture_is_charted_by_read_order_and_says_so() {
    let (_dir, page, stdout) = report(&report_fixtures().join("untimed.jsonl"), false);
    assert!(
        stdout.contains("(1 agents, 308 events, from a capture)"),
        "{stdout}"
    );
    assert!(stdout.contains("Note: Charted by read order"), "{stdout}");
    let data = report_data(&page);
    assert_eq!(
        data["axis"],
        json!({"kind": "read_order", "bin_events": 5, "longest": 308})
    );
    let a = agent(&data, "untimed");
    assert_eq!(a["span_us"], Value::Null);
    assert_eq!(a["throughput_bytes_per_s"], Value::Null);
    assert_eq!(
        a["xfer_time_us"],
        json!({"count": 100, "p50": 50, "p90": 90, "p99": 99, "max": 100})
    );
    assert_eq!(
        a["errors_by_status"],
        json!([["not_found", 3], ["backend", 1]])
    );
    assert_eq!(a["events_lost"], 5);
    assert!(page
        .contains("Charted by read order, not by time: the events of untimed carry no timestamps"));
    assert!(
        page.contains("events of the agent, in read order"),
        "the axis says so"
    );
}

#[test]
fn the_png_charts_decode_to_images_of_the_stated_size() {
    let (dir, _page, stdout) = report(&report_fixtures().join("timed.jsonl"), true);
    for name in ["throughput.png", "transfer-time.png", "errors.png"] {
        let path = dir.path().join("png").join(name);
        assert!(
            stdout.contains(&format!("Wrote {} (1000 x 420 pixels)", path.display())),
            "{stdout}"
        );
        let (w, h, pixels, channels) = decode_png(&path);
        assert_eq!((w, h), (1000, 420), "{name}");
        // Drawn, not blank: axes, text and lines in several colours.
        let (colours, inked) = colour_stats(&pixels, channels);
        assert!(colours > 20, "{name}: only {colours} colours");
        assert!(
            inked > 0.01,
            "{name}: only {:.3} of the pixels drawn",
            inked
        );
    }
}

#[test]
fn bad_inputs_are_refused_with_what_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let missing = run(cli()
        .args(["report", "--input", "/nonexistent/ring", "--output"])
        .arg(&html));
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("accepted: a ring file, a directory of ring files, a capture"),
        "{}",
        stderr(&missing)
    );

    let junk = dir.path().join("junk.jsonl");
    std::fs::write(&junk, "{\"not\": \"an event\"}\n{broken\n").unwrap();
    let out = run(cli()
        .arg("report")
        .arg("--input")
        .arg(&junk)
        .arg("--output")
        .arg(&html));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("no valid line (2 skipped; the first: capture line 1"),
        "{err}"
    );
    assert!(
        err.contains("capture line 1 skipped: missing field `name`"),
        "{err}"
    );
    assert!(!html.exists(), "no page for a failed report");

    let not_a_ring = dir.path().join("random");
    std::fs::write(&not_a_ring, [7u8; 100]).unwrap();
    let out = run(cli()
        .arg("report")
        .arg("--input")
        .arg(&not_a_ring)
        .arg("--output")
        .arg(&html));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("ring version"), "{err}");
    assert!(
        err.contains("a capture (`telemetry_reader --json` output) is accepted too"),
        "{err}"
    );
}
