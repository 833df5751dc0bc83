//! The Rust and the Python reader write byte-identical stdout on the same input:
//! rings written by the collector (one file and directory mode; text, JSON,
//! summary; filters) and rings built byte by byte with awkward content.

use std::path::Path;

use crate::read_support::*;
use nixl_telemetry::{Category, Direction, Telemetry};

const AGENTS: [&str; 4] = ["initiator", "target", "zeta-ünï", "q\"uote"];

/// One ring per agent, written by the collector, with every kind of event.
fn collector_rings(dir: &Path) {
    for (n, agent) in AGENTS.iter().enumerate() {
        let t = Telemetry::builder(agent)
            .ring_directory(dir)
            .buffer_size(4096)
            .unwrap()
            .build()
            .unwrap();
        t.memory_registered(64 << 20);
        t.connection_event("memcpy_connect", 1);
        for i in 0..(150 + 40 * n as u64) {
            t.post_time(i % 7);
            let dir = if i % 3 == 0 {
                Direction::Read
            } else {
                Direction::Write
            };
            t.transfer_completed(100 + (i * 37) % 1000, dir, 4096 * (i + 1));
        }
        t.error("NIXL_ERR_NOT_FOUND");
        t.error("NIXL_ERR_INVALID_PARAM");
        t.backend_event("ucx_rdma_writes", 3);
        t.record(Category(42), "custom_unknown", 5);
        t.record(Category(-1), "negative_category", 6);
        t.record(Category::CUSTOM, "naïve \"q\" \\ \t tab", 1);
        t.record(Category::CUSTOM, "\u{1}ctl\u{7f}\u{1f}", u64::MAX);
        t.record(Category::CUSTOM, &"é".repeat(20), 2);
        t.record(Category::SYSTEM, "x", 0);
        t.memory_deregistered(64 << 20);
        t.flush();
    }
}

/// Runs both readers with `args` on separate copies of `files` (so consuming
/// runs see the same input) and asserts equal stdout and exit codes. `target`
/// is the file name inside the copy to read, or "" for the directory.
fn assert_same(files: &Path, target: &str, args: &[&str]) -> String {
    assert_same_in_zone(files, target, args, "UTC")
}

/// [`assert_same`] with both readers in time zone `tz` (the value of `TZ`).
fn assert_same_in_zone(files: &Path, target: &str, args: &[&str], tz: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    // The same directory name for both, so agent names and paths agree.
    let (py_dir, rs_dir) = (tmp.path().join("p/rings"), tmp.path().join("r/rings"));
    copy_dir(files, &py_dir);
    copy_dir(files, &rs_dir);
    let py = run(python_reader()
        .env("TZ", tz)
        .args(args)
        .arg("--telemetry_path")
        .arg(py_dir.join(target)));
    let rs = run(reader().env("TZ", tz).args(args).arg(rs_dir.join(target)));
    assert_eq!(
        py.status.code(),
        rs.status.code(),
        "exit codes for {args:?} {target}; python stderr:\n{}\nrust stderr:\n{}",
        stderr(&py),
        stderr(&rs)
    );
    assert!(
        py.stdout == rs.stdout,
        "stdout differs for {args:?} {target}\n--- python:\n{}\n--- rust:\n{}",
        String::from_utf8_lossy(&py.stdout),
        String::from_utf8_lossy(&rs.stdout)
    );
    // Consuming runs leave both copies in the same state.
    if !args.contains(&"--peek") {
        for entry in std::fs::read_dir(&py_dir).unwrap() {
            let name = entry.unwrap().file_name();
            assert_eq!(
                positions(&py_dir.join(&name)),
                positions(&rs_dir.join(&name)),
                "{name:?}"
            );
        }
    }
    String::from_utf8(rs.stdout).unwrap()
}

#[test]
fn collector_rings_read_the_same_in_every_mode() {
    let rings = tempfile::tempdir().unwrap();
    collector_rings(rings.path());
    let modes: [&[&str]; 6] = [
        &["--once"],
        &["--once", "--json"],
        &["--once", "--summary"],
        &["--once", "--peek", "--json"],
        &[
            "--once",
            "--category",
            "PERFORMANCE",
            "--category",
            "custom",
        ],
        &[
            "--once",
            "--json",
            "--name",
            "agent_*_bytes",
            "--name",
            "NIXL_ERR_?????_*",
        ],
    ];
    for args in modes {
        let dir_out = assert_same(rings.path(), "", args);
        let file_out = assert_same(rings.path(), "zeta-ünï", args);
        assert!(!file_out.is_empty(), "{args:?}");
        if args.contains(&"--summary") {
            for agent in AGENTS {
                assert!(dir_out.contains(&format!("Agent: {agent}\n")), "{dir_out}");
            }
        } else {
            assert!(dir_out.len() > file_out.len(), "{args:?}");
        }
    }
    // A few things the output must hold, beyond being equal.
    let json = assert_same(rings.path(), "", &["--once", "--json"]);
    assert!(
        json.contains(r#""name":"naïve \"q\" \\ \t tab""#),
        "escapes"
    );
    assert!(json.contains(r#""name":"\u0001ctl"#), "control characters");
    assert!(json.contains(r#","agent":"q\"uote"}"#), "agent escaped");
    assert!(json.contains(r#""category":"UNKNOWN_CATEGORY_-1","category_id":-1"#));
    assert!(
        json.contains(&format!(r#""name":"{}""#, "é".repeat(15))),
        "cut at a character boundary"
    );
    let text = assert_same(rings.path(), "", &["--once"]);
    assert!(text.starts_with("\n=== NIXL Telemetry Event ===\nAgent: initiator\nTimestamp: "));
    assert!(text.contains("Category: UNKNOWN_CATEGORY_42\nEvent: custom_unknown\nValue: 5\n"));
}

/// Awkward but readable content, built byte by byte.
fn awkward_ring(dir: &Path) {
    let mut invalid = [0u8; 32];
    invalid[..7].copy_from_slice(b"bad\xff\xfe\xc3x");
    let mut no_nul = [b'n'; 32];
    no_nul[..4].copy_from_slice(b"full");
    let mut after_nul = [0u8; 32];
    after_nul[..5].copy_from_slice(b"short");
    after_nul[10..14].copy_from_slice(b"junk");
    let slots = vec![
        Slot::new(0, 0, b"epoch", 0),
        Slot::new(1_749_737_007_999_999, 5, b"agent_xfer_time", 17),
        Slot::raw(1_749_737_008_000_000, 7, invalid, 1),
        Slot::raw(1_749_737_008_000_001, 7, no_nul, 2),
        Slot::raw(1_749_737_008_000_002, 7, after_nul, 3),
        Slot::new(253_402_300_799_999_999, 6, b"last_second_of_9999", 4),
        Slot::new(253_402_300_800_000_000, 6, b"year_10000", 5),
        Slot::new(u64::MAX, i32::MIN, b"max", u64::MAX),
        Slot::new(1_749_737_009_000_000, i32::MAX, "µs_ünïcødé".as_bytes(), 9),
        Slot::new(1_749_737_009_000_001, 5, b"agent_xfer_time", 3),
        Slot::new(1_749_737_009_000_002, 5, b"agent_xfer_time", 1000),
    ];
    let mut image = RingImage::new(16, slots);
    // Start in the middle so the events wrap around the end of the slot array.
    image.read_pos = 9;
    image.write_pos = (9 + image.slots.len() as u64) % 16;
    image.trailer = Some((100, 3, 4, false));
    image.write(&dir.join("odd"));
    RingImage::new(4, vec![]).write(&dir.join("empty"));
}

#[test]
fn awkward_rings_read_the_same() {
    let rings = tempfile::tempdir().unwrap();
    awkward_ring(rings.path());
    for args in [
        &["--once"][..],
        &["--once", "--json"],
        &["--once", "--summary"],
        &["--once", "--peek", "--category", "CUSTOM"],
    ] {
        assert_same(rings.path(), "odd", args);
        assert_same(rings.path(), "", args);
    }
    let text = assert_same(rings.path(), "odd", &["--once"]);
    assert!(text.contains("Timestamp: 1970-01-01 00:00:00.000000\n"));
    assert!(
        text.contains("Timestamp: 2025-06-12 14:03:27.999999\n"),
        "no rounding up"
    );
    assert!(text.contains("Timestamp: 9999-12-31 23:59:59.999999\n"));
    assert!(text.contains("Timestamp: @253402300800.000000\n"));
    assert!(text.contains("Timestamp: @18446744073709.551615\n"));
    assert!(text.contains("Event: bad\u{fffd}\u{fffd}\u{fffd}x\n"));
    assert!(text.contains("Event: short\n"));
    assert!(
        !text.contains("Event: full"),
        "a name without NUL is skipped"
    );
    assert!(text.contains("Category: UNKNOWN_CATEGORY_-2147483648\n"));
    let summary = assert_same(rings.path(), "", &["--once", "--summary"]);
    assert!(summary.contains("Agent: empty\n(no events)\n"), "{summary}");
    assert!(summary.contains("PERFORMANCE"), "{summary}");

    // Both warn about the malformed slot on stderr and count it.
    let copy = tempfile::tempdir().unwrap();
    copy_dir(rings.path(), copy.path());
    let out = run(reader()
        .args(["--once", "--peek"])
        .arg(copy.path().join("odd")));
    let err = stderr(&out);
    assert!(out.status.success());
    assert!(
        err.contains("slot 12: event name has no NUL terminator"),
        "{err}"
    );
    assert!(err.contains("Malformed slots skipped: 1\n"), "{err}");
    assert!(err.contains("Total events read: 10\n"), "{err}");
    assert!(
        err.contains("Events lost by the producer: 7 (staging buffer full: 3, ring full: 4)"),
        "{err}"
    );
}

#[test]
fn dates_follow_the_c_library_in_any_time_zone() {
    // Both readers take local time from the C library, as NIXL's reader does:
    // zones with leap seconds, half-hour offsets, and TZ values the C library
    // does not know (which it reads as UTC) all print the same.
    let rings = tempfile::tempdir().unwrap();
    awkward_ring(rings.path());
    for tz in [
        "right/UTC",
        "Asia/Kolkata",
        "America/St_Johns",
        "Europe/Berlin",
        "garbage/zone",
        "XXX24",
        ":UTC",
    ] {
        assert_same_in_zone(rings.path(), "odd", &["--once", "--peek"], tz);
    }
    // The leap seconds are really applied (27 of them by 2025).
    let text = assert_same_in_zone(rings.path(), "odd", &["--once", "--peek"], "right/UTC");
    assert!(
        text.contains("Timestamp: 2025-06-12 14:03:00.999999\n"),
        "{text}"
    );
}
