//! `RingDirectory`: which files of a directory are rings, what changed between
//! scans, and what the confined rules refuse (FIFOs, links out of the
//! directory, a file under two names).

use std::ffi::OsStr;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

use nixl_telemetry::ring::{
    ReadMode, RefusalCause, RingDirectory, RingError, RingWriter, ScanRules,
};

fn ring(dir: &Path, agent: &str) {
    drop(RingWriter::create(dir, agent, 8).unwrap());
}

fn names(files: &[nixl_telemetry::ring::RingFile]) -> Vec<String> {
    files.iter().map(|f| f.agent()).collect()
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

#[test]
fn changes_between_scans() {
    let tmp = tempfile::tempdir().unwrap();
    ring(tmp.path(), "b");
    ring(tmp.path(), "a");
    std::fs::write(tmp.path().join(".nixl-ring.1.2.3.tmp"), b"in the making").unwrap();
    std::fs::create_dir(tmp.path().join("sub")).unwrap();
    let mut dir = RingDirectory::new(tmp.path(), ScanRules::Confined);

    let scan = dir.scan().unwrap();
    assert_eq!(names(&scan.files), ["a", "b"]);
    assert_eq!(names(&scan.appeared), ["a", "b"]);
    assert!(scan.removed.is_empty() && scan.replaced.is_empty() && scan.refused.is_empty());

    let scan = dir.scan().unwrap();
    assert!(scan.appeared.is_empty() && scan.removed.is_empty() && scan.replaced.is_empty());

    // A removed file, a new one, and one replaced at the same name.
    std::fs::remove_file(tmp.path().join("a")).unwrap();
    ring(tmp.path(), "c");
    let old_b = dir.files()[1].identity;
    let replacement = tmp.path().join("b.new");
    std::fs::copy(tmp.path().join("b"), &replacement).unwrap();
    std::fs::rename(&replacement, tmp.path().join("b")).unwrap();
    let scan = dir.scan().unwrap();
    assert_eq!(names(&scan.files), ["b", "c"]);
    assert_eq!(names(&scan.appeared), ["c"]);
    assert_eq!(names(&scan.removed), ["a"]);
    assert_eq!(scan.replaced.len(), 1);
    assert_eq!(scan.replaced[0].0.identity, old_b);
    assert_ne!(scan.replaced[0].1.identity, old_b);

    let reader = dir.open_reader(&scan.files[0], ReadMode::Consume).unwrap();
    assert_eq!(reader.capacity(), 8);
}

#[test]
fn confined_rules_refuse_what_is_no_ring_of_the_directory() {
    let outside = tempfile::tempdir().unwrap();
    ring(outside.path(), "elsewhere");
    let tmp = tempfile::tempdir().unwrap();
    ring(tmp.path(), "real");
    mkfifo(&tmp.path().join("fifo"));
    symlink(outside.path().join("elsewhere"), tmp.path().join("out")).unwrap();
    symlink("real", tmp.path().join("alias")).unwrap();
    symlink("nothing-here", tmp.path().join("dangling")).unwrap();
    std::fs::hard_link(tmp.path().join("real"), tmp.path().join("twin")).unwrap();
    std::fs::create_dir(tmp.path().join("sub")).unwrap();
    ring(&tmp.path().join("sub"), "inner");
    symlink("sub/inner", tmp.path().join("inside")).unwrap();

    let mut dir = RingDirectory::new(tmp.path(), ScanRules::Confined);
    let scan = dir.scan().unwrap();
    assert_eq!(names(&scan.files), ["inside", "real"]);
    assert!(scan.files[0].via_link);
    let mut refused: Vec<(String, RefusalCause)> = scan
        .refused
        .iter()
        .map(|r| (r.name.to_string_lossy().into_owned(), r.cause))
        .collect();
    refused.sort();
    assert_eq!(
        refused,
        [
            ("alias".to_owned(), RefusalCause::Duplicate),
            ("dangling".to_owned(), RefusalCause::Symlink),
            ("fifo".to_owned(), RefusalCause::NotRegularFile),
            ("out".to_owned(), RefusalCause::Symlink),
            ("twin".to_owned(), RefusalCause::Duplicate),
        ]
    );
    assert!(scan.refused.iter().all(|r| r.new));
    let out = scan.refused.iter().find(|r| r.name == "out").unwrap();
    assert!(
        out.message.contains("leading out of the directory"),
        "{}",
        out.message
    );
    assert!(out.message.contains(&*tmp.path().to_string_lossy()));

    // The link inside the directory opens, through the kernel's resolution.
    let reader = dir.open_reader(&scan.files[0], ReadMode::Peek).unwrap();
    assert_eq!(reader.capacity(), 8);

    // Refusals are news once.
    let again = dir.scan().unwrap();
    assert_eq!(again.refused.len(), 5);
    assert!(again.refused.iter().all(|r| !r.new));
    assert_eq!(dir.refusals().count(), 5);

    // A refused name that leaves the directory is forgotten.
    std::fs::remove_file(tmp.path().join("fifo")).unwrap();
    dir.scan().unwrap();
    assert_eq!(dir.refusals().count(), 4);
}

#[test]
fn the_name_kept_for_a_file_is_the_one_it_was_first_seen_by() {
    let tmp = tempfile::tempdir().unwrap();
    ring(tmp.path(), "b");
    let mut dir = RingDirectory::new(tmp.path(), ScanRules::Confined);
    dir.scan().unwrap();
    // A producer renames the ring aside while it is followed as "b": the
    // new name is the same file, read once, as "b".
    std::fs::hard_link(tmp.path().join("b"), tmp.path().join("a.stale")).unwrap();
    let scan = dir.scan().unwrap();
    assert_eq!(names(&scan.files), ["b"]);
    assert_eq!(scan.refused.len(), 1);
    assert_eq!(scan.refused[0].name, "a.stale");
    assert_eq!(scan.refused[0].cause, RefusalCause::Duplicate);
    // Once "b" is gone, the other name is the file's.
    std::fs::remove_file(tmp.path().join("b")).unwrap();
    let scan = dir.scan().unwrap();
    assert_eq!(names(&scan.files), ["a.stale"]);
    assert_eq!(names(&scan.appeared), ["a.stale"]);
    assert_eq!(names(&scan.removed), ["b"]);
}

#[test]
fn a_name_swapped_for_a_link_after_the_scan_is_not_followed() {
    let outside = tempfile::tempdir().unwrap();
    ring(outside.path(), "secret");
    let tmp = tempfile::tempdir().unwrap();
    ring(tmp.path(), "a");
    let mut dir = RingDirectory::new(tmp.path(), ScanRules::Confined);
    let scan = dir.scan().unwrap();
    // Held open, as a follower holds it: its inode cannot be reused.
    let _held = std::fs::File::open(tmp.path().join("a")).unwrap();
    std::fs::remove_file(tmp.path().join("a")).unwrap();
    symlink(outside.path().join("secret"), tmp.path().join("a")).unwrap();
    let Err(err) = dir.open_reader(&scan.files[0], ReadMode::Consume) else {
        panic!("opened");
    };
    assert!(matches!(err, RingError::Symlink { .. }), "{err}");
    assert_eq!(RefusalCause::of(&err), RefusalCause::Symlink);

    // Replaced by another regular file: not the file the scan saw.
    std::fs::remove_file(tmp.path().join("a")).unwrap();
    ring(tmp.path(), "a");
    let Err(err) = dir.open_reader(&scan.files[0], ReadMode::Consume) else {
        panic!("opened");
    };
    assert!(matches!(err, RingError::Changed { .. }), "{err}");
}

#[test]
fn readers_rules_follow_links_and_pass_over_other_files() {
    let outside = tempfile::tempdir().unwrap();
    ring(outside.path(), "elsewhere");
    let tmp = tempfile::tempdir().unwrap();
    ring(tmp.path(), "real");
    mkfifo(&tmp.path().join("fifo"));
    symlink(outside.path().join("elsewhere"), tmp.path().join("out")).unwrap();
    std::fs::hard_link(tmp.path().join("real"), tmp.path().join("twin")).unwrap();
    let mut dir = RingDirectory::new(tmp.path(), ScanRules::Readers);
    let scan = dir.scan().unwrap();
    assert_eq!(names(&scan.files), ["out", "real", "twin"]);
    assert!(scan.refused.is_empty());
    assert!(dir.open_reader(&scan.files[0], ReadMode::Peek).is_ok());
    // A refusal the caller records is kept while the name is a file, and
    // forgotten once the name leads elsewhere.
    assert!(dir.refuse(OsStr::new("real"), RefusalCause::TooShort, "short".into()));
    dir.scan().unwrap();
    assert!(!dir.refuse(OsStr::new("real"), RefusalCause::TooShort, "short".into()));
    std::fs::remove_file(tmp.path().join("real")).unwrap();
    dir.scan().unwrap();
    assert_eq!(dir.refusals().count(), 0);
}

#[test]
fn a_missing_directory_is_an_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let gone = tmp.path().join("gone");
    let err = RingDirectory::new(&gone, ScanRules::Confined)
        .scan()
        .unwrap_err();
    assert_eq!(err.source.kind(), std::io::ErrorKind::NotFound);
    assert!(err.to_string().contains("gone"));
}
