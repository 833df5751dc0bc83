//! Rings written as NIXL's own writer writes them, for the readers' tests.
//!
//! NIXL's writers put no trailer after the slots and publish `write_pos`
//! after every event. A ring of this project's writer becomes one: its
//! trailer's magic zeroed (readers then see no trailer, and accept the
//! bytes after the slots, as NIXL's readers accept a larger file), and its
//! events pushed one at a time.

use std::os::unix::fs::FileExt;

use nixl_telemetry::ring::RingWriter;

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
