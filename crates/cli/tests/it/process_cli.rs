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
    nixl_telemetry_testsupport::promtool::assert_processor_output_accepted(text);
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
    // Only the state file and its lock file are left in its directory: no temporary
    // files.
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, [".state.json.lock", "state.json"]);
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

/// Runs `nixl-telemetry process` with `args` and no standard input, waiting at most
/// `limit`: a run that blocks is killed and reported.
fn process_within(args: &[&str], limit: std::time::Duration) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_nixl-telemetry"))
        .arg("process")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nixl-telemetry starts");
    let id = child.id();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    match finished.recv_timeout(limit) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &id.to_string()]).status();
            panic!("nixl-telemetry process {args:?} did not finish within {limit:?}");
        }
    }
}

fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

/// Four runs at once on one state file, 1,000 records each: the state file is locked
/// for a whole run, so they take turns and the result counts all 4,000 records (runs
/// that each loaded the old state and wrote their own result lost updates).
#[test]
fn concurrent_runs_on_one_state_serialise_without_lost_updates() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let input = dir.path().join("records.jsonl");
    std::fs::write(
        &input,
        "{\"action\": \"train\", \"success\": true, \"time_lapsed\": 2}\n".repeat(1000),
    )
    .unwrap();
    let runs: Vec<_> = (0..4)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_nixl-telemetry"))
                .args([
                    "process",
                    "--now",
                    "2025-01-13T10:00:00",
                    "--output",
                    "/dev/null",
                ])
                .arg("--input")
                .arg(&input)
                .arg("--state")
                .arg(&state)
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for run in runs {
        let out = run.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let metrics: serde_json::Value = serde_json::from_str(&read(&state)).unwrap();
    assert_eq!(metrics["total_action_train_pass"], 4000, "{metrics}");
    assert_eq!(metrics["time_lapsed_today"], 8000, "{metrics}");
}

/// The state is replaced with the old file's mode; a symbolic link is followed (its
/// target gets the new state, the link stays); a link to nothing is refused; the
/// temporaries a killed run left behind are removed.
#[test]
fn the_state_rewrite_keeps_mode_follows_links_and_removes_stale_temporaries() {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let dir = tempfile::tempdir().unwrap();
    let record = "{\"action\": \"train\"}\n";
    for mode in [0o644, 0o664, 0o444, 0o600, 0o640] {
        let state = dir.path().join(format!("state-{mode:o}.json"));
        std::fs::write(&state, "{}\n").unwrap();
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(mode)).unwrap();
        let out = process(
            &["--input", "-", "--state", state.to_str().unwrap()],
            record,
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let meta = std::fs::metadata(&state).unwrap();
        assert_eq!(meta.mode() & 0o7777, mode, "mode {mode:o} kept");
        assert!(read(&state).contains("\"total_action_train_fail\": 1"));
    }

    // A link is followed: the target holds the new state, the link is still a link.
    let target_dir = dir.path().join("real");
    std::fs::create_dir(&target_dir).unwrap();
    let target = target_dir.join("metrics.json");
    std::fs::write(&target, "{\"kept\": 5}\n").unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for _ in 0..2 {
        let out = process(&["--input", "-", "--state", link.to_str().unwrap()], record);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let text = read(&target);
    assert!(text.contains("\"kept\": 5"), "{text}");
    assert!(text.contains("\"total_action_train_fail\": 2"), "{text}");

    // A link to nothing is refused, and nothing is created.
    let dangling = dir.path().join("dangling.json");
    std::os::unix::fs::symlink(dir.path().join("absent/x.json"), &dangling).unwrap();
    let out = process(
        &["--input", "-", "--state", dangling.to_str().unwrap()],
        record,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("which does not exist"),
        "{}",
        stderr(&out)
    );

    // Temporaries of a killed run (the names this and earlier versions used) go; other
    // files stay.
    let state = dir.path().join("state.json");
    std::fs::write(&state, "{}\n").unwrap();
    let stale = [".state.json.a1B2c3.tmp", ".state.json.00ff00ff00ff00ff.tmp"];
    for name in stale {
        std::fs::write(dir.path().join(name), "{\"half\": ").unwrap();
    }
    let unrelated = [
        ".state.json.tmp",
        ".other.json.a1B2c3.tmp",
        "state.json.a1B2c3.tmp",
    ];
    for name in unrelated {
        std::fs::write(dir.path().join(name), "keep").unwrap();
    }
    let out = process(
        &["--input", "-", "--state", state.to_str().unwrap()],
        record,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("removed 2 temporary file(s)"),
        "{}",
        stderr(&out)
    );
    for name in stale {
        assert!(!dir.path().join(name).exists(), "{name} removed");
    }
    for name in unrelated {
        assert_eq!(read(&dir.path().join(name)), "keep", "{name} kept");
    }
}

/// The effective user is root (CI runs as root; the owner test needs it).
fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata("/proc/self").unwrap().uid() == 0
}

/// A state file owned by someone else keeps its owner and group when rewritten (by
/// root: giving a file away needs the privilege). Fails loudly when not run as root.
#[test]
fn the_state_rewrite_keeps_owner_and_group() {
    use std::os::unix::fs::MetadataExt as _;
    assert!(
        running_as_root(),
        "this test gives a file another owner and needs root (CI runs as root); run it as \
         root, or skip it with `cargo test -- --skip the_state_rewrite_keeps_owner_and_group`"
    );
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    std::fs::write(&state, "{}\n").unwrap();
    std::os::unix::fs::chown(&state, Some(4321), Some(4322)).unwrap();
    let out = process(
        &["--input", "-", "--state", state.to_str().unwrap()],
        "{\"action\": \"train\"}\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let meta = std::fs::metadata(&state).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (4321, 4322));
    assert!(read(&state).contains("\"total_action_train_fail\": 1"));
}

/// Endless or blocking inputs are refused at once with a message naming what the file
/// is, and lines or records beyond the documented limits are rejected without
/// holding them in memory.
#[test]
fn devices_fifos_and_oversized_inputs_are_refused_with_clear_errors() {
    let quick = std::time::Duration::from_secs(30);
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let fifo = fifo.to_str().unwrap();
    let zero_link = dir.path().join("zero.json");
    std::os::unix::fs::symlink("/dev/zero", &zero_link).unwrap();
    let zero_link = zero_link.to_str().unwrap();
    let records = dir.path().join("records.jsonl");
    std::fs::write(&records, "{\"action\": \"train\"}\n").unwrap();
    let records = records.to_str().unwrap();

    for (args, says) in [
        (
            vec!["--input", records, "--state", "/dev/zero"],
            "is a character device, not a regular file",
        ),
        (
            vec!["--input", records, "--state", zero_link],
            "is a character device, not a regular file",
        ),
        (
            vec!["--input", records, "--state", fifo],
            "is a FIFO, not a regular file",
        ),
        (
            vec!["--input", records, "--state", "/tmp"],
            "is a directory, not a regular file",
        ),
        (
            vec!["--input", records, "--attributes", "/dev/zero"],
            "character device, not a regular file",
        ),
        (
            vec!["--input", records, "--attributes", fifo],
            "is a FIFO, not a regular file",
        ),
        (
            vec!["--input", "/dev/zero"],
            "--input /dev/zero is a character device",
        ),
    ] {
        let out = process_within(&args, quick);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }

    // A state file over the limit is refused, not read whole.
    let big = dir.path().join("big.json");
    let file = std::fs::File::create(&big).unwrap();
    file.set_len(256 * 1024 * 1024 + 1).unwrap();
    let out = process_within(
        &["--input", records, "--state", big.to_str().unwrap()],
        quick,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("larger than 268435456 bytes"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::metadata(&big).unwrap().len(),
        256 * 1024 * 1024 + 1
    );
}

/// One 100 MB record between two good ones, under a 200 MB address-space limit: the
/// long line is rejected (it is over the 16 MiB line limit) without being held, and
/// the lines around it are applied.
#[test]
fn a_100_mb_record_is_rejected_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("huge.jsonl");
    {
        use std::io::Write as _;
        let mut out = std::io::BufWriter::new(std::fs::File::create(&input).unwrap());
        writeln!(out, "{{\"action\": \"train\"}}").unwrap();
        write!(out, "{{\"action\": \"train\", \"gpu\": [").unwrap();
        let name = "\"NVIDIA A100-SXM4-80GB\",";
        for _ in 0..(100_000_000 / name.len()) {
            out.write_all(name.as_bytes()).unwrap();
        }
        writeln!(out, "\"last\"]}}").unwrap();
        writeln!(out, "{{\"action\": \"train\"}}").unwrap();
    }
    let bin = env!("CARGO_BIN_EXE_nixl-telemetry");
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 200000 && exec \"$0\" process --input \"$1\" --now 2025-01-13T10:00:00")
        .arg(bin)
        .arg(&input)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("line 2: the line is 100000"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("longer than the limit of 16777216 bytes"));
    assert!(
        stdout(&out).contains("\"total_action_train_fail\": 2"),
        "{}",
        stdout(&out)
    );
}

/// `kill -9` of `process --state` at random moments: the state file is always the
/// complete old state or the complete new one, and the next run cleans up after the
/// killed one. Every other kill lands anywhere in a run, the others while the new
/// state is being written (once its temporary file has appeared). 30 kills here; `NIXL_TELEMETRY_KILL_RUNS=100` runs more
/// (the seed is printed, `NIXL_TELEMETRY_KILL_SEED` repeats a sequence).
#[test]
fn kill_9_at_random_moments_leaves_the_old_or_the_new_state() {
    use nixl_telemetry_processor::{parse_input_line, Context, MetricProcessor, Metrics};

    let runs: usize = std::env::var("NIXL_TELEMETRY_KILL_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let seed: u64 = std::env::var("NIXL_TELEMETRY_KILL_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos() as u64
        });
    eprintln!("kill -9 test: {runs} runs, NIXL_TELEMETRY_KILL_SEED={seed}");
    let mut random = seed | 1;
    let mut next = move || {
        random ^= random << 13;
        random ^= random >> 7;
        random ^= random << 17;
        random
    };

    // Enough distinct keys that writing the state takes a while: the kills land while
    // reading the input, while processing, and while the state is written.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("records.jsonl");
    // Long network names make the state large (about 5 MB), so that writing it
    // takes a noticeable part of a run.
    let padding = "x".repeat(300);
    let text: String = (0..4_000)
        .map(|i| {
            format!(
                "{{\"now\": \"2025-01-13T10:00:00\", \"record\": {{\"action\": \"a{}\", \"network\": \"n{i}{padding}\", \"gpu\": [\"g{i}\"]}}}}\n",
                i % 50
            )
        })
        .collect();
    std::fs::write(&input, &text).unwrap();
    let state = dir.path().join("state.json");

    // What one more complete run makes of a state.
    let apply = |before: &str| -> String {
        let mut metrics = if before.is_empty() {
            Metrics::new()
        } else {
            Metrics::from_json_str(before).unwrap()
        };
        let mut processor = MetricProcessor::new();
        for line in text.lines() {
            let line = parse_input_line(line).unwrap();
            processor
                .process(&mut metrics, &line.record, &Context::at(line.now.unwrap()))
                .unwrap();
        }
        metrics.to_json_string()
    };

    // Two uninterrupted runs: the first makes the state, the second (which loads it,
    // as every later run does) measures how long a run takes.
    let mut started = std::time::Instant::now();
    for _ in 0..2 {
        started = std::time::Instant::now();
        let out = process(
            &[
                "--input",
                input.to_str().unwrap(),
                "--state",
                state.to_str().unwrap(),
                "--output",
                "/dev/null",
            ],
            "",
        );
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let run_time = started.elapsed().as_micros() as u64;
    eprintln!("kill -9 test: an uninterrupted run takes {run_time} µs");
    let (mut completed, mut killed, mut mid_write) = (0, 0, 0);
    let mut seen = std::collections::HashSet::new();
    let mut before = read(&state);
    let mut after_one_more = apply(&before);
    for round in 0..runs {
        let mut child = Command::new(env!("CARGO_BIN_EXE_nixl-telemetry"))
            .args(["process", "--output", "/dev/null", "--input"])
            .arg(&input)
            .arg("--state")
            .arg(&state)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        if round % 2 == 0 {
            // Anywhere in the run: reading, processing or writing.
            std::thread::sleep(std::time::Duration::from_micros(next() % (run_time + 1)));
        } else {
            // While the new state is written: as soon as its temporary file appears,
            // then up to 2 ms later.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
            while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
                let writing = std::fs::read_dir(dir.path()).unwrap().any(|e| {
                    let name = e.unwrap().file_name().to_string_lossy().into_owned();
                    name.ends_with(".tmp") && !seen.contains(&name)
                });
                if writing {
                    std::thread::sleep(std::time::Duration::from_micros(next() % 2000));
                    break;
                }
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
        }
        let _ = child.kill(); // SIGKILL
        let status = child.wait().unwrap();
        // A temporary not seen before: this run was killed while writing the new state.
        let mut temporaries = 0;
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            if name.ends_with(".tmp") && seen.insert(name) {
                temporaries += 1;
            }
        }
        if temporaries > 0 {
            mid_write += 1;
        }
        let now = read(&state);
        if now == before {
            killed += 1;
        } else {
            assert_eq!(
                now, after_one_more,
                "round {round} (seed {seed}): the state is neither the old one nor the new one"
            );
            completed += 1;
            before = now;
            after_one_more = apply(&before);
        }
        let _ = status;
    }
    eprintln!(
        "kill -9 test: {killed} runs left the old state ({mid_write} of them killed while writing the new one), {completed} the new one"
    );
    // The next run removes whatever temporaries the killed runs left.
    let out = process(
        &[
            "--input",
            "-",
            "--state",
            state.to_str().unwrap(),
            "--output",
            "/dev/null",
        ],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    assert!(
        killed > 0,
        "no run was interrupted: the kills came too late"
    );
    assert!(
        mid_write > 0,
        "no run was killed while writing the new state (seed {seed})"
    );
}
