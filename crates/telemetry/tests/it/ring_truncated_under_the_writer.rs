//! Another process truncating a live ring file costs events, counted, and
//! never the host: writing into the mapping past the file's end would be a
//! SIGBUS.

use std::time::Duration;

use nixl_telemetry::{Category, Telemetry};

#[test]
fn a_ring_truncated_by_someone_else_is_not_written_any_more() {
    let dir = tempfile::tempdir().unwrap();
    let t = Telemetry::builder("agent")
        .ring_directory(dir.path())
        .run_interval(Duration::from_secs(3600))
        .unwrap()
        .build()
        .unwrap();
    t.record(Category::CUSTOM, "before", 1);
    t.flush();
    assert_eq!(t.stats().delivered, 1);

    std::fs::OpenOptions::new()
        .write(true)
        .open(dir.path().join("agent"))
        .unwrap()
        .set_len(0)
        .unwrap();
    for v in 0..5 {
        t.record(Category::CUSTOM, "after", v);
    }
    t.flush();
    let s = t.stats();
    assert_eq!(s.delivered, 1, "{s:?}");
    // The five, and the loss report the collector generated about them.
    assert_eq!(s.dropped.exporter_failed, 5 + s.generated, "{s:?}");
    assert_eq!(
        s.recorded + s.generated,
        s.delivered + s.dropped.total() + s.pending
    );
    // Dropping the telemetry writes the trailer's closed flag: not into a
    // file that is no longer there.
    drop(t);
    assert_eq!(
        std::fs::metadata(dir.path().join("agent")).unwrap().len(),
        0
    );
}
