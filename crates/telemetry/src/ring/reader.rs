//! The consumer side of a ring file of any version: detects the layout from
//! the header and the file size and validates everything before it maps.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, Ordering};

use nixl_telemetry_abi::ring::{self as layout, trailer, DetectError, RingLayout};
use nixl_telemetry_abi::Event;

use super::error::RingError;
use super::follow::{self, Following, Unsettled};
use super::mapping::Mapping;
use super::record::RingRecord;

/// How a reader treats the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadMode {
    /// Advance `read_pos` in the file as events are read (NIXL's readers do this).
    Consume,
    /// Never write: the file is opened and mapped read-only; the reader keeps its
    /// own position, starting at the file's `read_pos`. A consuming reader
    /// that moves `read_pos` past it moves it forward to `read_pos`, unless it
    /// follows the writer ([`RingReader::follow_writer`]).
    Peek,
}

/// The header fields as read from a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingHeader {
    /// Next slot the producer writes.
    pub write_pos: u64,
    /// Next slot the consumer reads.
    pub read_pos: u64,
    /// Format version.
    pub version: i32,
    /// Version the creator expected.
    pub expected_version: i32,
    /// Number of slots.
    pub capacity: u64,
    /// capacity − 1.
    pub mask: u64,
}

impl RingHeader {
    /// Decodes the 40 header bytes.
    pub fn decode(bytes: &[u8; layout::HEADER_SIZE]) -> RingHeader {
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        let i32_at = |at: usize| i32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        RingHeader {
            write_pos: u64_at(layout::WRITE_POS_OFFSET),
            read_pos: u64_at(layout::READ_POS_OFFSET),
            version: i32_at(layout::VERSION_OFFSET),
            expected_version: i32_at(layout::EXPECTED_VERSION_OFFSET),
            capacity: u64_at(layout::CAPACITY_OFFSET),
            mask: u64_at(layout::MASK_OFFSET),
        }
    }

    /// Checks the header against the file's size and finds the file's layout
    /// ([`layout::detect`]); `trailer_at(offset)` says whether this project's
    /// trailer magic sits at `offset`.
    pub fn validate(
        &self,
        path: &Path,
        file_size: u64,
        trailer_at: impl Fn(u64) -> bool,
    ) -> Result<&'static RingLayout, RingError> {
        if !layout::VERSIONS.contains(&self.version) {
            return Err(RingError::WrongVersion {
                path: path.to_owned(),
                found: self.version,
            });
        }
        let bad_capacity = |reason| RingError::BadCapacity {
            path: path.to_owned(),
            capacity: self.capacity,
            reason,
        };
        if self.capacity == 0 {
            return Err(bad_capacity("it is zero"));
        }
        if !self.capacity.is_power_of_two() {
            return Err(bad_capacity("it is not a power of two"));
        }
        if self.capacity < 2 {
            return Err(bad_capacity("a one-slot ring can hold no event"));
        }
        let ring_layout = match layout::detect(self.version, self.capacity, file_size, trailer_at) {
            Ok(found) => found,
            Err(DetectError::TooSmall { needed }) => {
                return Err(RingError::CapacityBeyondFile {
                    path: path.to_owned(),
                    version: self.version,
                    capacity: self.capacity,
                    needed,
                    size: file_size,
                })
            }
            Err(DetectError::Overflow) => {
                return Err(bad_capacity("it overflows the address space"))
            }
            Err(DetectError::Ambiguous { sizes }) => {
                return Err(RingError::AmbiguousLayout {
                    path: path.to_owned(),
                    version: self.version,
                    capacity: self.capacity,
                    size: file_size,
                    sizes,
                })
            }
            Err(DetectError::UnknownVersion) => {
                return Err(RingError::WrongVersion {
                    path: path.to_owned(),
                    found: self.version,
                })
            }
        };
        if self.mask != self.capacity - 1 {
            return Err(RingError::BadMask {
                path: path.to_owned(),
                mask: self.mask,
                capacity: self.capacity,
            });
        }
        for (field, value) in [("write_pos", self.write_pos), ("read_pos", self.read_pos)] {
            if value >= self.capacity {
                return Err(RingError::PositionOutOfRange {
                    path: path.to_owned(),
                    field,
                    value,
                    capacity: self.capacity,
                });
            }
        }
        Ok(ring_layout)
    }
}

/// The trailer's content, when the file has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrailerInfo {
    /// Trailer version.
    pub version: u32,
    /// The producer's pid.
    pub producer_pid: u32,
    /// Whether the producer shut down cleanly.
    pub closed: bool,
    /// Whether the ring is stale: its producer stopped with events unread and
    /// a new producer of the agent moved the file aside
    /// ([`trailer::FLAG_STALE`]); nothing more will be written to it.
    pub stale: bool,
    /// Wall-clock µs when the file was created.
    pub created_us: u64,
    /// Events the producer wrote in total.
    pub events_written: u64,
    /// Events lost because a staging buffer was full.
    pub dropped_staging_full: u64,
    /// Events lost because the ring was full.
    pub dropped_ring_full: u64,
    /// Wall-clock µs of the producer's latest flush.
    pub last_flush_us: u64,
    /// Events lost because the ring's version has no event type for them
    /// (0 in a version-1 trailer, which has no such field).
    pub dropped_format: u64,
}

/// How the readers describe a stale ring ([`TrailerInfo::stale`]).
pub const STALE_WORDS: &str =
    "stale: its producer stopped with events unread and a new producer of the agent moved it aside";

impl TrailerInfo {
    /// The producer's state in words, as both readers print it.
    pub fn state(&self) -> &'static str {
        if self.stale {
            STALE_WORDS
        } else if self.closed {
            "closed cleanly"
        } else {
            "running or stopped uncleanly"
        }
    }

    /// Every event the producer lost: the exact sum of the counters (which,
    /// from a hostile or long-lived file, may exceed `u64`).
    pub fn events_lost(&self) -> u128 {
        u128::from(self.dropped_staging_full)
            + u128::from(self.dropped_ring_full)
            + u128::from(self.dropped_format)
    }
}

/// Reads events from a ring file, consuming or peeking.
///
/// Any ring version: [`RingReader::peek_records`] hands out [`RingRecord`]s
/// (`None` for what the version lacks); [`RingReader::peek_batch`] hands out
/// version-1 [`Event`]s and refuses other versions;
/// [`RingReader::peek_slot_bytes`] hands out the slots' bytes, for
/// [`SlotView`](super::SlotView) to read in place.
///
/// Only the 40-byte header is mapped (its positions are shared atomics); slots
/// and trailer are read with `pread`, so a file truncated under the reader is
/// reported as [`RingError::Truncated`] instead of faulting.
pub struct RingReader {
    path: PathBuf,
    file: File,
    header: Mapping,
    mode: ReadMode,
    capacity: u64,
    mask: u64,
    /// The file's layout.
    layout: &'static RingLayout,
    /// Bytes of header and slots.
    data_size: u64,
    /// The header's version and the file's size at open (with `capacity`,
    /// `mask` and `layout`, what [`RingReader::check_size`] checks on every
    /// read).
    version: i32,
    file_size: u64,
    /// Whether the file had no name left at the last check of its size.
    removed_at_check: bool,
    trailer: Option<TrailerFormat>,
    trailer_problem: Option<TrailerProblem>,
    /// Peek mode: this reader's own position.
    peek_pos: u64,
    /// Events handed out by [`RingReader::peek_batch`] and not yet committed,
    /// and the position they start at.
    uncommitted: u64,
    uncommitted_from: u64,
    /// Peek mode: events a consuming reader took before this one saw them
    /// (following the writer: those the writer may have written over).
    overtaken: u64,
    /// Peek mode, following the writer: what is kept between reads.
    following: Option<Following>,
    scratch: Vec<u8>,
}

/// Where a recognised trailer sits and how much of it there is.
#[derive(Debug, Clone, Copy)]
struct TrailerFormat {
    offset: u64,
    /// Bytes of it this reader knows ([`layout::TRAILER_SIZE_MIN`] or more).
    known: usize,
}

/// Whether the trailer magic sits at `offset`.
fn magic_at(file: &File, offset: u64) -> bool {
    let mut magic = [0u8; 8];
    file.read_exact_at(&mut magic, offset).is_ok() && magic == layout::TRAILER_MAGIC
}

/// A trailer whose magic matches but whose version or size is not accepted
/// (it is then ignored; readers warn about it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrailerProblem {
    /// The trailer version found.
    pub version: u32,
    /// The trailer size found.
    pub size: u32,
}

impl std::fmt::Display for TrailerProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "trailer version {}, size {}; accepted: version >= 1 and a size of 64 or more that \
             fits in the file",
            self.version, self.size
        )
    }
}

/// The trailer after `data_size` bytes, if the file holds one: `Ok(None)`
/// when there is none (too short, no magic), `Err` when the magic is there
/// but the version or size is not accepted.
fn read_trailer_format(
    file: &File,
    data_size: u64,
    file_size: u64,
) -> Result<Option<TrailerFormat>, TrailerProblem> {
    let Some(min_end) = data_size.checked_add(layout::TRAILER_SIZE_MIN as u64) else {
        return Ok(None);
    };
    let mut head = [0u8; 16];
    if file_size < min_end || file.read_exact_at(&mut head, data_size).is_err() {
        return Ok(None);
    }
    if head[..8] != layout::TRAILER_MAGIC {
        return Ok(None);
    }
    let field =
        |at: usize| u32::from_le_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
    let version = field(trailer::VERSION);
    let size = field(trailer::SIZE);
    // Any version from the first on: later versions only grow the trailer.
    let known = version >= layout::TRAILER_VERSION_MIN
        && size as usize >= layout::TRAILER_SIZE_MIN
        && data_size + u64::from(size) <= file_size;
    if !known {
        return Err(TrailerProblem { version, size });
    }
    // `dropped_format` exists from trailer version 2 on.
    let known_size = if version >= 2 && size as usize >= layout::TRAILER_SIZE {
        layout::TRAILER_SIZE
    } else {
        layout::TRAILER_SIZE_MIN
    };
    Ok(Some(TrailerFormat {
        offset: data_size,
        known: known_size,
    }))
}

impl RingReader {
    /// Opens and validates a ring file. The header is checked against the file's
    /// size before anything is mapped.
    pub fn open(path: &Path, mode: ReadMode) -> Result<RingReader, RingError> {
        // O_NONBLOCK: if the path turns out to be a FIFO (swapped in after a
        // caller looked at it), opening it must not wait for a writer; the
        // check below then refuses it. It changes nothing for a regular file.
        let file = OpenOptions::new()
            .read(true)
            .write(mode == ReadMode::Consume)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(|source| RingError::Open {
                path: path.to_owned(),
                source,
            })?;
        RingReader::from_file(file, path, mode)
    }

    /// Validates a ring file the caller has opened (read-write to consume,
    /// read-only or read-write to peek), as [`RingReader::open`] does after
    /// opening; `path` names it in errors. A caller that must control how the
    /// file is reached (a directory others can write to: no link followed out
    /// of it) opens it itself and hands it over here.
    pub fn from_file(file: File, path: &Path, mode: ReadMode) -> Result<RingReader, RingError> {
        let meta = file
            .metadata()
            .map_err(|e| RingError::io(path, "stat", e))?;
        if !meta.is_file() {
            return Err(RingError::NotRegularFile {
                path: path.to_owned(),
            });
        }
        let size = meta.len();
        if size < layout::HEADER_SIZE as u64 {
            return Err(RingError::TooShort {
                path: path.to_owned(),
                size,
            });
        }
        let mut bytes = [0u8; layout::HEADER_SIZE];
        file.read_exact_at(&mut bytes, 0)
            .map_err(|e| RingError::io(path, "read the header", e))?;
        let header = RingHeader::decode(&bytes);
        let ring_layout = header.validate(path, size, |at| magic_at(&file, at))?;
        let data_size = ring_layout
            .data_size(header.capacity)
            .expect("validate checked the size");
        let (trailer, trailer_problem) = match read_trailer_format(&file, data_size, size) {
            Ok(found) => (found, None),
            Err(problem) => (None, Some(problem)),
        };
        let map = match mode {
            ReadMode::Consume => Mapping::read_write(&file, layout::HEADER_SIZE),
            ReadMode::Peek => Mapping::read_only(&file, layout::HEADER_SIZE),
        }
        .map_err(|e| RingError::io(path, "map", e))?;
        Ok(RingReader {
            path: path.to_owned(),
            file,
            header: map,
            mode,
            capacity: header.capacity,
            mask: header.mask,
            layout: ring_layout,
            data_size,
            version: header.version,
            file_size: size,
            trailer,
            trailer_problem,
            peek_pos: header.read_pos,
            uncommitted: 0,
            uncommitted_from: 0,
            removed_at_check: false,
            overtaken: 0,
            following: None,
            scratch: Vec::new(),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of slots.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The mode the file was opened in.
    pub fn mode(&self) -> ReadMode {
        self.mode
    }

    /// The file's layout (its ring version and slot), detected at open.
    pub fn layout(&self) -> &'static RingLayout {
        self.layout
    }

    /// Fails with [`RingError::Truncated`] if the file shrank below its header
    /// and slots, and with [`RingError::LayoutChanged`] if it was rewritten
    /// in place in another layout: its size, or the header's version,
    /// capacity or mask, differ from what they were at open (a producer of
    /// another release or buffer size creating its ring over this one).
    /// Every read checks this before it looks at the positions.
    pub fn check_size(&self) -> Result<(), RingError> {
        self.checked_links().map(drop)
    }

    /// [`RingReader::check_size`], remembering whether the file was removed
    /// (for [`RingReader::removed_at_last_check`]).
    fn check_file(&mut self) -> Result<(), RingError> {
        self.removed_at_check = self.checked_links()? == 0;
        Ok(())
    }

    /// [`RingReader::check_size`]'s checks, from one `stat` of the
    /// descriptor; the file's number of names (0: removed) when they pass.
    fn checked_links(&self) -> Result<u64, RingError> {
        use std::os::unix::fs::MetadataExt;
        let meta = self
            .file
            .metadata()
            .map_err(|e| RingError::io(&self.path, "stat", e))?;
        let size = meta.len();
        let needed = self.data_size;
        if size < needed {
            return Err(RingError::Truncated {
                path: self.path.clone(),
                size,
                needed,
            });
        }
        let version = self
            .header
            .i32_at(layout::VERSION_OFFSET)
            .load(Ordering::Acquire);
        let capacity = self
            .header
            .u64_at(layout::CAPACITY_OFFSET)
            .load(Ordering::Acquire);
        let mask = self
            .header
            .u64_at(layout::MASK_OFFSET)
            .load(Ordering::Acquire);
        let now = (version, capacity, mask, size);
        let was = (self.version, self.capacity, self.mask, self.file_size);
        // A size of its own is no change while it means the same layout (a
        // file grown past its ring: the slots are where they were).
        let same_layout = || {
            layout::detect(version, capacity, size, |at| magic_at(&self.file, at))
                .is_ok_and(|found| found == self.layout)
        };
        if (version, capacity, mask) != (self.version, self.capacity, self.mask)
            || (size != self.file_size && !same_layout())
        {
            let words = |(v, c, m, s): (i32, u64, u64, u64)| {
                format!("version {v}, capacity {c}, mask {m}, {s} bytes")
            };
            return Err(RingError::LayoutChanged {
                path: self.path.clone(),
                was: words(was),
                now: words(now),
            });
        }
        Ok(meta.nlink())
    }

    /// Whether the file was removed (no name leads to it any more), asked
    /// of the descriptor held: a follower lets go of it without listing
    /// the directory. `false` when that cannot be told.
    pub fn is_removed(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        self.file.metadata().is_ok_and(|m| m.nlink() == 0)
    }

    /// Whether the file had no name left when its size was last checked
    /// (every [`RingReader::pending`], peek and consuming commit checks it):
    /// [`RingReader::is_removed`] as of that check, without a system call of
    /// its own. A reader that reads its ring every pass asks this instead.
    pub fn removed_at_last_check(&self) -> bool {
        self.removed_at_check
    }

    fn position(&self, offset: usize, field: &'static str) -> Result<u64, RingError> {
        let value = self.header.u64_at(offset).load(Ordering::Acquire);
        if value >= self.capacity {
            return Err(RingError::PositionOutOfRange {
                path: self.path.clone(),
                field,
                value,
                capacity: self.capacity,
            });
        }
        Ok(value)
    }

    /// The header as it is now. Checks the file size first: a file truncated
    /// under the mapping is an error, never a fault.
    pub fn header(&self) -> Result<RingHeader, RingError> {
        self.check_size()?;
        let mut bytes = [0u8; layout::HEADER_SIZE];
        self.header.read_bytes(0, &mut bytes);
        Ok(RingHeader::decode(&bytes))
    }

    /// Where this reader reads next: the file's `read_pos` when consuming; when
    /// peeking, its own position, moved forward to `read_pos` if a consuming
    /// reader has overtaken it (those slots may already hold newer events).
    fn read_position(&mut self, write: u64) -> Result<u64, RingError> {
        if self.following.is_some() {
            return Ok(self.peek_pos);
        }
        let read = self.position(layout::READ_POS_OFFSET, "read_pos")?;
        match self.mode {
            ReadMode::Consume => Ok(read),
            ReadMode::Peek => {
                let ours = write.wrapping_sub(self.peek_pos) & self.mask;
                let unread = write.wrapping_sub(read) & self.mask;
                if ours > unread {
                    self.overtaken += ours - unread;
                    self.peek_pos = read;
                }
                Ok(self.peek_pos)
            }
        }
    }

    /// Peek mode: goes on from slot `position`, where an earlier reader of
    /// the same file stopped (a reader that closes files and opens them again
    /// to bound its descriptors). A consuming reader always reads from
    /// `read_pos` and ignores this.
    pub fn resume_peek_at(&mut self, position: u64) -> Result<(), RingError> {
        if position >= self.capacity {
            return Err(RingError::PositionOutOfRange {
                path: self.path.clone(),
                field: "resume position",
                value: position,
                capacity: self.capacity,
            });
        }
        self.peek_pos = position;
        self.uncommitted = 0;
        if let Some(following) = &mut self.following {
            following.clear();
        }
        Ok(())
    }

    /// Peek mode: events a consuming reader took before this reader saw them;
    /// when following the writer ([`RingReader::follow_writer`]), those that
    /// a consumer took and the writer may then have written over.
    pub fn overtaken(&self) -> u64 {
        self.overtaken
    }

    /// Peek mode: from now on, follow the writer rather than the consumer.
    ///
    /// A consuming reader that moves `read_pos` past this reader does not
    /// erase the slots it read: each keeps its event until the writer comes
    /// round to it again. Following the writer, this reader reads every slot
    /// from its own position up to `write_pos`, consumed or not, and after
    /// copying them checks against the positions that the writer cannot have
    /// written over what was copied: the slots it may have (the oldest) are
    /// skipped and counted in [`RingReader::overtaken`], never handed out.
    /// NIXL's writers publish `write_pos` after every event; this project's
    /// writer (rings with a trailer) after a whole batch, so a copy holding
    /// slots a consumer gave back is handed out only once the writer is seen
    /// to publish or flush again (its trailer's heartbeat), to close, or to
    /// be gone: the read that made such a copy returns 0 events, a later one
    /// the events. See `docs/readers.md`, "Peeking behind a consumer".
    ///
    /// What the positions cannot show is the writer going round the whole
    /// ring between two reads; a caller that must know looks often enough,
    /// or counts with the trailer's `events_written`.
    ///
    /// Does nothing to a consuming reader.
    pub fn follow_writer(&mut self) {
        if self.mode == ReadMode::Peek && self.following.is_none() {
            self.following = Some(Following::default());
            self.uncommitted = 0;
        }
    }

    /// Whether this reader follows the writer ([`RingReader::follow_writer`]).
    pub fn follows_writer(&self) -> bool {
        self.following.is_some()
    }

    /// Events waiting to be read by this reader. Following the writer
    /// ([`RingReader::follow_writer`]): the slots copied and held, then those
    /// after them up to `write_pos`, counted apart (together they may come
    /// to the capacity or more, which the positions alone would show as
    /// nothing waiting); some held may yet be skipped, the writer having
    /// come round to them.
    pub fn pending(&mut self) -> Result<u64, RingError> {
        self.check_file()?;
        self.pending_checked()
    }

    /// [`RingReader::pending`] and then [`RingReader::peek_slot_bytes`] of at
    /// most that many, on one check of the file (a reader visiting many
    /// rings saves a `stat` a visit). Returns the events waiting and how many
    /// of them `slots` now holds.
    pub fn pending_and_peek_slot_bytes(
        &mut self,
        slots: &mut Vec<u8>,
        max: usize,
    ) -> Result<(u64, usize), RingError> {
        self.uncommitted = 0;
        self.check_file()?;
        let pending = self.pending_checked()?;
        let max = (max as u64).min(pending) as usize;
        Ok((pending, self.peek_slot_bytes_checked(slots, max)?))
    }

    /// [`RingReader::pending`] once the file was checked.
    fn pending_checked(&mut self) -> Result<u64, RingError> {
        let write = self.position(layout::WRITE_POS_OFFSET, "write_pos")?;
        if let Some(following) = &self.following {
            let held = following.held_slots(self.layout.slot.size);
            let after = write.wrapping_sub(self.peek_pos.wrapping_add(held)) & self.mask;
            return Ok(held + after);
        }
        let read = self.read_position(write)?;
        Ok(write.wrapping_sub(read) & self.mask)
    }

    /// Appends up to `max` waiting events of a version-1 ring to `out`,
    /// oldest first, without advancing the read position;
    /// [`RingReader::commit`] advances it. A consumer that prints events
    /// commits only what it printed, so a failed write loses nothing. Checks
    /// the file size and both positions first. A ring of another version is
    /// [`RingError::NotVersion1`]: read it with [`RingReader::peek_records`].
    pub fn peek_batch(&mut self, out: &mut Vec<Event>, max: usize) -> Result<usize, RingError> {
        if self.layout != &layout::V1 {
            self.uncommitted = 0;
            return Err(RingError::NotVersion1 {
                path: self.path.clone(),
                layout: self.layout.name,
            });
        }
        self.peek_slots(max, |bytes, count| {
            out.reserve(count);
            out.extend(
                bytes
                    .chunks_exact(Event::SIZE)
                    .map(|chunk| Event::from_bytes(chunk.try_into().expect("56-byte chunk"))),
            );
        })
    }

    /// Appends up to `max` waiting events of a ring of any version to `out`,
    /// oldest first, without advancing the read position (as
    /// [`RingReader::peek_batch`]; [`RingReader::commit`] advances it).
    pub fn peek_records(
        &mut self,
        out: &mut Vec<RingRecord>,
        max: usize,
    ) -> Result<usize, RingError> {
        let ring_layout = self.layout;
        self.peek_slots(max, |bytes, count| {
            out.reserve(count);
            if ring_layout == &layout::V1 {
                // The common case, with the slot's fixed offsets, each record
                // filled in place (built by value and moved, a record went
                // through a stack copy whose reload stalled on every event).
                let start = out.len();
                out.resize(start + count, RingRecord::EMPTY);
                for (record, chunk) in out[start..].iter_mut().zip(bytes.chunks_exact(Event::SIZE))
                {
                    record.fill_from_v1_slot(chunk.try_into().expect("56-byte chunk"));
                }
            } else {
                out.extend(
                    bytes
                        .chunks_exact(ring_layout.slot.size)
                        .map(|slot| RingRecord::decode(ring_layout, slot)),
                );
            }
        })
    }

    /// Appends up to `max` waiting events to `out` and advances past them:
    /// [`RingReader::peek_records`] then [`RingReader::commit`]. Returns how many.
    pub fn read_records(
        &mut self,
        out: &mut Vec<RingRecord>,
        max: usize,
    ) -> Result<usize, RingError> {
        let n = self.peek_records(out, max)?;
        self.commit(n)?;
        Ok(n)
    }

    /// Reads the bytes of up to `max` waiting slots into `slots`, oldest first
    /// (the runs before and after the wrap one after the other), without
    /// advancing the read position ([`RingReader::commit`] advances it), and
    /// returns how many. `slots` is resized to exactly their bytes, `count ×
    /// layout().slot.size` (a buffer reused at one size is not written twice);
    /// [`SlotView`](super::SlotView) reads their fields in place. Checks the
    /// file size and both positions first, as [`RingReader::peek_records`].
    pub fn peek_slot_bytes(&mut self, slots: &mut Vec<u8>, max: usize) -> Result<usize, RingError> {
        self.uncommitted = 0;
        self.check_file()?;
        self.peek_slot_bytes_checked(slots, max)
    }

    /// [`RingReader::peek_slot_bytes`] once the file was checked.
    fn peek_slot_bytes_checked(
        &mut self,
        slots: &mut Vec<u8>,
        max: usize,
    ) -> Result<usize, RingError> {
        if let Some(mut following) = self.following.take() {
            let result = self.peek_following(&mut following, slots, max);
            self.following = Some(following);
            return result;
        }
        let write = self.position(layout::WRITE_POS_OFFSET, "write_pos")?;
        let read = self.read_position(write)?;
        let n = ((write.wrapping_sub(read) & self.mask) as usize).min(max);
        let size = self.layout.slot.size;
        slots.resize(n * size, 0);
        if n == 0 {
            return Ok(0);
        }
        let first = n.min((self.capacity - read) as usize);
        let (before, after) = slots.split_at_mut(first * size);
        self.read_slots(read, before)?;
        if !after.is_empty() {
            self.read_slots(0, after)?;
        }
        self.uncommitted = n as u64;
        self.uncommitted_from = read;
        Ok(n)
    }

    /// Reads the bytes of up to `max` waiting slots into `slots` and advances
    /// past them: [`RingReader::peek_slot_bytes`] then [`RingReader::commit`].
    /// Returns how many.
    pub fn read_slot_bytes(&mut self, slots: &mut Vec<u8>, max: usize) -> Result<usize, RingError> {
        let n = self.peek_slot_bytes(slots, max)?;
        self.commit(n)?;
        Ok(n)
    }

    /// Reads up to `max` waiting slots and hands their bytes to `decode` (the
    /// runs before and after the wrap one after the other).
    fn peek_slots(
        &mut self,
        max: usize,
        mut decode: impl FnMut(&[u8], usize),
    ) -> Result<usize, RingError> {
        let mut scratch = std::mem::take(&mut self.scratch);
        let result = self.peek_slot_bytes(&mut scratch, max);
        if let Ok(n @ 1..) = result {
            decode(&scratch, n);
        }
        self.scratch = scratch;
        result
    }

    /// Advances the read position past the first `n` events of the last
    /// [`RingReader::peek_batch`] (at most all of them); when consuming, stores
    /// `read_pos` once with release ordering, after checking that the file was
    /// not truncated meanwhile (a caller may have spent seconds printing the
    /// batch; a store past the end of the file would be a SIGBUS).
    pub fn commit(&mut self, n: usize) -> Result<(), RingError> {
        let n = (n as u64).min(self.uncommitted);
        if n == 0 {
            return Ok(());
        }
        if self.mode == ReadMode::Consume {
            self.check_file()?;
        }
        let next = (self.uncommitted_from + n) & self.mask;
        self.uncommitted -= n;
        self.uncommitted_from = next;
        match self.mode {
            ReadMode::Consume => self
                .header
                .u64_at(layout::READ_POS_OFFSET)
                .store(next, Ordering::Release),
            ReadMode::Peek => {
                self.peek_pos = next;
                if let Some(following) = &mut self.following {
                    following.drop_front(n, self.layout.slot.size);
                }
            }
        }
        Ok(())
    }

    /// [`RingReader::peek_slot_bytes`] of a reader following the writer:
    /// settles a copy the writer may have been writing into, hands out what
    /// is held, or copies the slots up to `write_pos` afresh.
    fn peek_following(
        &mut self,
        following: &mut Following,
        slots: &mut Vec<u8>,
        max: usize,
    ) -> Result<usize, RingError> {
        let size = self.layout.slot.size;
        slots.clear();
        if let Some(unsettled) = following.unsettled {
            let Some(over) = self.settle(&unsettled)? else {
                return Ok(0);
            };
            following.unsettled = None;
            self.skip_following(following, over.saturating_sub(unsettled.dropped));
        }
        if following.held_slots(size) == 0 && !self.copy_following(following, max)? {
            return Ok(0);
        }
        let held = following.held_slots(size);
        let n = held.min(max as u64) as usize;
        if n as u64 == held && following.start == 0 {
            // Everything: handed over without a copy (a commit of fewer
            // leaves the rest to be read again from the ring).
            std::mem::swap(slots, &mut following.held);
            following.clear();
        } else {
            let from = following.start;
            slots.extend_from_slice(&following.held[from..from + n * size]);
        }
        self.uncommitted = n as u64;
        self.uncommitted_from = self.peek_pos;
        Ok(n)
    }

    /// Copies up to `max` slots from this reader's position up to
    /// `write_pos` into `following`, then drops those the writer may have
    /// written over. Returns whether slots are held to hand out now (not
    /// when there are none, or when the copy must wait to be settled).
    fn copy_following(&mut self, following: &mut Following, max: usize) -> Result<bool, RingError> {
        let size = self.layout.slot.size;
        let first = self.peek_pos;
        let write = self.position(layout::WRITE_POS_OFFSET, "write_pos")?;
        let backlog = write.wrapping_sub(first) & self.mask;
        let n = backlog.min(max as u64);
        if n == 0 {
            return Ok(false);
        }
        following.held.resize(n as usize * size, 0);
        following.start = 0;
        let run = n.min(self.capacity - first) as usize;
        let (before, after) = following.held.split_at_mut(run * size);
        self.read_slots(first, before)?;
        if !after.is_empty() {
            self.read_slots(0, after)?;
        }
        // Everything below is loaded after the copy.
        fence(Ordering::Acquire);
        let trailer = self.trailer.map(|_| self.trailer());
        fence(Ordering::Acquire);
        let read = self.position(layout::READ_POS_OFFSET, "read_pos")?;
        let write_after = self.position(layout::WRITE_POS_OFFSET, "write_pos")?;
        let advance = write_after.wrapping_sub(write) & self.mask;
        let unread = write_after.wrapping_sub(read) & self.mask;
        let consumed = follow::consumed(backlog, advance, unread, n);
        if consumed == 0 {
            // No consumer gave any of them back: the writer cannot have
            // touched them.
            return Ok(true);
        }
        match trailer {
            // NIXL's writer: the slot at write_pos may be being written.
            None => {
                let over = follow::written_over(self.capacity, backlog, advance, 1);
                self.skip_following(following, over);
            }
            // This project's writer, closed or moved aside: done writing.
            Some(Some(t)) if t.closed || t.stale => {
                let over = follow::written_over(self.capacity, backlog, advance, 0);
                self.skip_following(following, over);
            }
            // This project's writer, maybe amid a batch: what it has
            // published reaches so far; the rest waits to be settled.
            Some(trailer) => {
                let over = follow::written_over(self.capacity, backlog, advance, 0);
                self.skip_following(following, over);
                following.unsettled = Some(Unsettled {
                    write_before: write,
                    backlog,
                    dropped: over,
                    write_after,
                    heartbeat_after: trailer.map(|t| t.last_flush_us),
                    consumed,
                });
                return Ok(false);
            }
        }
        Ok(following.held_slots(size) > 0)
    }

    /// How many slots of the unsettled copy, from the oldest, the writer may
    /// have written over, once that is known: `None` while it may still be
    /// writing into them.
    fn settle(&self, unsettled: &Unsettled) -> Result<Option<u64>, RingError> {
        let trailer = self.trailer();
        fence(Ordering::Acquire);
        let write = self.position(layout::WRITE_POS_OFFSET, "write_pos")?;
        let done = trailer.is_some_and(|t| t.closed || t.stale);
        let moved = write != unsettled.write_after
            || trailer.map(|t| t.last_flush_us) != unsettled.heartbeat_after;
        if done || moved {
            // Every write begun before the copy is published by now.
            let advance = write.wrapping_sub(unsettled.write_before) & self.mask;
            return Ok(Some(follow::written_over(
                self.capacity,
                unsettled.backlog,
                advance,
                0,
            )));
        }
        if trailer.is_none() || self.producer_lock_free() {
            // The producer is gone (or its trailer with the file's end),
            // perhaps amid a batch it will never publish: any slot given
            // back may hold part of it.
            return Ok(Some(unsettled.consumed.max(unsettled.dropped)));
        }
        Ok(None)
    }

    /// Skips the oldest `n` slots from this reader's position (held or
    /// not yet copied), counting them as overtaken.
    fn skip_following(&mut self, following: &mut Following, n: u64) {
        following.drop_front(n, self.layout.slot.size);
        self.peek_pos = (self.peek_pos + n) & self.mask;
        self.overtaken += n;
    }

    /// Appends up to `max` waiting events to `out` and advances past them:
    /// [`RingReader::peek_batch`] then [`RingReader::commit`]. Returns how many.
    pub fn read_batch(&mut self, out: &mut Vec<Event>, max: usize) -> Result<usize, RingError> {
        let n = self.peek_batch(out, max)?;
        self.commit(n)?;
        Ok(n)
    }

    /// Reads the slots from `first_slot` on into `into` (whole slots).
    fn read_slots(&self, first_slot: u64, into: &mut [u8]) -> Result<(), RingError> {
        let offset = self.layout.slot_offset(first_slot);
        self.file
            .read_exact_at(into, offset)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::UnexpectedEof => RingError::Truncated {
                    path: self.path.clone(),
                    size: self.file.metadata().map(|m| m.len()).unwrap_or(0),
                    needed: offset + into.len() as u64,
                },
                _ => RingError::io(&self.path, "read slots", e),
            })?;
        Ok(())
    }

    /// Whether no process holds the advisory lock this project's writers
    /// keep on their ring for their whole life (`flock`, see
    /// `docs/ring-format.md`): for a ring with this project's trailer, `true`
    /// means its producer is gone, cleanly or not. Takes a shared lock without
    /// waiting and releases it at once (a producer adopting the file meanwhile
    /// waits up to 31 ms for such a lock). NIXL's own writers take no lock: for
    /// their rings (no trailer) the answer says nothing.
    pub fn producer_lock_free(&self) -> bool {
        match self.file.try_lock_shared() {
            Ok(()) => {
                // Released at once: the lock was only a question.
                let _ = self.file.unlock();
                true
            }
            Err(_) => false,
        }
    }

    /// Why a trailer found at open (its magic matched) was ignored.
    pub fn trailer_problem(&self) -> Option<TrailerProblem> {
        self.trailer_problem
    }

    /// The trailer, when the file has one (files written by this project do).
    /// `None` also when it can no longer be read (the file was truncated).
    pub fn trailer(&self) -> Option<TrailerInfo> {
        let format = self.trailer?;
        let mut b = [0u8; layout::TRAILER_SIZE];
        self.file
            .read_exact_at(&mut b[..format.known], format.offset)
            .ok()?;
        let u64_at = |off: usize| u64::from_le_bytes(b[off..off + 8].try_into().unwrap());
        let u32_at = |off: usize| u32::from_le_bytes(b[off..off + 4].try_into().unwrap());
        Some(TrailerInfo {
            version: u32_at(trailer::VERSION),
            producer_pid: u32_at(trailer::PRODUCER_PID),
            closed: u32_at(trailer::FLAGS) & trailer::FLAG_CLOSED != 0,
            stale: u32_at(trailer::FLAGS) & trailer::FLAG_STALE != 0,
            created_us: u64_at(trailer::CREATED_US),
            events_written: u64_at(trailer::EVENTS_WRITTEN),
            dropped_staging_full: u64_at(trailer::DROPPED_STAGING_FULL),
            dropped_ring_full: u64_at(trailer::DROPPED_RING_FULL),
            last_flush_us: u64_at(trailer::LAST_FLUSH_US),
            // Zero-filled beyond a version-1 trailer's 64 bytes.
            dropped_format: u64_at(trailer::DROPPED_FORMAT),
        })
    }
}
