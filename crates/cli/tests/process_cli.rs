//! `nixl-telemetry process` end to end: JSON and Prometheus output against the
//! fixtures, state round trips, bad lines, registries, `--now`, and the state file's
//! atomic replacement.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/data/tao_processor/"
);

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(format!("{FIXTURES}{name}"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs `nixl-telemetry process` with `args`, feeding `stdin`.
fn process(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nixl-telemetry"))
        .arg("process")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nixl-telemetry starts");
    let mut input = child.stdin.take().unwrap();
    let text = stdin.to_owned();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(text.as_bytes());
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn corpus_lines() -> Vec<String> {
    read(&fixture("corpus.jsonl"))
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn json_output_matches_every_expected_file() {
    let corpus = fixture("corpus.jsonl");
    for (builders, file) in [
        (None, "expected_default.json"),
        (Some("legacy"), "expected_legacy.json"),
        (Some("comprehensive"), "expected_comprehensive.json"),
        (Some("time"), "expected_time.json"),
        (Some("labeled"), "expected_labeled.json"),
    ] {
        let mut args = vec!["--input", corpus.to_str().unwrap()];
        if let Some(b) = builders {
            args.extend(["--builders", b]);
        }
        let out = process(&args, "");
        assert!(out.status.success(), "{file}: {}", stderr(&out));
        assert_eq!(stdout(&out), read(&fixture(file)), "{file}");
    }
}

#[test]
fn standard_input_and_output_file_work_alike() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out.json");
    let out = process(
        &["--input", "-", "--output", output.to_str().unwrap()],
        &read(&fixture("corpus.jsonl")),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    assert_eq!(read(&output), read(&fixture("expected_default.json")));
}

/// `(family, kind)` of each `# TYPE` line.
type Types = Vec<(String, String)>;
/// `(series, value)` of each sample line.
type Samples = Vec<(String, i64)>;

/// Parses `name{labels} value` sample lines and `# TYPE` lines.
fn parse_exposition(text: &str) -> (Types, Samples) {
    let mut types = Vec::new();
    let mut samples = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (family, kind) = rest.rsplit_once(' ').unwrap();
            types.push((family.to_owned(), kind.to_owned()));
        } else if !line.starts_with('#') {
            let (key, value) = line.rsplit_once(' ').unwrap();
            samples.push((key.to_owned(), value.parse().unwrap()));
        }
    }
    (types, samples)
}

#[test]
fn prometheus_output_has_every_metric_under_its_type() {
    let out = process(
        &[
            "--input",
            fixture("corpus.jsonl").to_str().unwrap(),
            "--format",
            "prometheus",
        ],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let expected: serde_json::Value =
        serde_json::from_str(&read(&fixture("expected_default.json"))).unwrap();
    let expected = expected.as_object().unwrap();
    let (types, samples) = parse_exposition(&text);

    assert!(text.starts_with("# last_updated 2025-04-14T23:37:37.650921\n"));
    assert_eq!(
        samples.len(),
        expected.len() - 1,
        "every metric but last_updated"
    );
    for (key, value) in &samples {
        assert_eq!(expected[key].as_i64(), Some(*value), "{key}");
    }
    // Every family is typed exactly once, before its samples.
    let mut current = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            current = Some(rest.rsplit_once(' ').unwrap().0.to_owned());
        } else if !line.starts_with('#') {
            let family = line.split(['{', ' ']).next().unwrap();
            assert_eq!(current.as_deref(), Some(family), "{line}");
        }
    }
    let families: std::collections::HashSet<_> = types.iter().map(|t| &t.0).collect();
    assert_eq!(families.len(), types.len(), "no family typed twice");
    let kind = |f: &str| types.iter().find(|t| t.0 == f).map(|t| t.1.as_str());
    assert_eq!(kind("time_lapsed_today"), Some("gauge"));
    assert_eq!(kind("tao_job_total"), Some("counter"));
    assert_eq!(kind("tao_job_gpu_total"), Some("counter"));
    assert!(types
        .iter()
        .all(|t| t.1 == "counter" || t.0 == "time_lapsed_today"));

    promtool_parses(&text);
}

/// `promtool check metrics` must parse the exposition: exit 0, or 3 for lint
/// findings only (help texts and naming conventions of the reference's metric names).
fn promtool_parses(text: &str) {
    const LINTS: [&str; 4] = [
        "no help text",
        "counter metrics should have \"_total\" suffix",
        "metric names should not contain abbreviated units",
        "non-histogram and non-summary metrics should not have \"_sum\" suffix",
    ];
    let verdict = promtool::check_metrics(text);
    let unexpected: Vec<&String> = verdict
        .lines
        .iter()
        .filter(|l| !LINTS.iter().any(|lint| l.ends_with(lint)))
        .collect();
    assert!(unexpected.is_empty(), "promtool: {unexpected:#?}");
    assert!(
        matches!(verdict.code, Some(0 | 3)),
        "promtool: {:#?}",
        verdict.lines
    );
}

#[test]
fn state_round_trip_equals_one_run_over_the_concatenated_input() {
    let lines = corpus_lines();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let state_arg = state.to_str().unwrap();
    // Three runs over consecutive parts, each starting from the state the last left.
    for part in [&lines[..1], &lines[1..137], &lines[137..]] {
        let out = process(
            &[
                "--input",
                "-",
                "--state",
                state_arg,
                "--output",
                "/dev/null",
            ],
            &(part.join("\n") + "\n"),
        );
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let single = process(&["--input", "-"], &(lines.join("\n") + "\n"));
    assert_eq!(read(&state), stdout(&single));
    assert_eq!(read(&state), read(&fixture("expected_default.json")));
    // Only the state file is left in its directory: no temporary files.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["state.json"]);
}

#[test]
fn bad_lines_are_reported_and_the_rest_applied() {
    let lines = corpus_lines();
    let bad = [
        r#"{"now": "2025-01-13T00:00:06", "record": {"gpu": "A100"}}"#,
        r#"{"now": "2025-01-13T00:00:06", "record": {"time_lapsed": "12"}}"#,
        r#"{"now": "2025-01-13T00:00:06", "record": {"network": ["a"]}}"#,
        r#"[1, 2]"#,
        r#"{"now": "not a time", "record": {}}"#,
        r#"{"action": "#,
    ];
    // Good lines with a bad one after each of the first six; blank lines are skipped.
    let mut input = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        input.push(line.clone());
        if i < bad.len() {
            input.push(bad[i].to_owned());
        }
        if i == 10 {
            input.push("   ".to_owned());
        }
    }
    let out = process(&["--input", "-"], &(input.join("\n") + "\n"));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(stdout(&out), read(&fixture("expected_default.json")));
    let err = stderr(&out);
    for (line, needle) in [
        (2, "key `gpu`"),
        (4, "key `time_lapsed`"),
        (6, "key `network`"),
        (8, "JSON object"),
        (10, "key `now`"),
        (12, "not valid JSON"),
    ] {
        let reported = err
            .lines()
            .find(|l| l.contains(&format!("line {line}: ")))
            .unwrap_or_else(|| panic!("line {line} not reported in {err}"));
        assert!(reported.contains(needle), "{reported}");
    }
    assert!(
        err.contains("300 records applied, 6 lines rejected"),
        "{err}"
    );
}

#[test]
fn a_registry_file_adds_a_label_without_code() {
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("attributes.toml");
    std::fs::write(
        &registry,
        "include_defaults = true\n\n[[attributes]]\nname = \"framework\"\ntype = \"string\"\ndefault = \"pytorch\"\nmetric_order = 7\n",
    )
    .unwrap();
    let input = concat!(
        r#"{"now": "2025-01-13T10:00:00", "record": {"action": "train", "network": "dino", "framework": "JAX"}}"#,
        "\n",
        r#"{"now": "2025-01-13T11:00:00", "record": {"action": "train", "network": "dino"}}"#,
        "\n"
    );
    let out = process(
        &[
            "--input",
            "-",
            "--attributes",
            registry.to_str().unwrap(),
            "--builders",
            "comprehensive,labeled",
        ],
        input,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let metrics: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let keys: Vec<&String> = metrics.as_object().unwrap().keys().collect();
    for wanted in [
        "network_dino_action_train_version_unknown_status_fail_framework_jax_gpu_1_UNKNOWN_1",
        "network_dino_action_train_version_unknown_status_fail_framework_pytorch_gpu_1_UNKNOWN_1",
    ] {
        assert_eq!(metrics[wanted], 1, "{wanted} in {keys:?}");
    }
    let labeled: Vec<_> = keys
        .iter()
        .filter(|k| k.starts_with("tao_job_total{"))
        .collect();
    assert_eq!(labeled.len(), 2, "{keys:?}");
    assert!(labeled.iter().any(|k| k.contains("tao_framework=\"jax\"")));
    assert!(labeled
        .iter()
        .any(|k| k.contains("tao_framework=\"pytorch\"")));

    // An invalid registry stops the command before anything is read.
    std::fs::write(
        &registry,
        "[[attributes]]\nname = \"x\"\ntype = \"float\"\ndefault = 1\n",
    )
    .unwrap();
    let out = process(
        &["--input", "-", "--attributes", registry.to_str().unwrap()],
        input,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unknown type `float`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn now_option_dates_raw_records_and_builder_lists_are_honoured() {
    let input = "{\"action\": \"train\", \"time_lapsed\": 5}\n{\"action\": \"train\", \"time_lapsed\": 7}\n";
    let out = process(
        &[
            "--input",
            "-",
            "--now",
            "2025-03-01 12:30",
            "--builders",
            "time",
        ],
        input,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "{\n \"last_updated\": \"2025-03-01T12:30:00\",\n \"time_lapsed_today\": 12\n}\n"
    );
    let out = process(
        &["--input", "-", "--now", "2025-03-01", "--builders", ""],
        input,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "{\n \"last_updated\": \"2025-03-01T00:00:00\"\n}\n"
    );
    let out = process(&["--input", "-", "--builders", "legacy,bogus"], input);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown builder `bogus`"));
    let out = process(&["--input", "-", "--now", "yesterday"], input);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn an_unreadable_state_is_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    std::fs::write(&state, "{\"a\": 1, \"b\": \"x\"}").unwrap();
    let out = process(
        &["--input", "-", "--state", state.to_str().unwrap()],
        "{\"action\": \"train\"}\n",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("`b`"), "{}", stderr(&out));
    assert_eq!(read(&state), "{\"a\": 1, \"b\": \"x\"}");
}
