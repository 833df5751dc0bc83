//! Following one ring file across its replacement: a producer that starts
//! again under the same agent name with another ring size cannot adopt the
//! file it finds and puts a new one in its place; both readers finish the old
//! file and go on with the new one.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::read_support::*;
use nixl_telemetry::{Category, Telemetry};

fn telemetry(dir: &Path) -> Telemetry {
    telemetry_of_size(dir, 4096)
}

fn telemetry_of_size(dir: &Path, buffer_size: usize) -> Telemetry {
    Telemetry::builder("agent")
        .buffer_size(buffer_size)
        .unwrap()
        .ring_directory(dir)
        .run_interval(Duration::from_millis(10))
        .unwrap()
        .build()
        .unwrap()
}

fn follows_the_new_file(mut cmd: Command) {
    let tmp = tempfile::tempdir().unwrap();
    let first = telemetry(tmp.path());
    first.record(Category::CUSTOM, "old", 1);
    first.record(Category::CUSTOM, "old", 2);
    first.flush();

    cmd.arg("--json")
        .arg("--telemetry_path")
        .arg(tmp.path().join("agent"));
    let (child, lines) = follow(cmd);
    assert!(
        wait_until(Duration::from_secs(10), || count(&lines, r#""old""#) == 2),
        "first events not read: {:?}",
        lines.lock().unwrap()
    );

    // The producer records once more and goes; a new one takes the name.
    first.record(Category::CUSTOM, "old", 3);
    drop(first);
    // Another ring size: the old file cannot be continued, so it is replaced.
    let second = telemetry_of_size(tmp.path(), 8192);
    for v in 10..13 {
        second.record(Category::CUSTOM, "new", v);
    }
    second.flush();
    assert!(
        wait_until(Duration::from_secs(10), || count(&lines, r#""new""#) == 3),
        "the new file's events were not read: {:?}",
        lines.lock().unwrap()
    );

    kill(child.id(), "INT");
    let (code, err) = finish(child);
    assert_eq!(code, Some(0), "{err}");
    let got = lines.lock().unwrap().clone();
    let values: Vec<&str> = got
        .iter()
        .map(|l| l.rsplit("\"value\":").next().unwrap().trim_end_matches('}'))
        .collect();
    assert_eq!(values, ["1", "2", "3", "10", "11", "12"], "{got:?}");
    for want in [
        "ring file replaced; finished reading the old one, now reading the new one \
         (version 1, capacity 8192 events",
        "Total events read: 6",
    ] {
        assert!(err.contains(want), "{want:?} missing from:\n{err}");
    }
    drop(second);
}

#[test]
fn the_rust_reader_follows_a_replaced_file() {
    follows_the_new_file(reader());
}

#[test]
fn the_python_reader_follows_a_replaced_file() {
    follows_the_new_file(python_reader());
}

/// A followed file replaced by a FIFO, then by a symbolic link to /dev/zero:
/// no ring either time, so the reader warns once for each and goes on.
fn warns_about_a_replacement_that_is_no_ring(mut cmd: Command, prog: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let t = telemetry(tmp.path());
    t.record(Category::CUSTOM, "before", 1);
    t.flush();
    drop(t);
    let path = tmp.path().join("agent");
    cmd.arg("--json").arg("--telemetry_path").arg(&path);
    let (child, lines) = follow(cmd);
    assert!(
        wait_until(Duration::from_secs(10), || count(&lines, r#""before""#)
            == 1),
        "first event not read: {:?}",
        lines.lock().unwrap()
    );
    let fifo = tmp.path().join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo");
    std::fs::rename(&fifo, &path).unwrap();
    std::thread::sleep(Duration::from_millis(400));
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    std::fs::rename(&link, &path).unwrap();
    std::thread::sleep(Duration::from_millis(400));
    kill(child.id(), "INT");
    let (code, err) = finish(child);
    assert_eq!(code, Some(0), "{err}");
    let warning = format!(
        "{prog}: warning: cannot follow the replaced ring file: {}: not a regular file; \
         expected a NIXL ring file (version 1 to 4)",
        path.display()
    );
    // One warning per reason: the FIFO and the device give the same one.
    assert_eq!(err.matches(&warning).count(), 1, "{warning:?} in:\n{err}");
    assert!(err.contains("Total events read: 1"), "{err}");
}

#[test]
fn the_rust_reader_warns_about_a_replacement_that_is_no_ring() {
    warns_about_a_replacement_that_is_no_ring(reader(), "telemetry_reader");
}

#[test]
fn the_python_reader_warns_about_a_replacement_that_is_no_ring() {
    warns_about_a_replacement_that_is_no_ring(python_reader(), "telemetry_reader.py");
}
