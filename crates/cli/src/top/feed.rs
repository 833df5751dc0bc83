//! One agent's ring as `top` reads it: peeking (never writing to the file)
//! or consuming, in every layout, and noticing what it cannot see.
//!
//! A peeking reader misses events in two ways, and each is counted:
//!
//! * **drained**: a consumer (NIXL's reader, `nixl-telemetry export`) took
//!   events out of the ring before this reader saw them: its `read_pos`
//!   moved past this reader's position ([`RingReader::overtaken`]);
//! * **wrapped**: the ring went round more than once between two reads, so
//!   the positions (slot indices, modulo the capacity) cannot tell; the
//!   trailer of this project's rings counts every event written, and the
//!   events it counts beyond those read and drained are the ones lapped.
//!
//! A ring that nothing consumes fills up: its producer then drops what it
//! records (NIXL's writers, uncounted before 1.4). That is reported as
//! [`Feed::is_full`], for `--consume` to help.

use nixl_telemetry::ring::{FileIdentity, ReadMode, RingReader, TrailerInfo};
use nixl_telemetry::Event;

use crate::export::convert::SlotConverter;
use crate::read::describe_ring_error;
use crate::ring_files::{Candidate, RingSources};

/// Events read from one ring in one poll at most (the rest wait for the next).
const MAX_PER_POLL: usize = 1 << 16;
/// Events read at a time.
const BATCH: usize = 8192;

/// What a feed could not see, since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Missed {
    /// Events a consumer took before this reader saw them.
    pub drained: u64,
    /// Events the writer lapped between two reads (rings with a trailer).
    pub wrapped: u64,
}

impl Missed {
    /// Both together.
    pub fn total(&self) -> u64 {
        self.drained.saturating_add(self.wrapped)
    }

    /// What was missed since `earlier`.
    pub fn since(&self, earlier: &Missed) -> Missed {
        Missed {
            drained: self.drained.saturating_sub(earlier.drained),
            wrapped: self.wrapped.saturating_sub(earlier.wrapped),
        }
    }
}

/// One ring file being read.
pub struct Feed {
    identity: FileIdentity,
    reader: RingReader,
    /// Slots as events, as the export sidecar makes them.
    converter: SlotConverter,
    slots: Vec<u8>,
    /// Events read (well-formed or not).
    read: u64,
    /// The trailer's `events_written` less the events unread at open: what
    /// `read` plus what was missed must reach.
    written_base: Option<u64>,
    missed: Missed,
    full: bool,
}

impl Feed {
    /// Opens `file` of `sources` peeking or consuming; the message names the
    /// file and the problem.
    pub fn open(file: &Candidate, sources: &RingSources, mode: ReadMode) -> Result<Feed, String> {
        let reader = sources
            .open(file, mode)
            .map_err(|e| describe_ring_error(&e, mode))?;
        let header = reader.header().map_err(|e| describe_ring_error(&e, mode))?;
        let unread = header.write_pos.wrapping_sub(header.read_pos) & (reader.capacity() - 1);
        let written_base = reader
            .trailer()
            .map(|t| t.events_written.saturating_sub(unread));
        Ok(Feed {
            identity: file.file.identity,
            converter: SlotConverter::new(reader.layout()),
            reader,
            slots: Vec::new(),
            read: 0,
            written_base,
            missed: Missed::default(),
            full: false,
        })
    }

    /// The file's device and inode.
    pub fn identity(&self) -> FileIdentity {
        self.identity
    }

    /// The ring's version.
    pub fn version(&self) -> i32 {
        self.reader.layout().version
    }

    /// The trailer, when the ring has one.
    pub fn trailer(&self) -> Option<TrailerInfo> {
        self.reader.trailer()
    }

    /// What this reader could not see, since it was opened.
    pub fn missed(&self) -> Missed {
        self.missed
    }

    /// Whether the ring was full at the last poll: nothing consumes it and
    /// its producer drops what it records.
    pub fn is_full(&self) -> bool {
        self.full
    }

    /// Appends the events the ring holds now (at most [`MAX_PER_POLL`]) to
    /// `out`, as the export sidecar hands them to its exporter
    /// ([`SlotConverter`]); those of versions without timestamps are stamped
    /// `now_us`. Slots whose name has no terminator are skipped.
    pub fn poll(&mut self, now_us: u64, out: &mut Vec<Event>) -> Result<(), String> {
        let mode = self.reader.mode();
        let describe = |e| describe_ring_error(&e, mode);
        // The producer's count first: it is stored after the events it
        // counts, so every event it counts now is in the ring, or was
        // drained or lapped, by the time the slots are read below.
        let written = self.reader.trailer().map(|t| t.events_written);
        let mut budget = MAX_PER_POLL;
        while budget > 0 {
            let n = self
                .reader
                .read_slot_bytes(&mut self.slots, budget.min(BATCH))
                .map_err(describe)?;
            if n == 0 {
                break;
            }
            budget -= n;
            self.read += n as u64;
            self.converter.convert(&self.slots, now_us, out);
        }
        // What is left for the next poll (when the budget ran out); looking
        // also notes a consumer that overtook this reader meanwhile.
        let pending = self.reader.pending().map_err(describe)?;
        self.missed.drained = self.reader.overtaken();
        let header = self.reader.header().map_err(describe)?;
        let capacity = self.reader.capacity();
        self.full = header.write_pos.wrapping_sub(header.read_pos) & (capacity - 1) == capacity - 1;
        if let (Some(base), Some(written)) = (self.written_base, written) {
            let written = written.saturating_sub(base);
            let accounted = self.read + self.missed.drained + pending;
            self.missed.wrapped = self.missed.wrapped.max(written.saturating_sub(accounted));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nixl_telemetry::ring::{layout, RingWriter, ScanRules, TrailerCounts};
    use nixl_telemetry::Category;
    use std::path::Path;

    /// Opens `<dir>/<agent>` as top does.
    fn open_feed(dir: &Path, agent: &str, mode: ReadMode) -> Feed {
        let mut sources = RingSources::new(&[dir.join(agent)], ScanRules::Readers).unwrap();
        let scan = sources.scan();
        Feed::open(&scan.files[0], &sources, mode).unwrap()
    }

    fn events(n: usize) -> Vec<Event> {
        (0..n)
            .map(|i| Event::new(i as u64, Category::TRANSFER, "agent_tx_bytes", 1))
            .collect()
    }

    fn drain(path: &Path) {
        let mut consumer = RingReader::open(path, ReadMode::Consume).unwrap();
        let mut out = Vec::new();
        while consumer.read_records(&mut out, 1 << 10).unwrap() > 0 {}
    }

    #[test]
    fn peeking_sees_everything_while_nothing_else_reads() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RingWriter::create(dir.path(), "a", 64).unwrap();
        w.push_batch(&events(10));
        let mut feed = open_feed(dir.path(), "a", ReadMode::Peek);
        let mut out = Vec::new();
        feed.poll(0, &mut out).unwrap();
        assert_eq!(out.len(), 10);
        w.push_batch(&events(5));
        w.update_trailer(&TrailerCounts::default());
        feed.poll(0, &mut out).unwrap();
        assert_eq!(out.len(), 15);
        assert_eq!(feed.missed(), Missed::default());
        assert!(!feed.is_full());
    }

    #[test]
    fn a_consumer_draining_between_polls_is_counted() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RingWriter::create(dir.path(), "a", 64).unwrap();
        let mut feed = open_feed(dir.path(), "a", ReadMode::Peek);
        let mut out = Vec::new();
        w.push_batch(&events(20));
        drain(w.path());
        w.push_batch(&events(3));
        w.update_trailer(&TrailerCounts::default());
        feed.poll(0, &mut out).unwrap();
        assert_eq!(out.len(), 3);
        assert_eq!(
            feed.missed(),
            Missed {
                drained: 20,
                wrapped: 0
            }
        );
    }

    #[test]
    fn a_lap_the_positions_cannot_show_is_told_by_the_trailer() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RingWriter::create(dir.path(), "a", 64).unwrap();
        let mut feed = open_feed(dir.path(), "a", ReadMode::Peek);
        let mut out = Vec::new();
        // 120 events through a 64-slot ring, drained twice, between two polls:
        // the positions show 56 overtaken; the trailer says 120 were written.
        for _ in 0..2 {
            w.push_batch(&events(60));
            drain(w.path());
        }
        w.update_trailer(&TrailerCounts::default());
        feed.poll(0, &mut out).unwrap();
        assert_eq!(out.len(), 0);
        assert_eq!(
            feed.missed(),
            Missed {
                drained: 56,
                wrapped: 64
            }
        );
    }

    #[test]
    fn events_left_for_the_next_poll_are_not_missed() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RingWriter::create(dir.path(), "a", 1 << 17).unwrap();
        let mut feed = open_feed(dir.path(), "a", ReadMode::Peek);
        w.push_batch(&events(MAX_PER_POLL + 1000));
        w.update_trailer(&TrailerCounts::default());
        let mut out = Vec::new();
        feed.poll(0, &mut out).unwrap();
        assert_eq!(out.len(), MAX_PER_POLL);
        assert_eq!(feed.missed(), Missed::default());
        feed.poll(0, &mut out).unwrap();
        assert_eq!(out.len(), MAX_PER_POLL + 1000);
        assert_eq!(feed.missed(), Missed::default());
    }

    #[test]
    fn a_full_ring_is_noticed() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RingWriter::create(dir.path(), "a", 8).unwrap();
        w.push_batch(&events(20));
        let mut feed = open_feed(dir.path(), "a", ReadMode::Peek);
        let mut out = Vec::new();
        feed.poll(0, &mut out).unwrap();
        assert_eq!(out.len(), 7);
        assert!(feed.is_full());
        // A consuming top empties it.
        let mut feed = open_feed(dir.path(), "a", ReadMode::Consume);
        feed.poll(0, &mut out).unwrap();
        assert!(!feed.is_full());
    }

    #[test]
    fn typed_records_become_the_events_an_exporter_sees() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RingWriter::create_with_layout(dir.path(), "a", 16, &layout::V4).unwrap();
        w.push_batch(&[
            Event::new(5, Category::ERROR, "NIXL_ERR_NOT_FOUND", 1),
            Event::new(5, Category::TRANSFER, "agent_rx_bytes", 8192),
            Event::new(5, Category::SYSTEM, "agent_telemetry_events_dropped", 3),
        ]);
        let mut feed = open_feed(dir.path(), "a", ReadMode::Peek);
        let mut out = Vec::new();
        feed.poll(77, &mut out).unwrap();
        let got: Vec<(u64, Category, &[u8], u64)> = out
            .iter()
            .map(|e| (e.timestamp_us, e.category(), e.name_bytes(), e.value))
            .collect();
        assert_eq!(
            got,
            [
                (77, Category::ERROR, &b"NIXL_ERR_NOT_FOUND"[..], 1),
                (77, Category::TRANSFER, &b"agent_rx_bytes"[..], 8192),
                (
                    77,
                    Category::SYSTEM,
                    &b"agent_telemetry_events_dropped"[..],
                    3
                ),
            ]
        );
    }
}
