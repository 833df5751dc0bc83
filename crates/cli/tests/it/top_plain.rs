//! `nixl-telemetry top --plain` against rings filled with known events: the
//! rates, percentiles and error counts it prints, an agent whose ring
//! vanishes, and a ring another consumer drains as it is written (read all
//! the same). `top_beside_the_sidecar.rs` has the real sidecar as consumer.

use std::time::Duration;

use crate::read_support::{cli, kill, wait_until};
use crate::top_support::{number, start, tables, wait_tables};
use crate::view_support::{ring, transfer};
use nixl_telemetry::ring::{layout, ReadMode, RingReader, TrailerCounts};
use nixl_telemetry::{Category, Event};

/// `printed` is `amount / interval` to the printed precision.
fn assert_rate(printed: &str, amount: f64, interval: f64, what: &str) {
    let expected = amount / interval;
    let got = number(printed);
    // The interval is printed to the millisecond.
    let tolerance = expected * 0.0025 + 0.06;
    assert!(
        (got - expected).abs() <= tolerance,
        "{what}: printed {got}, expected {amount} / {interval} = {expected}"
    );
}

/// The quantile the model estimates for values all in the bucket
/// (`low`, `high`]: interpolated linearly, as Prometheus does.
fn bucket_quantile(low: f64, high: f64, q: f64) -> f64 {
    low + (high - low) * q
}

#[test]
fn known_events_give_the_expected_rates_percentiles_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut alpha = ring(dir.path(), "alpha", 1024, &layout::V1);
    let mut beta = ring(dir.path(), "beta", 1024, &layout::V4);
    // Registered before top starts: counted in the totals, not in any rate.
    alpha.push_batch(&[Event::new(
        1,
        Category::MEMORY,
        "agent_memory_registered",
        1 << 20,
    )]);
    let (mut child, lines) = start(dir.path(), &["--iterations", "8"]);
    wait_tables(&lines, 1);

    // One batch per ring: it lands within one poll, so in one interval.
    let mut a = Vec::new();
    for i in 0..100u64 {
        a.extend(transfer(1000 + i, true, 4096, 30));
    }
    a.push(Event::new(2000, Category::ERROR, "NIXL_ERR_NOT_FOUND", 1));
    a.push(Event::new(2000, Category::ERROR, "NIXL_ERR_NOT_FOUND", 1));
    let mut b = Vec::new();
    for i in 0..50u64 {
        b.extend(transfer(i, false, 8192, 300));
    }
    b.push(Event::new(0, Category::ERROR, "NIXL_ERR_BACKEND", 1));
    assert_eq!(alpha.push_batch(&a), 302);
    assert_eq!(beta.push_batch(&b), 151);

    // The first table in which the events show.
    wait_tables(&lines, 3);
    let all = tables(&lines);
    let with = all
        .iter()
        .position(|t| t.row("alpha")[2] != "0.0")
        .expect("a table with alpha's events");
    let t = &all[with];
    let row = t.row("alpha");
    assert_eq!(row[1], "1", "ring version");
    assert_rate(&row[2], 302.0, t.interval, "alpha events/s");
    assert_rate(&row[3], 409_600.0, t.interval, "alpha tx B/s");
    assert_eq!(row[4], "0.0", "alpha rx B/s");
    assert_rate(&row[5], 100.0, t.interval, "alpha requests/s");
    // 30 µs lies in NIXL's bucket (25, 50].
    assert!(
        (number(&row[6]) - bucket_quantile(25.0, 50.0, 0.5)).abs() < 0.06,
        "p50 {row:?}"
    );
    assert!(
        (number(&row[7]) - bucket_quantile(25.0, 50.0, 0.99)).abs() < 0.06,
        "p99 {row:?}"
    );
    assert_eq!(row[8], "2(not_found:2)");
    assert_eq!(row[9], "1048576", "memory registered");
    assert_eq!(row[10], "0", "lost (the trailer's count)");

    let row = t.row("beta");
    assert_eq!(row[1], "4");
    assert_rate(&row[2], 151.0, t.interval, "beta events/s");
    assert_eq!(row[3], "0.0");
    assert_rate(&row[4], 409_600.0, t.interval, "beta rx B/s");
    assert_rate(&row[5], 50.0, t.interval, "beta requests/s");
    // 300 µs lies in (250, 500].
    assert!(
        (number(&row[6]) - bucket_quantile(250.0, 500.0, 0.5)).abs() < 0.06,
        "p50 {row:?}"
    );
    assert!(
        (number(&row[7]) - bucket_quantile(250.0, 500.0, 0.99)).abs() < 0.06,
        "p99 {row:?}"
    );
    // A version-4 error type, counted under NIXL's status.
    assert_eq!(row[8], "1(backend:1)");

    // The next interval: nothing new, rates 0, percentiles unknown, the
    // totals stay.
    wait_tables(&lines, with + 2);
    let t = &tables(&lines)[with + 1];
    let row = t.row("alpha");
    assert_eq!(&row[2..8], ["0.0", "0.0", "0.0", "0.0", "-", "-"]);
    assert_eq!(row[8], "2(not_found:2)");
    assert!(child.wait().unwrap().success());
}

#[test]
fn an_agent_that_vanishes_is_kept_and_marked_gone() {
    let dir = tempfile::tempdir().unwrap();
    let mut alpha = ring(dir.path(), "alpha", 64, &layout::V1);
    alpha.push_batch(&[Event::new(1, Category::ERROR, "NIXL_ERR_BACKEND", 1)]);
    let _beta = ring(dir.path(), "beta", 64, &layout::V1);
    let (mut child, lines) = start(dir.path(), &[]);
    wait_tables(&lines, 1);
    let first = &tables(&lines)[0];
    assert!(first.row("alpha").last().unwrap() != "gone");
    std::fs::remove_file(dir.path().join("alpha")).unwrap();
    let shown = wait_until(Duration::from_secs(10), || {
        tables(&lines)
            .iter()
            .any(|t| t.row("alpha").last().is_some_and(|n| n == "gone"))
    });
    assert!(shown, "{:#?}", lines.lock().unwrap());
    let t = tables(&lines);
    let last = t.last().unwrap();
    let row = last.row("alpha");
    // Its totals stay; its rates are not made up.
    assert_eq!(row[2], "?");
    assert_eq!(row[8], "1(backend:1)");
    assert_eq!(
        last.row("beta").len(),
        11,
        "beta is still there, without a note"
    );
    // A new agent is added.
    let _gamma = ring(dir.path(), "gamma", 64, &layout::V3);
    assert!(wait_until(Duration::from_secs(10), || {
        tables(&lines)
            .last()
            .is_some_and(|t| t.rows.iter().any(|r| r[0] == "gamma"))
    }));
    kill(child.id(), "TERM");
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_ring_another_consumer_drains_is_read_all_the_same() {
    let dir = tempfile::tempdir().unwrap();
    // NIXL's default capacity: an idle ring is looked at every 100 ms, and
    // the writer below would go round a much smaller one before the first
    // look saw it busy (flagged, not misreported).
    let mut alpha = ring(dir.path(), "alpha", 4096, &layout::V1);
    let (mut child, lines) = start(dir.path(), &[]);
    wait_tables(&lines, 1);
    // Another consumer takes every batch right after it is written: 10
    // transfers (30 events) every 10 ms, on a fixed schedule.
    let mut consumer = RingReader::open(&dir.path().join("alpha"), ReadMode::Consume).unwrap();
    let mut scratch = Vec::new();
    // The table being printed now is not whole yet; the next one is the
    // first of the writes; the one after, the first whole interval of them.
    let first = tables(&lines).len() + 2;
    let begin = std::time::Instant::now();
    let mut ticks = 0u32;
    while tables(&lines).len() < first + 3 {
        for i in 0..10u64 {
            alpha.push_batch(&transfer(i, true, 1000, 20));
        }
        alpha.update_trailer(&TrailerCounts::default());
        while consumer.read_records(&mut scratch, 1024).unwrap() > 0 {}
        ticks += 1;
        let due = begin + Duration::from_millis(10) * ticks;
        std::thread::sleep(due.saturating_duration_since(std::time::Instant::now()));
        assert!(
            begin.elapsed() < Duration::from_secs(30),
            "{:#?}",
            lines.lock().unwrap()
        );
    }
    kill(child.id(), "TERM");
    assert!(child.wait().unwrap().success());
    // Every interval shows what was written (3000 events/s, 10 % for a
    // batch a look early or late), no note: top read what the consumer took.
    for t in &tables(&lines)[first..first + 3] {
        let row = t.row("alpha");
        assert_eq!(t.note("alpha"), "", "{row:?}");
        let per_s = number(&row[2]);
        assert!(
            (per_s / 3000.0 - 1.0).abs() <= 0.10,
            "{per_s} events/s: {row:?}"
        );
        assert_rate(&row[5], per_s / 3.0 * t.interval, t.interval, "requests/s");
    }
}

#[test]
fn consume_empties_a_ring_nothing_else_reads() {
    let dir = tempfile::tempdir().unwrap();
    let mut alpha = ring(dir.path(), "alpha", 8, &layout::V1);
    alpha.push_batch(&[Event::new(1, Category::CUSTOM, "x", 1); 7]);
    // Peeking: the ring stays full, and top says what would help.
    let (mut child, lines) = start(dir.path(), &[]);
    wait_tables(&lines, 1);
    let t = tables(&lines);
    assert!(
        t[0].row("alpha")
            .last()
            .unwrap()
            .contains("ring full, nothing consumes it (try --consume)"),
        "{t:?}"
    );
    kill(child.id(), "TERM");
    child.wait().unwrap();
    // Consuming: emptied.
    let (mut child, lines) = start(dir.path(), &["--consume"]);
    wait_tables(&lines, 1);
    assert_eq!(
        crate::read_support::positions(&dir.path().join("alpha")),
        (7, 7)
    );
    assert_eq!(
        tables(&lines)[0].rows[0].len(),
        11,
        "no note: {:?}",
        tables(&lines)
    );
    kill(child.id(), "TERM");
    child.wait().unwrap();
}

#[test]
fn bad_arguments_are_refused() {
    let out = crate::read_support::run(cli().args(["top", "--plain", "--interval", "0"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(crate::read_support::stderr(&out)
        .contains("accepted: a number of seconds from 0.1 to 3600"));
    let out = crate::read_support::run(cli().args(["top", "--plain"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        crate::read_support::stderr(&out).contains("set NIXL_TELEMETRY_DIR"),
        "{}",
        crate::read_support::stderr(&out)
    );
    let out = crate::read_support::run(cli().args(["top", "--plain", "/nonexistent/rings"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(crate::read_support::stderr(&out).contains("/nonexistent/rings"));
}

#[test]
fn a_directory_that_goes_is_reported_and_top_goes_on() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("rings");
    std::fs::create_dir(&dir).unwrap();
    let _alpha = ring(&dir, "alpha", 64, &layout::V1);
    let (mut child, lines) = start(&dir, &[]);
    wait_tables(&lines, 1);
    std::fs::remove_dir_all(&dir).unwrap();
    let reported = wait_until(Duration::from_secs(10), || {
        let text = lines.lock().unwrap().join("\n");
        text.contains(&format!("skipped {}: ", dir.display()))
            && text.contains("cannot list the directory")
    });
    assert!(reported, "{:#?}", lines.lock().unwrap());
    assert!(wait_until(Duration::from_secs(10), || {
        tables(&lines)
            .last()
            .is_some_and(|t| t.row("alpha").last().is_some_and(|n| n == "gone"))
    }));
    assert!(child.try_wait().unwrap().is_none(), "top goes on");
    kill(child.id(), "TERM");
    assert!(child.wait().unwrap().success());
}
