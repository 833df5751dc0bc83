//! The demo runs with nothing set up, prints its live table, and leaves rings
//! that both readers decode; every event the producers wrote was read back or is still in the rings.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use crate::read_support::*;

/// The number after `label` in `text` (up to the next non-digit).
fn number_after(text: &str, label: &str) -> u64 {
    let at = text
        .find(label)
        .unwrap_or_else(|| panic!("{label:?} not in {text}"))
        + label.len();
    text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

#[test]
fn two_seconds_of_demo_leave_rings_the_readers_decode() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rings");
    let out = run(cli()
        .args(["demo", "--no-export", "--duration", "2", "--dir"])
        .arg(&dir));
    let text = ok(&out);
    assert!(text.contains("2 agents (initiator, target)"), "{text}");
    assert!(
        text.contains(&format!("in {}, 65536 events per ring", dir.display())),
        "{text}"
    );
    // The live table is `top --plain`'s, consuming as `top --consume` does.
    let tables: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("nixl-telemetry top at ") && l.ends_with(", consuming"))
        .collect();
    assert!(!tables.is_empty(), "no live table:\n{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("initiator ") || l.starts_with("target ")),
        "no agent row:\n{text}"
    );
    assert!(text.contains("Done after"), "{text}");
    assert!(text.contains("failed on purpose"), "{text}");
    assert!(text.contains("--once"), "reader commands:\n{text}");
    assert!(text.contains("telemetry_reader"), "{text}");
    assert!(text.contains("python3 "), "{text}");

    // Both readers decode what is left, identically.
    let rust = run(reader().args(["--once", "--peek", "--json"]).arg(&dir));
    let json = ok(&rust);
    let py = run(python_reader()
        .args(["--once", "--peek", "--json", "--telemetry_path"])
        .arg(&dir));
    assert_eq!(ok(&py), json);
    let mut deregistered = Vec::new();
    for line in json.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["name"] == "agent_memory_deregistered" {
            assert_eq!(v["value"], 16u64 << 20);
            deregistered.push(v["agent"].as_str().unwrap().to_owned());
        }
    }
    deregistered.sort();
    assert_eq!(deregistered, ["initiator", "initiator", "target", "target"]);

    // Every event written was read back once: consumed live or left in the ring.
    let err = stderr(&rust);
    let left = number_after(&text, "last refresh; ");
    assert_eq!(
        left,
        number_after(&err, "Total events read: "),
        "{text}\n{err}"
    );
    let read_back_line = text
        .lines()
        .find(|l| l.starts_with("Events read back through the rings: "))
        .unwrap();
    let (mut written_total, mut read_back_total) = (0, 0);
    for agent in ["initiator", "target"] {
        let line = err
            .lines()
            .find(|l| l.starts_with(&format!("Agent {agent}: Producer:")))
            .unwrap();
        assert!(line.contains("closed cleanly"), "{line}");
        // (Losses would be legitimate on an overloaded machine; what was
        // written must still all be read back.)
        assert!(line.ends_with(" lost"), "{line}");
        let written = number_after(line, "cleanly, ");
        let read_back = number_after(read_back_line, &format!("{agent} "));
        assert!(written > 0);
        assert!(
            read_back > 0 && read_back <= written,
            "{agent}: {text}\n{err}"
        );
        written_total += written;
        read_back_total += read_back;
    }
    // What the table consumed and what it left are every event written.
    assert_eq!(read_back_total + left, written_total, "{text}\n{err}");
}

#[test]
fn with_nothing_set_the_rings_go_to_a_fresh_temporary_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(cli().env("TMPDIR", tmp.path()).args([
        "demo",
        "--duration",
        "1",
        "--threads",
        "1",
        "--max-size",
        "256KiB",
    ]));
    let text = ok(&out);
    let made: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(made.len(), 1, "{made:?}");
    let dir = &made[0];
    assert!(dir
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("nixl-telemetry-demo-"));
    assert!(dir.join("initiator").is_file() && dir.join("target").is_file());
    assert!(text.contains(&dir.display().to_string()), "{text}");
    ok(&run(reader().args(["--once", "--summary"]).arg(dir)));
}

#[test]
fn another_exporter_from_the_environment_gives_the_table_from_stats() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(cli()
        .env("TMPDIR", tmp.path())
        .env("NIXL_TELEMETRY_EXPORTER", "nop")
        .args([
            "demo",
            "--duration",
            "1",
            "--threads",
            "1",
            "--max-size",
            "64KiB",
        ]));
    let text = ok(&out);
    assert!(
        text.contains("Telemetry: nop (live table from the telemetry's own counters)"),
        "{text}"
    );
    assert!(text.contains("Done after"), "{text}");
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "no rings made"
    );
}

#[test]
fn ctrl_c_stops_the_demo_early_and_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = cli()
        .args([
            "demo",
            "--duration",
            "60",
            "--threads",
            "1",
            "--max-size",
            "1MiB",
            "--dir",
        ])
        .arg(tmp.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // Wait for the first table row.
    loop {
        let line = lines.next().expect("demo ended early").unwrap();
        if line.starts_with("nixl-telemetry top at ") {
            break;
        }
    }
    kill(child.id(), "INT");
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    let rest = rest.join("\n");
    assert!(rest.contains("Stopped after"), "{rest}");
    assert!(tmp.path().join("initiator").is_file());
}

#[test]
fn bad_settings_are_named() {
    for (args, want) in [
        (
            &["--agents", "1"][..],
            "agents = 1 is invalid; accepted: 2 to 64",
        ),
        (
            &["--max-size", "1KiB"],
            "max_size = 1024 is invalid; accepted: at least min_size (4096)",
        ),
        (&["--min-size", "lots"], "accepted: a positive byte count"),
        (
            &["--duration", "0"],
            "accepted: a positive number of seconds",
        ),
    ] {
        let out = run(cli().arg("demo").args(args));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(want), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn the_export_sidecar_serves_the_demo_and_exports_every_event() {
    let tmp = tempfile::tempdir().unwrap();
    let plugins = tmp.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    let built = nixl_telemetry_testsupport::build_rust_plugin("nixl-telemetry-exporter-prometheus");
    std::fs::copy(built, plugins.join("libtelemetry_exporter_prometheus.so")).unwrap();
    let dir = tmp.path().join("rings");
    let out = run(cli()
        .env("NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR", &plugins)
        .args(["demo", "--duration", "2", "--dir"])
        .arg(&dir));
    let text = ok(&out);
    let served = text
        .lines()
        .find(|l| l.starts_with("Export sidecar: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(served.contains("curl -s http://127.0.0.1:"), "{served}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("nixl-telemetry top at ") && l.ends_with(", peeking")),
        "a live table, peeking beside the sidecar:\n{text}"
    );
    // Every event each producer wrote reached the exporter through the sidecar.
    let exported = text
        .lines()
        .find(|l| l.starts_with("Events exported by the sidecar: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(exported.ends_with("(every event written)."), "{exported}");
    assert!(number_after(exported, "initiator ") > 0, "{exported}");
    assert!(text.contains("export --dir"), "{text}");
    // The rings were consumed to their end, as NIXL's reader consumes.
    let rust = run(reader().args(["--once", "--peek", "--json"]).arg(&dir));
    assert_eq!(ok(&rust), "");
}
