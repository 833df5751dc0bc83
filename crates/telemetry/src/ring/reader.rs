//! The consumer side of a ring file: validates everything before it maps.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use nixl_telemetry_abi::ring::{self as layout, trailer};
use nixl_telemetry_abi::Event;

use super::error::RingError;
use super::mapping::Mapping;

/// How a reader treats the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadMode {
    /// Advance `read_pos` in the file as events are read (NIXL's readers do this).
    Consume,
    /// Never write: the file is opened and mapped read-only; the reader keeps its
    /// own position, starting at the file's `read_pos`.
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

    /// Checks the header against the file's size; on success returns the bytes
    /// of header and slots.
    pub fn validate(&self, path: &Path, file_size: u64) -> Result<u64, RingError> {
        if self.version != layout::RING_VERSION {
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
        let needed = layout::v1_size(self.capacity)
            .ok_or_else(|| bad_capacity("it overflows the address space"))?;
        if needed > file_size {
            return Err(RingError::CapacityBeyondFile {
                path: path.to_owned(),
                capacity: self.capacity,
                needed,
                size: file_size,
            });
        }
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
        Ok(needed)
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
}

impl TrailerInfo {
    /// Every event the producer lost.
    pub fn events_lost(&self) -> u64 {
        self.dropped_staging_full
            .saturating_add(self.dropped_ring_full)
    }
}

/// Reads events from a ring file, consuming or peeking.
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
    /// Bytes of header and slots.
    v1_size: u64,
    trailer: Option<TrailerFormat>,
    /// Peek mode: this reader's own position.
    peek_pos: u64,
    /// Events handed out by [`RingReader::peek_batch`] and not yet committed,
    /// and the position they start at.
    uncommitted: u64,
    uncommitted_from: u64,
    /// Peek mode: events a consuming reader took before this one saw them.
    overtaken: u64,
    scratch: Vec<u8>,
}

/// Where a recognised trailer sits.
#[derive(Debug, Clone, Copy)]
struct TrailerFormat {
    offset: u64,
}

fn read_trailer_format(file: &File, v1: u64, file_size: u64) -> Option<TrailerFormat> {
    if file_size < v1 + layout::TRAILER_SIZE as u64 {
        return None;
    }
    let mut head = [0u8; 16];
    file.read_exact_at(&mut head, v1).ok()?;
    let version = u32::from_le_bytes(head[8..12].try_into().ok()?);
    let size = u32::from_le_bytes(head[12..16].try_into().ok()?) as u64;
    // Version 1 or a later version that only grew the trailer.
    let known = head[..8] == layout::TRAILER_MAGIC
        && version >= layout::TRAILER_VERSION
        && size >= layout::TRAILER_SIZE as u64
        && v1 + size <= file_size;
    known.then_some(TrailerFormat { offset: v1 })
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
        let v1_size = header.validate(path, size)?;
        let trailer = read_trailer_format(&file, v1_size, size);
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
            v1_size,
            trailer,
            peek_pos: header.read_pos,
            uncommitted: 0,
            uncommitted_from: 0,
            overtaken: 0,
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

    /// Fails with [`RingError::Truncated`] if the file shrank below its header
    /// and slots. (A lost trailer only makes [`RingReader::trailer`] `None`.)
    pub fn check_size(&self) -> Result<(), RingError> {
        let size = self
            .file
            .metadata()
            .map_err(|e| RingError::io(&self.path, "stat", e))?
            .len();
        let needed = self.v1_size;
        if size < needed {
            return Err(RingError::Truncated {
                path: self.path.clone(),
                size,
                needed,
            });
        }
        Ok(())
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

    /// Peek mode: events a consuming reader took before this reader saw them.
    pub fn overtaken(&self) -> u64 {
        self.overtaken
    }

    /// Events waiting to be read by this reader.
    pub fn pending(&mut self) -> Result<u64, RingError> {
        self.check_size()?;
        let write = self.position(layout::WRITE_POS_OFFSET, "write_pos")?;
        let read = self.read_position(write)?;
        Ok(write.wrapping_sub(read) & self.mask)
    }

    /// Appends up to `max` waiting events to `out`, oldest first, without
    /// advancing the read position; [`RingReader::commit`] advances it. A
    /// consumer that prints events commits only what it printed, so a failed
    /// write loses nothing. Checks the file size and both positions first.
    pub fn peek_batch(&mut self, out: &mut Vec<Event>, max: usize) -> Result<usize, RingError> {
        self.uncommitted = 0;
        self.check_size()?;
        let write = self.position(layout::WRITE_POS_OFFSET, "write_pos")?;
        let read = self.read_position(write)?;
        let n = ((write.wrapping_sub(read) & self.mask) as usize).min(max);
        if n == 0 {
            return Ok(0);
        }
        let first = n.min((self.capacity - read) as usize);
        self.read_slots(read, first, out)?;
        self.read_slots(0, n - first, out)?;
        self.uncommitted = n as u64;
        self.uncommitted_from = read;
        Ok(n)
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
            self.check_size()?;
        }
        let next = (self.uncommitted_from + n) & self.mask;
        self.uncommitted -= n;
        self.uncommitted_from = next;
        match self.mode {
            ReadMode::Consume => self
                .header
                .u64_at(layout::READ_POS_OFFSET)
                .store(next, Ordering::Release),
            ReadMode::Peek => self.peek_pos = next,
        }
        Ok(())
    }

    /// Appends up to `max` waiting events to `out` and advances past them:
    /// [`RingReader::peek_batch`] then [`RingReader::commit`]. Returns how many.
    pub fn read_batch(&mut self, out: &mut Vec<Event>, max: usize) -> Result<usize, RingError> {
        let n = self.peek_batch(out, max)?;
        self.commit(n)?;
        Ok(n)
    }

    fn read_slots(
        &mut self,
        first_slot: u64,
        count: usize,
        out: &mut Vec<Event>,
    ) -> Result<(), RingError> {
        if count == 0 {
            return Ok(());
        }
        let bytes = count * Event::SIZE;
        self.scratch.resize(bytes, 0);
        let offset = layout::slot_offset(first_slot);
        self.file
            .read_exact_at(&mut self.scratch, offset)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::UnexpectedEof => RingError::Truncated {
                    path: self.path.clone(),
                    size: self.file.metadata().map(|m| m.len()).unwrap_or(0),
                    needed: offset + bytes as u64,
                },
                _ => RingError::io(&self.path, "read slots", e),
            })?;
        out.reserve(count);
        out.extend(
            self.scratch
                .chunks_exact(Event::SIZE)
                .map(|chunk| Event::from_bytes(chunk.try_into().expect("56-byte chunk"))),
        );
        Ok(())
    }

    /// The trailer, when the file has one (files written by this project do).
    /// `None` also when it can no longer be read (the file was truncated).
    pub fn trailer(&self) -> Option<TrailerInfo> {
        let format = self.trailer?;
        let mut b = [0u8; layout::TRAILER_SIZE];
        self.file.read_exact_at(&mut b, format.offset).ok()?;
        let u64_at = |off: usize| u64::from_le_bytes(b[off..off + 8].try_into().unwrap());
        let u32_at = |off: usize| u32::from_le_bytes(b[off..off + 4].try_into().unwrap());
        Some(TrailerInfo {
            version: u32_at(trailer::VERSION),
            producer_pid: u32_at(trailer::PRODUCER_PID),
            closed: u32_at(trailer::FLAGS) & trailer::FLAG_CLOSED != 0,
            created_us: u64_at(trailer::CREATED_US),
            events_written: u64_at(trailer::EVENTS_WRITTEN),
            dropped_staging_full: u64_at(trailer::DROPPED_STAGING_FULL),
            dropped_ring_full: u64_at(trailer::DROPPED_RING_FULL),
            last_flush_us: u64_at(trailer::LAST_FLUSH_US),
        })
    }
}
