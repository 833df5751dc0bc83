//! Both readers treat odd trailers alike: a magic with an unaccepted version or
//! size is ignored with the same warning, and loss totals are exact even when
//! they exceed 2^64.

use crate::read_support::*;

/// Runs both readers (`--once --peek`) on `bytes`; returns their stderr.
fn both_stderr(bytes: &[u8]) -> (String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("agent");
    std::fs::write(&path, bytes).unwrap();
    let rust = run(reader().args(["--once", "--peek"]).arg(&path));
    let python = run(python_reader()
        .args(["--once", "--peek", "--telemetry_path"])
        .arg(&path));
    assert_eq!(stdout(&rust), stdout(&python));
    assert!(rust.status.success(), "{}", stderr(&rust));
    assert!(python.status.success(), "{}", stderr(&python));
    (stderr(&rust), stderr(&python))
}

/// The lines of `err` after the program-name prefix of warnings.
fn warnings(err: &str, prog: &str) -> Vec<String> {
    let prefix = format!("{prog}: warning: ");
    err.lines()
        .filter_map(|l| l.strip_prefix(&prefix).map(str::to_owned))
        .collect()
}

#[test]
fn unaccepted_trailers_are_ignored_with_the_same_warning() {
    let image = RingImage {
        trailer: Some((5, 1, 2, true)),
        ..RingImage::new(4, vec![Slot::new(1, 1, b"agent_tx_bytes", 7)])
    };
    let good = image.bytes();
    let t = 40 + 56 * 4;
    for (what, version, size, want) in [
        ("version 0", 0u32, 64u32, "trailer version 0, size 64"),
        ("size 8", 1, 8, "trailer version 1, size 8"),
        (
            "size beyond the file",
            1,
            u32::MAX,
            "trailer version 1, size 4294967295",
        ),
    ] {
        let mut bytes = good.clone();
        bytes[t + 8..t + 12].copy_from_slice(&version.to_le_bytes());
        bytes[t + 12..t + 16].copy_from_slice(&size.to_le_bytes());
        let (rust, python) = both_stderr(&bytes);
        let (rw, pw) = (
            warnings(&rust, "telemetry_reader"),
            warnings(&python, "telemetry_reader.py"),
        );
        assert_eq!(rw, pw, "{what}");
        assert_eq!(rw.len(), 1, "{what}: {rust}");
        assert!(rw[0].contains("unrecognised trailer ignored"), "{what}");
        assert!(rw[0].contains(want), "{what}: {}", rw[0]);
        for err in [&rust, &python] {
            assert!(
                !err.contains("Events lost by the producer"),
                "{what}: {err}"
            );
        }
    }
    // The accepted trailer: no warning, the same totals.
    let (rust, python) = both_stderr(&good);
    assert!(warnings(&rust, "telemetry_reader").is_empty(), "{rust}");
    let total = |err: &str| {
        err.lines()
            .find(|l| l.starts_with("Events lost by the producer"))
            .map(str::to_owned)
    };
    assert_eq!(total(&rust), total(&python));
    assert_eq!(
        total(&rust).as_deref(),
        Some("Events lost by the producer: 3 (staging buffer full: 1, ring full: 2)")
    );
}

#[test]
fn loss_totals_beyond_two_to_the_64_are_exact() {
    let image = RingImage {
        trailer: Some((5, u64::MAX, u64::MAX, true)),
        ..RingImage::new(4, vec![])
    };
    let (rust, python) = both_stderr(&image.bytes());
    let want = format!(
        "Events lost by the producer: {} (staging buffer full: {}, ring full: {})",
        2 * u128::from(u64::MAX),
        u64::MAX,
        u64::MAX
    );
    for err in [&rust, &python] {
        assert!(err.lines().any(|l| l == want), "{want} not in:\n{err}");
        assert!(
            err.contains(&format!("{} lost", 2 * u128::from(u64::MAX))),
            "{err}"
        );
    }
}
