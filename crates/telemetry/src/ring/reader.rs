//! The consumer side of a ring file: validates everything before it maps.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
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
pub struct RingReader {
    path: PathBuf,
    file: File,
    map: Mapping,
    mode: ReadMode,
    capacity: u64,
    mask: u64,
    has_trailer: bool,
    peek_pos: u64,
}

impl RingReader {
    /// Opens and validates a ring file. The header is checked against the file's
    /// size before anything is mapped.
    pub fn open(path: &Path, mode: ReadMode) -> Result<RingReader, RingError> {
        let file = OpenOptions::new()
            .read(true)
            .write(mode == ReadMode::Consume)
            .open(path)
            .map_err(|e| RingError::io(path, "open", e))?;
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
        let v1 = header.validate(path, size)?;
        let mut magic = [0u8; 8];
        let has_trailer = size >= v1 + layout::TRAILER_SIZE as u64
            && file.read_exact_at(&mut magic, v1).is_ok()
            && magic == layout::TRAILER_MAGIC;
        let len = if has_trailer {
            v1 + layout::TRAILER_SIZE as u64
        } else {
            v1
        };
        let len = usize::try_from(len).map_err(|_| RingError::BadCapacity {
            path: path.to_owned(),
            capacity: header.capacity,
            reason: "it does not fit in memory",
        })?;
        let map = match mode {
            ReadMode::Consume => Mapping::read_write(&file, len),
            ReadMode::Peek => Mapping::read_only(&file, len),
        }
        .map_err(|e| RingError::io(path, "map", e))?;
        Ok(RingReader {
            path: path.to_owned(),
            file,
            map,
            mode,
            capacity: header.capacity,
            mask: header.mask,
            has_trailer,
            peek_pos: header.read_pos,
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

    /// Fails with [`RingError::Truncated`] if the file shrank below the mapping,
    /// so no access can fault on a page past its end.
    pub fn check_size(&self) -> Result<(), RingError> {
        let size = self
            .file
            .metadata()
            .map_err(|e| RingError::io(&self.path, "stat", e))?
            .len();
        let needed = self.map.len() as u64;
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
        let value = self.map.u64_at(offset).load(Ordering::Acquire);
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

    /// The header as it is now.
    pub fn header(&self) -> RingHeader {
        let mut bytes = [0u8; layout::HEADER_SIZE];
        self.map.read_bytes(0, &mut bytes);
        RingHeader::decode(&bytes)
    }

    /// Events waiting to be read by this reader.
    pub fn pending(&self) -> Result<u64, RingError> {
        self.check_size()?;
        let write = self.position(layout::WRITE_POS_OFFSET, "write_pos")?;
        let read = self.read_position()?;
        Ok(write.wrapping_sub(read) & self.mask)
    }

    fn read_position(&self) -> Result<u64, RingError> {
        match self.mode {
            ReadMode::Consume => self.position(layout::READ_POS_OFFSET, "read_pos"),
            ReadMode::Peek => Ok(self.peek_pos),
        }
    }

    /// Appends up to `max` waiting events to `out`, oldest first, and (when
    /// consuming) advances `read_pos` once with release ordering. Checks the file
    /// size and both positions first. Returns how many were read.
    pub fn read_batch(&mut self, out: &mut Vec<Event>, max: usize) -> Result<usize, RingError> {
        self.check_size()?;
        let write = self.position(layout::WRITE_POS_OFFSET, "write_pos")?;
        let read = self.read_position()?;
        let n = ((write.wrapping_sub(read) & self.mask) as usize).min(max);
        if n == 0 {
            return Ok(0);
        }
        let first = n.min((self.capacity - read) as usize);
        self.map
            .read_events(layout::slot_offset(read) as usize, first, out);
        self.map.read_events(layout::HEADER_SIZE, n - first, out);
        let next = (read + n as u64) & self.mask;
        match self.mode {
            ReadMode::Consume => self
                .map
                .u64_at(layout::READ_POS_OFFSET)
                .store(next, Ordering::Release),
            ReadMode::Peek => self.peek_pos = next,
        }
        Ok(n)
    }

    /// The trailer, when the file has one (files written by this project do).
    pub fn trailer(&self) -> Option<TrailerInfo> {
        if !self.has_trailer {
            return None;
        }
        let t = layout::trailer_offset(self.capacity)? as usize;
        let u64_at = |off: usize| self.map.u64_at(t + off).load(Ordering::Acquire);
        let u32_at = |off: usize| self.map.u32_at(t + off).load(Ordering::Acquire);
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
