//! One ring file followed by the sidecar: read and consumed as NIXL's own
//! reader does, its events converted and handed on, its load measured.

use std::io::ErrorKind;
use std::time::Instant;

use nixl_telemetry::ring::{ReadMode, RingDirectory, RingError, RingFile, RingReader};
use nixl_telemetry::Event;

use super::schedule::{remembered_rate, RingLoad};
use nixl_telemetry::ring::SlotConverter;

/// Whether the ring's producer is still there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Producer {
    /// It holds the ring (this project's writers: their lock is held).
    Running,
    /// It is gone: the trailer says it closed, or nobody holds the lock.
    Exited,
    /// A ring without this project's trailer (NIXL's own): no way to tell an
    /// exited producer from an idle one.
    Unknown,
}

/// A ring file being followed.
pub struct FollowedRing {
    /// The file, as the directory scan found it.
    pub file: RingFile,
    reader: RingReader,
    converter: SlotConverter,
    /// Removed or replaced: read to its end, then closed.
    pub retiring: bool,
    /// Opened read-only (the sidecar may not write it): peeked, not consumed.
    pub read_only: bool,
    /// The trailer says a new producer moved this ring aside.
    pub stale: bool,
    slots: Vec<u8>,
    last_pass: Option<Instant>,
    /// The rate the next pass is planned with ([`remembered_rate`]).
    rate: f64,
    malformed_warned: bool,
}

/// What one read of a ring did.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadReport {
    /// Events handed on.
    pub events: u64,
    /// Slots skipped: a name without NUL.
    pub malformed: u64,
    /// The ring's load when the read began.
    pub load: Option<RingLoad>,
}

impl FollowedRing {
    /// Opens `file` through `dir` to consume it; a file the sidecar may read
    /// but not write is opened to peek instead (the second value says so,
    /// for a warning).
    pub fn open(dir: &RingDirectory, file: &RingFile) -> Result<(FollowedRing, bool), RingError> {
        let (reader, read_only) = match dir.open_reader(file, ReadMode::Consume) {
            Ok(reader) => (reader, false),
            Err(RingError::Open { source, .. })
                if matches!(
                    source.kind(),
                    ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem
                ) =>
            {
                (dir.open_reader(file, ReadMode::Peek)?, true)
            }
            Err(e) => return Err(e),
        };
        Ok((FollowedRing::from_reader(file, reader), read_only))
    }

    /// Follows `file` through a reader already open on it (a file opened as
    /// soon as it appeared); a peeking reader is read without consuming.
    pub fn from_reader(file: &RingFile, reader: RingReader) -> FollowedRing {
        let stale = reader.trailer().is_some_and(|t| t.stale);
        let converter = SlotConverter::new(reader.layout());
        FollowedRing {
            file: file.clone(),
            read_only: reader.mode() == ReadMode::Peek,
            reader,
            converter,
            retiring: false,
            stale,
            slots: Vec::new(),
            last_pass: None,
            rate: 0.0,
            malformed_warned: false,
        }
    }

    /// The reader (layout, capacity, trailer).
    pub fn reader(&self) -> &RingReader {
        &self.reader
    }

    /// Reads up to `quota` waiting events in batches of at most `batch`,
    /// handing each batch to `export` before the read position moves past it
    /// (a consuming read stores `read_pos` after each batch was handed on,
    /// as NIXL's reader does after printing). Events of layouts without
    /// timestamps are stamped `now_us`. `warn` gets one message for the first
    /// malformed slot.
    pub fn read(
        &mut self,
        quota: u64,
        batch: usize,
        now_us: u64,
        events: &mut Vec<Event>,
        mut export: impl FnMut(&[Event]),
        mut warn: impl FnMut(String),
    ) -> Result<ReadReport, RingError> {
        let started = Instant::now();
        let first = quota.min(batch as u64) as usize;
        let (pending, mut n) = self
            .reader
            .pending_and_peek_slot_bytes(&mut self.slots, first)?;
        let room = self.reader.capacity() - 1;
        if let Some(last) = self.last_pass {
            let elapsed = started.duration_since(last);
            let seen = if elapsed.is_zero() {
                0.0
            } else {
                pending as f64 / elapsed.as_secs_f64()
            };
            self.rate = remembered_rate(self.rate, seen, elapsed);
        }
        let rate = self.rate;
        self.last_pass = Some(started);
        let mut report = ReadReport {
            load: Some(RingLoad {
                pending,
                room,
                rate,
            }),
            ..ReadReport::default()
        };
        let mut left = pending.min(quota);
        while n > 0 {
            events.clear();
            let done = self.converter.convert(&self.slots, now_us, events);
            if done.malformed > 0 && !self.malformed_warned {
                self.malformed_warned = true;
                warn(format!(
                    "{}: slot {} of a batch: event name has no NUL terminator in its 32 bytes; \
                     skipped (malformed slots of this ring are counted, not warned about again)",
                    self.file.path.display(),
                    done.first_malformed.unwrap_or(0)
                ));
            }
            if !events.is_empty() {
                export(events);
            }
            self.reader.commit(n)?;
            report.events += done.events as u64;
            report.malformed += done.malformed as u64;
            left -= n as u64;
            if left == 0 {
                break;
            }
            n = self
                .reader
                .peek_slot_bytes(&mut self.slots, (left as usize).min(batch))?;
        }
        Ok(report)
    }

    /// Whether the producer is still there (reads the trailer; for this
    /// project's rings, asks the lock).
    pub fn producer(&self) -> Producer {
        match self.reader.trailer() {
            None => Producer::Unknown,
            Some(t) if t.closed || t.stale => Producer::Exited,
            Some(_) if self.reader.producer_lock_free() => Producer::Exited,
            Some(_) => Producer::Running,
        }
    }

    /// Events waiting now.
    pub fn pending(&mut self) -> Result<u64, RingError> {
        self.reader.pending()
    }
}
