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
fn a_lock_held_for_a_moment_after_its_producer_left_is_waited_for() {
    // A child forked by another thread shares the producer's open file, and
    // with it the lock, until it execs: a ring whose producer has just gone
    // stays locked for that moment. Here a second open file holds the lock
    // for 5 ms after the producer is dropped.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent");
    let mut first = RingWriter::create(dir.path(), "agent", 8).unwrap();
    first.push_batch(&[Event::new(1, Category::CUSTOM, "kept", 7)]);
    drop(first);
    let holder = std::fs::File::open(&path).unwrap();
    holder.try_lock().unwrap();
    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(5));
        drop(holder);
    });
    let second = RingWriter::create(dir.path(), "agent", 8);
    release.join().unwrap();
    second.expect("the lock was released within the wait");
    // Adopted, not replaced: the first producer's unread event is still there.
    let mut r = RingReader::open(&path, ReadMode::Peek).unwrap();
    let mut out = Vec::new();
    assert_eq!(r.read_batch(&mut out, 10).unwrap(), 1);
    assert_eq!(out[0].value, 7);
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

fn events(values: std::ops::Range<u64>) -> Vec<Event> {
    values
        .map(|v| Event::new(v, Category::CUSTOM, "e", v))
        .collect()
}

fn peek_all(path: &std::path::Path) -> (Vec<u64>, nixl_telemetry::ring::TrailerInfo) {
    let mut r = RingReader::open(path, ReadMode::Peek).unwrap();
    let mut out = Vec::new();
    r.read_batch(&mut out, usize::MAX).unwrap();
    (out.iter().map(|e| e.value).collect(), r.trailer().unwrap())
}

fn names_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn a_restarted_producer_adopts_the_unread_events_of_the_same_layout() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = RingWriter::create(dir.path(), "agent", 16).unwrap();
    assert_eq!(first.push_batch(&events(0..10)), 10);
    first.update_trailer(&nixl_telemetry::ring::TrailerCounts {
        dropped_staging_full: 3,
    });
    // A consumer takes the first 4; 6 stay unread when the producer goes.
    let mut consumer = RingReader::open(&dir.path().join("agent"), ReadMode::Consume).unwrap();
    let mut out = Vec::new();
    assert_eq!(consumer.read_batch(&mut out, 4).unwrap(), 4);
    drop(first);
    let mut second = RingWriter::create(dir.path(), "agent", 16).unwrap();
    // Room left: 15 usable slots, 6 taken.
    assert_eq!(second.push_batch(&events(10..20)), 9);
    second.update_trailer(&nixl_telemetry::ring::TrailerCounts {
        dropped_staging_full: 1,
    });
    let (values, trailer) = peek_all(&dir.path().join("agent"));
    assert_eq!(values, (4..19).collect::<Vec<_>>());
    assert_eq!(trailer.producer_pid, std::process::id());
    assert!(!trailer.closed && !trailer.stale, "{trailer:?}");
    // The trailer goes on counting over the file's life.
    assert_eq!(trailer.events_written, 19);
    assert_eq!(trailer.dropped_ring_full, 1);
    assert_eq!(trailer.dropped_staging_full, 4);
    // The old consumer goes on reading the same file.
    out.clear();
    consumer.read_batch(&mut out, usize::MAX).unwrap();
    assert_eq!(out.len(), 15);
    assert_eq!(names_in(dir.path()), vec!["agent"]);
}

#[test]
fn a_stale_ring_of_another_capacity_is_moved_aside_and_marked_stale() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = RingWriter::create(dir.path(), "agent", 16).unwrap();
    first.push_batch(&events(0..10));
    drop(first);
    let mut second = RingWriter::create(dir.path(), "agent", 32).unwrap();
    second.push_batch(&events(100..102));
    let names = names_in(dir.path());
    assert_eq!(names.len(), 2, "{names:?}");
    assert_eq!(names[0], "agent");
    assert!(names[1].starts_with("agent.stale-"), "{names:?}");
    let (old, trailer) = peek_all(&dir.path().join(&names[1]));
    assert_eq!(old, (0..10).collect::<Vec<_>>());
    assert!(trailer.stale, "{trailer:?}");
    assert!(trailer.state().starts_with("stale"), "{}", trailer.state());
    let (new, trailer) = peek_all(&dir.path().join("agent"));
    assert_eq!(new, vec![100, 101]);
    assert!(!trailer.stale);
}

#[test]
fn a_stale_ring_of_another_layout_is_moved_aside() {
    use nixl_telemetry::ring::layout;
    let dir = tempfile::tempdir().unwrap();
    let mut first = RingWriter::create_with_layout(dir.path(), "agent", 16, &layout::V4).unwrap();
    assert_eq!(
        first.push_batch(&[Event::new(1, Category::TRANSFER, "agent_tx_bytes", 7)]),
        1
    );
    drop(first);
    RingWriter::create(dir.path(), "agent", 16).unwrap();
    let names = names_in(dir.path());
    assert!(
        names.len() == 2 && names[1].starts_with("agent.stale-"),
        "{names:?}"
    );
}

#[test]
fn an_empty_stale_ring_of_another_layout_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = RingWriter::create(dir.path(), "agent", 16).unwrap();
    first.push_batch(&events(0..3));
    let mut consumer = RingReader::open(&dir.path().join("agent"), ReadMode::Consume).unwrap();
    consumer.read_batch(&mut Vec::new(), usize::MAX).unwrap();
    drop(first);
    RingWriter::create(dir.path(), "agent", 64).unwrap();
    assert_eq!(names_in(dir.path()), vec!["agent"]);
    assert_eq!(
        RingReader::open(&dir.path().join("agent"), ReadMode::Peek)
            .unwrap()
            .capacity(),
        64
    );
}

#[test]
fn a_long_agent_name_is_shortened_when_moved_aside() {
    let dir = tempfile::tempdir().unwrap();
    let agent = "é".repeat(127); // 254 bytes
    let mut first = RingWriter::create(dir.path(), &agent, 16).unwrap();
    first.push_batch(&events(0..2));
    drop(first);
    RingWriter::create(dir.path(), &agent, 8).unwrap();
    let names = names_in(dir.path());
    assert_eq!(names.len(), 2, "{names:?}");
    let aside = names.iter().find(|n| n.contains(".stale-")).unwrap();
    assert!(aside.len() <= 255);
    assert_eq!(peek_all(&dir.path().join(aside)).0, vec![0, 1]);
}
