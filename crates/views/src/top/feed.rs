//! One agent's ring as `top` reads it: peeking (never writing to the file)
//! or consuming, in every layout, and noticing what it cannot see.
//!
//! Peeking, `top` follows the writer, not the consumer
//! ([`RingReader::follow_writer`]): a consumer (NIXL's reader, `nixl-telemetry
//! export`) that takes events out of the ring does not erase them, and `top`
//! reads them until the writer comes round to their slots again. Each ring
//! is looked at at a pace of its own ([`Pace`]) so that the writer rarely
//! gets that far. What a peeking reader still misses is counted:
//!
//! * **drained**: events a consumer took and the writer then wrote over (or
//!   may have) before this reader saw them ([`RingReader::overtaken`]);
//! * **wrapped**: the writer went round the ring between two looks, which
//!   the positions (slot indices, modulo the capacity) cannot show; the
//!   trailer of this project's rings counts every event written, and the
//!   events it counts beyond those read, drained and waiting are the ones
//!   lapped;
//! * **laps suspected**: on NIXL's rings (no trailer) a lap cannot be
//!   counted; a look after which one may have hidden is counted instead
//!   ([`Pace::looked`]).
//!
//! A ring that nothing consumes fills up: its producer then drops what it
//! records (NIXL's writers, uncounted before 1.4). That is reported as
//! [`Feed::is_full`], for `--consume` to help.

use std::time::{Duration, Instant};

use nixl_telemetry::ring::{FileIdentity, ReadMode, RingReader, TrailerInfo};
use nixl_telemetry::Event;

use super::pace::Pace;
use crate::ring_files::{Candidate, RingSources};
use nixl_telemetry::ring::error_message as describe_ring_error;
use nixl_telemetry::ring::SlotConverter;

/// Events read from one ring in one poll at most (the rest wait for the next).
/// Read in one go: following the writer, slots a consumer took are copied,
/// then held until the writer is seen to move on (for this project's
/// writer, up to a flush period), once per read; so a ring's whole backlog
/// is copied at once, not a batch per flush period.
const MAX_PER_POLL: usize = 1 << 16;

/// How often the trailer of an idle ring is read (a look that finds the
/// positions as they were reads nothing else): its count of events written
/// and of events lost are at most this old.
const TRAILER_EVERY: Duration = Duration::from_secs(1);

/// What a feed could not see, since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Missed {
    /// Events a consumer took and the writer wrote over (or may have)
    /// before this reader saw them.
    pub drained: u64,
    /// Events the writer lapped between two looks (rings with a trailer).
    pub wrapped: u64,
    /// Looks after which the writer may have lapped the ring unseen (rings
    /// without a trailer, which cannot count).
    pub suspected_laps: u64,
}

impl Missed {
    /// Whether anything was missed, or may have been.
    pub fn any(&self) -> bool {
        self.drained > 0 || self.wrapped > 0 || self.suspected_laps > 0
    }

    /// Both together, and `other`'s.
    pub fn plus(&self, other: &Missed) -> Missed {
        Missed {
            drained: self.drained.saturating_add(other.drained),
            wrapped: self.wrapped.saturating_add(other.wrapped),
            suspected_laps: self.suspected_laps.saturating_add(other.suspected_laps),
        }
    }

    /// What was missed since `earlier`.
    pub fn since(&self, earlier: &Missed) -> Missed {
        Missed {
            drained: self.drained.saturating_sub(earlier.drained),
            wrapped: self.wrapped.saturating_sub(earlier.wrapped),
            suspected_laps: self.suspected_laps.saturating_sub(earlier.suspected_laps),
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
    /// Events the ring held for this reader when it was opened: written
    /// before `top` looked, they are no rate ([`Feed::caught_up`]).
    backlog: u64,
    /// Events the producer had written before this reader's first slot
    /// (rings with a trailer): what `read` plus what was missed, waiting or
    /// lapped must reach, added to it, to make the trailer's count.
    written_base: Option<u64>,
    missed: Missed,
    full: bool,
    pace: Pace,
    /// What the last look found when it left nothing waiting: the
    /// positions and the trailer's count. A look that finds them again has
    /// nothing to read (an idle ring: no slot is copied or decoded).
    settled: Option<(u64, u64, Option<u64>)>,
    /// The trailer as the last look read it, and when.
    trailer: Option<TrailerInfo>,
    trailer_read: Option<Instant>,
    /// Looks that read the slots (those that found the ring as it was
    /// are not counted).
    decode_passes: u64,
}

impl Feed {
    /// Opens `file` of `sources` peeking (following the writer, from the
    /// oldest event the ring holds) or consuming; the message names the file
    /// and the problem. Its first look is due at `now`.
    pub fn open(
        file: &Candidate,
        sources: &RingSources,
        mode: ReadMode,
        now: Instant,
    ) -> Result<Feed, String> {
        let mut reader = sources
            .open(file, mode)
            .map_err(|e| describe_ring_error(&e, mode))?;
        reader.follow_writer();
        let describe = |e| describe_ring_error(&e, mode);
        let header = reader.header().map_err(describe)?;
        let capacity = reader.capacity();
        let mask = capacity - 1;
        // The trailer's count is stored after each flush pass, so it lags
        // the events published by up to one pass; the writer's count and
        // write_pos advance together from 0, so the events published are
        // the first count from the trailer's on that sits at write_pos.
        let published = reader.trailer().map(|t| {
            t.events_written
                .saturating_add(header.write_pos.wrapping_sub(t.events_written) & mask)
        });
        // Peeking, start at the oldest event still in the ring, consumed or
        // not (what is there before anyone consumes it): slot 0 until the
        // writer has gone round once, then the slot after write_pos. Only
        // the trailer tells; on NIXL's rings, from read_pos.
        if let (ReadMode::Peek, Some(published)) = (mode, published) {
            let oldest = if published < capacity {
                0
            } else {
                (header.write_pos + 1) & mask
            };
            reader.resume_peek_at(oldest).map_err(describe)?;
        }
        let waiting = reader.pending().map_err(describe)?;
        let written_base = published.map(|p| p.saturating_sub(waiting));
        let trailer = reader.trailer();
        Ok(Feed {
            identity: file.file.identity,
            converter: SlotConverter::new(reader.layout()),
            pace: Pace::new(reader.capacity(), now),
            reader,
            slots: Vec::new(),
            read: 0,
            backlog: waiting,
            written_base,
            missed: Missed::default(),
            full: false,
            settled: None,
            trailer,
            trailer_read: None,
            decode_passes: 0,
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

    /// The trailer, when the ring has one, as the last look read it.
    pub fn trailer(&self) -> Option<TrailerInfo> {
        self.trailer
    }

    /// Looks that read the ring's slots: a look that finds the positions
    /// and the trailer's count as the last one left them, nothing waiting,
    /// reads nothing.
    #[cfg(test)]
    pub fn decode_passes(&self) -> u64 {
        self.decode_passes
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

    /// Whether every event the ring held for this reader when it was opened
    /// has been read or counted missed. Until then the events read are
    /// older than the feed: a peeking reader starts at the oldest event a
    /// ring holds, and the slots a consumer took already are handed out
    /// only once the writer is seen to move on, a look or more later.
    pub fn caught_up(&self) -> bool {
        let seen = self
            .read
            .saturating_add(self.missed.drained)
            .saturating_add(self.missed.wrapped);
        seen >= self.backlog
    }

    /// When the ring is to be looked at next.
    pub fn next_look(&self) -> Instant {
        self.pace.next_look()
    }

    /// Looks at the ring `now`: appends the events it holds (at most
    /// [`MAX_PER_POLL`]) to `out`, as the export sidecar hands them to its
    /// exporter ([`SlotConverter`]); those of versions without timestamps
    /// are stamped `now_us`. Slots whose name has no terminator are skipped.
    pub fn poll(&mut self, now: Instant, now_us: u64, out: &mut Vec<Event>) -> Result<(), String> {
        let mode = self.reader.mode();
        let describe = |e| describe_ring_error(&e, mode);
        // The producer's count first: it is stored after the events it
        // counts, so every event it counts now is in the ring, or was
        // drained or lapped, by the time the slots are read below.
        //
        // An idle ring first: the positions as the last look left them,
        // nothing waiting, and the trailer's count the same (asked at most
        // every TRAILER_EVERY: a lap that brings both positions back where
        // they were is counted from it then). Nothing is read. The header
        // checks the layout too (a ring rewritten in place).
        if let Some((write, read, written)) = self.settled {
            let header = self.reader.header().map_err(describe)?;
            if (header.write_pos, header.read_pos) == (write, read) {
                let due = self
                    .trailer_read
                    .is_none_or(|at| now.saturating_duration_since(at) >= TRAILER_EVERY);
                if due {
                    self.trailer = self.reader.trailer();
                    self.trailer_read = Some(now);
                }
                if !due || self.trailer.map(|t| t.events_written) == written {
                    self.pace.looked(now, write, read);
                    return Ok(());
                }
            }
        }
        self.settled = None;
        self.decode_passes += 1;
        self.trailer = self.reader.trailer();
        self.trailer_read = Some(now);
        let written = self.trailer.map(|t| t.events_written);
        let header = self.reader.header().map_err(describe)?;
        let lap_possible = self.pace.looked(now, header.write_pos, header.read_pos);
        if lap_possible && mode == ReadMode::Peek && self.written_base.is_none() {
            self.missed.suspected_laps += 1;
        }
        let seen = (header.write_pos, header.read_pos, written);
        let mut budget = MAX_PER_POLL;
        while budget > 0 {
            let n = self
                .reader
                .read_slot_bytes(&mut self.slots, budget)
                .map_err(describe)?;
            if n == 0 {
                break;
            }
            budget -= n;
            self.read += n as u64;
            self.converter.convert(&self.slots, now_us, out);
        }
        // What is left for the next poll (when the budget ran out, or held
        // until the writer moves on).
        let pending = self.reader.pending().map_err(describe)?;
        if pending > 0 {
            self.pace.waiting(now);
        }
        self.missed.drained = self.reader.overtaken();
        let header = self.reader.header().map_err(describe)?;
        let capacity = self.reader.capacity();
        self.full = header.write_pos.wrapping_sub(header.read_pos) & (capacity - 1) == capacity - 1;
        if pending == 0 && (header.write_pos, header.read_pos) == (seen.0, seen.1) {
            self.settled = Some(seen);
        }
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
    use std::time::Duration;

    /// Opens `<dir>/<agent>` as top does.
    fn open_feed(dir: &Path, agent: &str, mode: ReadMode) -> Feed {
        let mut sources = RingSources::new(&[dir.join(agent)], ScanRules::Readers).unwrap();
        let scan = sources.scan();
        Feed::open(&scan.files[0], &sources, mode, Instant::now()).unwrap()
    }

    /// Polls `feed` now.
    fn poll(feed: &mut Feed, out: &mut Vec<Event>) {
        feed.poll(Instant::now(), 0, out).unwrap();
    }

    /// A flush of the writer: its trailer's count and heartbeat.
    fn flush(w: &mut RingWriter) {
        std::thread::sleep(Duration::from_millis(1));
        w.update_trailer(&TrailerCounts::default());
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
        poll(&mut feed, &mut out);
        assert_eq!(out.len(), 10);
        w.push_batch(&events(5));
        w.update_trailer(&TrailerCounts::default());
        poll(&mut feed, &mut out);
        assert_eq!(out.len(), 15);
        assert_eq!(feed.missed(), Missed::default());
        assert!(!feed.is_full());
    }

    #[test]
    fn an_idle_ring_is_not_read_again_until_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RingWriter::create(dir.path(), "a", 64).unwrap();
        w.push_batch(&events(10));
        w.update_trailer(&TrailerCounts::default());
        let mut feed = open_feed(dir.path(), "a", ReadMode::Peek);
        let mut out = Vec::new();
        let t0 = Instant::now();
        feed.poll(t0, 0, &mut out).unwrap();
        assert_eq!(out.len(), 10);
        let passes = feed.decode_passes();
        // Idle: looked at again and again, its slots never read again.
        for i in 1..=20 {
            feed.poll(t0 + Duration::from_millis(10 * i), 0, &mut out)
                .unwrap();
        }
        assert_eq!(feed.decode_passes(), passes);
        assert_eq!(out.len(), 10);
        // Written to: read at the next look.
        w.push_batch(&events(3));
        w.update_trailer(&TrailerCounts::default());
        feed.poll(t0 + Duration::from_millis(300), 0, &mut out)
            .unwrap();
        assert_eq!(out.len(), 13);
        assert_eq!(feed.decode_passes(), passes + 1);
        // A lap that brings both positions back where they were (64 events
        // written, 64 consumed) is seen in the trailer's count, read again
        // once TRAILER_EVERY has passed.
        drain(w.path());
        let t1 = t0 + Duration::from_millis(400);
        feed.poll(t1, 0, &mut out).unwrap();
        let passes = feed.decode_passes();
        for _ in 0..4 {
            w.push_batch(&events(16));
            drain(w.path());
        }
        w.update_trailer(&TrailerCounts::default());
        feed.poll(t1 + Duration::from_millis(10), 0, &mut out)
            .unwrap();
        assert_eq!(feed.decode_passes(), passes, "not due yet");
        feed.poll(t1 + TRAILER_EVERY, 0, &mut out).unwrap();
        assert_eq!(feed.decode_passes(), passes + 1);
        assert!(feed.missed().any(), "{:?}", feed.missed());
    }

    #[test]
    fn the_events_a_consumer_took_are_read_all_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RingWriter::create(dir.path(), "a", 64).unwrap();
        let mut feed = open_feed(dir.path(), "a", ReadMode::Peek);
        let mut out = Vec::new();
        w.push_batch(&events(20));
        drain(w.path());
        w.push_batch(&events(3));
        flush(&mut w);
        // Copied, and held until the writer is seen to move on (this
        // project's writer publishes a batch after writing all of it).
        poll(&mut feed, &mut out);
        assert_eq!(out.len(), 0);
        flush(&mut w);
        poll(&mut feed, &mut out);
        assert_eq!(out.len(), 23);
        assert_eq!(feed.missed(), Missed::default());
    }

    #[test]
    fn a_feed_catches_up_once_what_the_ring_held_at_open_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RingWriter::create(dir.path(), "a", 64).unwrap();
        w.push_batch(&events(20));
        drain(w.path());
        w.push_batch(&events(3));
        flush(&mut w);
        let mut feed = open_feed(dir.path(), "a", ReadMode::Peek);
        assert!(!feed.caught_up());
        let mut out = Vec::new();
        // The 20 the consumer took are held until the writer moves on.
        poll(&mut feed, &mut out);
        assert!(!feed.caught_up());
        w.push_batch(&events(2));
        poll(&mut feed, &mut out);
        assert_eq!(out.len(), 25);
        assert!(feed.caught_up());
        // An empty ring: nothing to catch up with.
        let w = RingWriter::create(dir.path(), "b", 64).unwrap();
        let feed = open_feed(dir.path(), "b", ReadMode::Peek);
        assert!(feed.caught_up());
        drop(w);
    }

    #[test]
    fn a_whole_ring_held_while_the_writer_moves_on_is_no_lap() {
        // A ring the writer went round, all consumed: top starts at its
        // oldest event, the slot after write_pos, and holds a copy of the
        // whole ring while the writer publishes 10 more onto its oldest
        // slots (positions back where the copy started).
        let dir = tempfile::tempdir().unwrap();
        let mut w = RingWriter::create(dir.path(), "a", 64).unwrap();
        for _ in 0..10 {
            w.push_batch(&events(10));
            drain(w.path());
        }
        flush(&mut w);
        let mut feed = open_feed(dir.path(), "a", ReadMode::Peek);
        let mut out = Vec::new();
        poll(&mut feed, &mut out);
        assert!(out.is_empty(), "held");
        w.push_batch(&events(10));
        drain(w.path());
        flush(&mut w);
        poll(&mut feed, &mut out);
        poll(&mut feed, &mut out);
        flush(&mut w);
        poll(&mut feed, &mut out);
        // The 63 slots held less the 9 written over (the tenth went into
        // the slot at write_pos), then the 10 new.
        assert_eq!(
            feed.missed(),
            Missed {
                drained: 9,
                ..Missed::default()
            }
        );
        assert_eq!(out.len(), 64);
        assert!(feed.caught_up());
    }

    #[test]
    fn what_the_writer_wrote_over_is_counted_as_drained() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RingWriter::create(dir.path(), "a", 64).unwrap();
        let mut feed = open_feed(dir.path(), "a", ReadMode::Peek);
        let mut out = Vec::new();
        w.push_batch(&events(60));
        drain(w.path());
        flush(&mut w);
        poll(&mut feed, &mut out);
        assert_eq!(out.len(), 0, "held");
        // 10 more: the writer came round to the 6 oldest slots held; the
        // other 54, then the 10 new ones, are read.
        w.push_batch(&events(10));
        poll(&mut feed, &mut out);
        assert_eq!(out.len(), 64);
        assert_eq!(
            feed.missed(),
            Missed {
                drained: 6,
                ..Missed::default()
            }
        );
    }

    #[test]
    fn a_lap_the_positions_cannot_show_is_told_by_the_trailer() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RingWriter::create(dir.path(), "a", 64).unwrap();
        let mut feed = open_feed(dir.path(), "a", ReadMode::Peek);
        let mut out = Vec::new();
        // 120 events through a 64-slot ring, drained twice, between two
        // polls: the positions show 56 waiting (the newest, 64 to 119); the
        // trailer says 120 were written, so 64 were lapped.
        for _ in 0..2 {
            w.push_batch(&events(60));
            drain(w.path());
        }
        flush(&mut w);
        poll(&mut feed, &mut out);
        assert_eq!(
            feed.missed(),
            Missed {
                wrapped: 64,
                ..Missed::default()
            }
        );
        flush(&mut w);
        poll(&mut feed, &mut out);
        assert_eq!(out.len(), 56);
        assert_eq!(feed.missed().wrapped, 64);
    }

    #[test]
    fn beside_a_consumer_every_event_is_read_or_counted_missed_exactly() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let dir = tempfile::tempdir().unwrap();
        // A tiny ring, a writer as fast as it can, a consumer keeping up, and
        // a reader looking every 2 ms: the writer laps it again and again.
        let mut w = RingWriter::create(dir.path(), "a", 16).unwrap();
        let path = w.path().to_owned();
        let mut feed = open_feed(dir.path(), "a", ReadMode::Peek);
        let stop = Arc::new(AtomicBool::new(false));
        let consumer = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut r = RingReader::open(&path, ReadMode::Consume).unwrap();
                let mut out = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    out.clear();
                    if r.read_records(&mut out, 4).unwrap() == 0 {
                        std::thread::yield_now();
                    }
                }
            })
        };
        let writer = std::thread::spawn(move || {
            let end = Instant::now() + Duration::from_millis(800);
            while Instant::now() < end {
                w.push_batch(&events(5));
                w.update_trailer(&TrailerCounts::default());
            }
            w.written()
            // Dropped: closed, its totals stored.
        });
        let mut out = Vec::new();
        while !writer.is_finished() {
            poll(&mut feed, &mut out);
            std::thread::sleep(Duration::from_millis(2));
        }
        let written = writer.join().unwrap();
        stop.store(true, Ordering::Relaxed);
        consumer.join().unwrap();
        poll(&mut feed, &mut out);
        assert_eq!(feed.reader.pending().unwrap(), 0);
        let missed = feed.missed();
        assert_eq!(
            feed.read + missed.drained + missed.wrapped,
            written,
            "{} read, {missed:?}",
            feed.read
        );
        assert!(missed.wrapped > 0, "{missed:?}");
        assert_eq!(out.len() as u64, feed.read);
    }

    #[test]
    fn a_trailer_behind_the_ring_at_open_is_no_lap() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RingWriter::create(dir.path(), "a", 64).unwrap();
        w.push_batch(&events(10));
        w.update_trailer(&TrailerCounts::default());
        drain(w.path());
        // Published, not yet counted in the trailer (amid a flush pass).
        w.push_batch(&events(5));
        let mut feed = open_feed(dir.path(), "a", ReadMode::Peek);
        let mut out = Vec::new();
        // All 15, the 10 consumed before top came among them, once the
        // writer is seen to move on.
        poll(&mut feed, &mut out);
        flush(&mut w);
        poll(&mut feed, &mut out);
        assert_eq!(out.len(), 15);
        assert_eq!(feed.missed(), Missed::default());
    }

    #[test]
    fn peeking_starts_at_the_oldest_event_the_ring_holds() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RingWriter::create(dir.path(), "a", 8).unwrap();
        for seq in 0..20 {
            w.push_batch(&[Event::new(seq, Category::TRANSFER, "agent_tx_bytes", seq)]);
            drain(w.path());
        }
        flush(&mut w);
        let mut feed = open_feed(dir.path(), "a", ReadMode::Peek);
        let mut out = Vec::new();
        poll(&mut feed, &mut out);
        flush(&mut w);
        poll(&mut feed, &mut out);
        // The 7 slots after write_pos hold events 13 to 19 (the eighth, at
        // write_pos, is the next the writer fills).
        let values: Vec<u64> = out.iter().map(|e| e.value).collect();
        assert_eq!(values, (13..20).collect::<Vec<_>>());
        assert_eq!(feed.missed(), Missed::default());
        // On NIXL's rings (no count of what was written) from read_pos.
        nixl_telemetry_testsupport::nixl_ring::hide_trailer(&w);
        let mut feed = open_feed(dir.path(), "a", ReadMode::Peek);
        out.clear();
        poll(&mut feed, &mut out);
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn on_nixls_rings_a_lap_that_may_have_hidden_is_counted() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RingWriter::create(dir.path(), "a", 16).unwrap();
        nixl_telemetry_testsupport::nixl_ring::hide_trailer(&w);
        let mut feed = open_feed(dir.path(), "a", ReadMode::Peek);
        assert!(feed.trailer().is_none());
        let t0 = Instant::now();
        let mut out = Vec::new();
        feed.poll(t0, 0, &mut out).unwrap();
        // A little, consumed: nothing to fear.
        for _ in 0..3 {
            w.push_batch(&events(1));
        }
        drain(w.path());
        feed.poll(t0 + Duration::from_millis(1), 0, &mut out)
            .unwrap();
        assert_eq!(out.len(), 3);
        assert_eq!(feed.missed(), Missed::default());
        // Half the ring since the last look while a consumer reads it: the
        // writer may have gone round it too.
        for _ in 0..9 {
            w.push_batch(&events(1));
        }
        drain(w.path());
        feed.poll(t0 + Duration::from_millis(2), 0, &mut out)
            .unwrap();
        assert_eq!(out.len(), 12, "read all the same");
        assert_eq!(
            feed.missed(),
            Missed {
                suspected_laps: 1,
                ..Missed::default()
            }
        );
        // Without a consumer the writer cannot lap the reader.
        for _ in 0..9 {
            w.push_batch(&events(1));
        }
        feed.poll(t0 + Duration::from_millis(3), 0, &mut out)
            .unwrap();
        assert_eq!(out.len(), 21);
        assert_eq!(feed.missed().suspected_laps, 1);
    }

    #[test]
    fn events_left_for_the_next_poll_are_not_missed() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RingWriter::create(dir.path(), "a", 1 << 17).unwrap();
        let mut feed = open_feed(dir.path(), "a", ReadMode::Peek);
        w.push_batch(&events(MAX_PER_POLL + 1000));
        w.update_trailer(&TrailerCounts::default());
        let mut out = Vec::new();
        poll(&mut feed, &mut out);
        assert_eq!(out.len(), MAX_PER_POLL);
        assert_eq!(feed.missed(), Missed::default());
        poll(&mut feed, &mut out);
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
        poll(&mut feed, &mut out);
        assert_eq!(out.len(), 7);
        assert!(feed.is_full());
        // A consuming top empties it.
        let mut feed = open_feed(dir.path(), "a", ReadMode::Consume);
        poll(&mut feed, &mut out);
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
        feed.poll(Instant::now(), 77, &mut out).unwrap();
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
