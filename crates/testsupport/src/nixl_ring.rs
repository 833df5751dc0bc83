//! Rings written as NIXL's own writer writes them, for the readers' tests.
//!
//! NIXL's writers put no trailer after the slots and publish `write_pos`
//! after every event. A ring of this project's writer becomes one: its
//! trailer's magic zeroed (readers then see no trailer, and accept the
//! bytes after the slots, as NIXL's readers accept a larger file), and its
//! events pushed one at a time.

use std::os::unix::fs::FileExt;

use nixl_telemetry::ring::layout::RingLayout;
use nixl_telemetry::ring::RingWriter;
use nixl_telemetry::Event;

/// Hides the trailer of `writer`'s ring from readers opened from now on.
/// The writer goes on writing (its counters land in bytes no reader reads).
pub fn hide_trailer(writer: &RingWriter) {
    let at = writer
        .layout()
        .data_size(writer.capacity())
        .expect("the writer's layout and capacity fit");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(writer.path())
        .unwrap_or_else(|e| panic!("{}: {e}", writer.path().display()));
    file.write_all_at(&[0u8; 8], at)
        .unwrap_or_else(|e| panic!("{}: {e}", writer.path().display()));
}

/// The bytes of a ring as NIXL's writer leaves them: the header and
/// `capacity` slots of `layout` holding `events`, and no trailer. Written
/// to a file, it is a ring a NIXL agent of that release could have made
/// (or made over another one in place).
pub fn ring_bytes(layout: &'static RingLayout, capacity: usize, events: &[Event]) -> Vec<u8> {
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let mut writer = RingWriter::create_with_layout(scratch.path(), "r", capacity, layout)
        .unwrap_or_else(|e| panic!("a {} ring of {capacity} slots: {e}", layout.name));
    assert_eq!(
        writer.push(events).written,
        events.len(),
        "{} events fit a ring of {capacity} slots",
        events.len()
    );
    let path = writer.path().to_owned();
    drop(writer);
    let mut bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let size = layout
        .data_size(capacity as u64)
        .expect("the layout and capacity fit");
    bytes.truncate(size as usize);
    bytes
}
