//! Names and agents with newlines or terminal escape codes cannot forge lines
//! or drive the terminal in text output (both readers write them as `\xHH`);
//! `--json` keeps them exact.

use crate::read_support::*;

#[test]
fn control_characters_are_escaped_in_text_and_exact_in_json() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rings");
    std::fs::create_dir(&dir).unwrap();
    let agent = "evil\u{1b}[2J\nAgent: x";
    RingImage::new(
        4,
        vec![
            Slot::new(1, 1, b"a\nEvent: forged\x07", 1),
            Slot::new(2, 1, "\u{9b}31m".as_bytes(), 2),
        ],
    )
    .write(&dir.join(agent));
    let want_text = "\n=== NIXL Telemetry Event ===\nAgent: evil\\x1b[2J\\x0aAgent: x\n";
    let want_names = ["Event: a\\x0aEvent: forged\\x07\n", "Event: \\x9b31m\n"];
    let rust = ok(&run(reader().args(["--once", "--peek"]).arg(&dir)));
    let python = ok(&run(python_reader()
        .args(["--once", "--peek", "--telemetry_path"])
        .arg(&dir)));
    assert_eq!(rust, python);
    assert!(rust.starts_with(want_text), "{rust}");
    for name in want_names {
        assert!(rust.contains(name), "{name:?} in {rust}");
    }
    assert!(!rust.contains('\u{1b}') && !rust.contains('\u{9b}') && !rust.contains('\u{7}'));
    assert_eq!(
        rust.matches("\nEvent: ").count(),
        2,
        "no forged line: {rust}"
    );

    let summary = ok(&run(reader()
        .args(["--once", "--peek", "--summary"])
        .arg(&dir)));
    let py_summary = ok(&run(python_reader()
        .args(["--once", "--peek", "--summary", "--telemetry_path"])
        .arg(&dir)));
    assert_eq!(summary, py_summary);
    assert!(
        summary.starts_with("Agent: evil\\x1b[2J\\x0aAgent: x\n"),
        "{summary}"
    );
    assert!(summary.contains("a\\x0aEvent: forged\\x07"), "{summary}");

    let json = ok(&run(reader()
        .args(["--once", "--peek", "--json"])
        .arg(&dir)));
    let first: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    assert_eq!(first["name"], "a\nEvent: forged\u{7}");
    assert_eq!(first["agent"], agent);
}
