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

#[test]
fn racing_creators_of_a_stale_ring_leave_exactly_one_owner() {
    // flock locks belong to an open file, so threads that each open the file
    // contend like separate processes. Whoever replaces the stale file owns the
    // ring; every other creator must be refused, never handed a file that is
    // no longer under the ring's name.
    for round in 0..200 {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("agent"), vec![0xAB; 100]).unwrap();
        let barrier = std::sync::Barrier::new(8);
        let writers: Vec<RingWriter> = std::thread::scope(|s| {
            let racers: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        RingWriter::create(dir.path(), "agent", 8).ok()
                    })
                })
                .collect();
            racers
                .into_iter()
                .filter_map(|r| r.join().unwrap())
                .collect()
        });
        assert_eq!(writers.len(), 1, "round {round}: {} owners", writers.len());
        // And the owner's file is the one under the name.
        let mut w = writers.into_iter().next().unwrap();
        w.push_batch(&[Event::new(1, Category::CUSTOM, "mine", 7)]);
        let mut r = RingReader::open(&dir.path().join("agent"), ReadMode::Peek).unwrap();
        let mut out = Vec::new();
        assert_eq!(r.read_batch(&mut out, 10).unwrap(), 1, "round {round}");
    }
}

#[test]
fn long_agent_names_get_a_ring() {
    let dir = tempfile::tempdir().unwrap();
    let name = "a".repeat(255);
    let w = RingWriter::create(dir.path(), &name, 8).unwrap();
    assert_eq!(w.path(), dir.path().join(&name));
}
