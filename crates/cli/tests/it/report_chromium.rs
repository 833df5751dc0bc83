//! The report's page in a real browser: headless Chromium (Debian's
//! `chromium`) opens it offline, runs its script without an error or a
//! console message, and draws the charts (a screenshot is checked pixel by
//! pixel). Skipped, saying so, when Chromium is not installed;
//! `scripts/test-view.sh` installs it and runs this test.

use std::path::Path;
use std::process::Command;

use crate::read_support::{cli, ok, run};
use crate::view_support::{decode_png, report_fixtures, skip_without};

/// Chromium, headless and quiet: no network of its own, a fresh profile.
fn chromium(profile: &Path) -> Command {
    let mut cmd = Command::new("chromium");
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    cmd
}

/// The series colour of the charts (first line, histogram bars blended on white).
fn is_chart_blue(px: &[u8]) -> bool {
    let near = |c: [u8; 3]| px[..3].iter().zip(c).all(|(&a, b)| a.abs_diff(b) <= 24);
    near([55, 126, 184]) || near([105, 158, 201])
}

#[test]
fn the_page_renders_in_chromium_with_its_charts_and_no_script_error() {
    if skip_without(
        "chromium",
        "the_page_renders_in_chromium_with_its_charts_and_no_script_error",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    ok(&run(cli()
        .arg("report")
        .arg("--input")
        .arg(report_fixtures().join("timed.jsonl"))
        .arg("--output")
        .arg(&html)));
    let url = format!("file://{}", html.display());

    // The DOM after the scripts ran: the page's script marks it ready.
    let dom = run(chromium(&dir.path().join("profile-dom"))
        .arg("--dump-dom")
        .arg(&url));
    let dom_text = ok(&dom);
    let log = String::from_utf8_lossy(&dom.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert!(
        dom_text.contains("data-report-ready=\"yes\""),
        "the script did not run to its end"
    );
    assert_eq!(dom_text.matches("<svg").count(), 3, "three charts");
    assert!(dom_text.contains("<th title=\"sort by this column\">agent</th>"));

    // A screenshot: the charts are drawn.
    let shot = dir.path().join("shot.png");
    let out = run(chromium(&dir.path().join("profile-shot"))
        .arg("--window-size=1100,2400")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&url));
    ok(&out);
    let (w, h, pixels, channels) = decode_png(&shot);
    assert_eq!((w, h), (1100, 2400));
    let blue_rows: Vec<usize> = pixels
        .chunks_exact(channels * w as usize)
        .enumerate()
        .filter(|(_, row)| row.chunks_exact(channels).any(is_chart_blue))
        .map(|(y, _)| y)
        .collect();
    let blue = pixels
        .chunks_exact(channels)
        .filter(|px| is_chart_blue(px))
        .count();
    // The throughput lines and the histogram's bars: thousands of pixels,
    // spread over hundreds of rows.
    assert!(blue > 5_000, "only {blue} pixels of the charts' colour");
    assert!(
        blue_rows.len() > 200,
        "chart colour on only {} rows",
        blue_rows.len()
    );
    let white = pixels
        .chunks_exact(channels)
        .filter(|px| px[..3] == [255, 255, 255])
        .count();
    let share = white as f64 / (w * h) as f64;
    assert!(
        share < 0.97,
        "the screenshot is {:.1} % white",
        share * 100.0
    );
}
