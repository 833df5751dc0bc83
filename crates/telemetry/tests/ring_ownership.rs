//! Creating a ring never follows a symlink, replaces a stale file and refuses a live one.

use nixl_telemetry::ring::{ReadMode, RingError, RingReader, RingWriter};
use nixl_telemetry::{Category, Event};

#[test]
fn a_symlink_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("victim");
    std::fs::write(&target, b"precious").unwrap();
    std::os::unix::fs::symlink(&target, dir.path().join("agent")).unwrap();
    let err = RingWriter::create(dir.path(), "agent", 8).err().unwrap();
    assert!(matches!(err, RingError::Symlink { .. }), "{err}");
    assert!(err.to_string().contains("symbolic link"));
    assert_eq!(std::fs::read(&target).unwrap(), b"precious");
}

#[test]
fn a_stale_file_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("agent"), vec![0xAB; 100]).unwrap();
    let mut w = RingWriter::create(dir.path(), "agent", 8).unwrap();
    w.push_batch(&[Event::new(1, Category::CUSTOM, "x", 1)]);
    let mut r = RingReader::open(&dir.path().join("agent"), ReadMode::Peek).unwrap();
    let mut out = Vec::new();
    assert_eq!(r.read_batch(&mut out, 10).unwrap(), 1);
}

#[test]
fn a_file_held_by_a_live_producer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let first = RingWriter::create(dir.path(), "agent", 8).unwrap();
    let err = RingWriter::create(dir.path(), "agent", 8).err().unwrap();
    match &err {
        RingError::InUse { pid, .. } => assert_eq!(*pid, Some(std::process::id())),
        other => panic!("unexpected {other}"),
    }
    assert!(err.to_string().contains("in use"), "{err}");
    drop(first);
    // Once the producer is gone, its file is stale and may be replaced.
    RingWriter::create(dir.path(), "agent", 8).unwrap();
    // No temporary files are left behind.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("agent")]);
}

#[test]
fn a_directory_in_the_way_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("agent")).unwrap();
    let err = RingWriter::create(dir.path(), "agent", 8).err().unwrap();
    assert!(matches!(err, RingError::NotRegularFile { .. }), "{err}");
}
