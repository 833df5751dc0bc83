//! The errors of ring files: opening, validating and reading them. Each names
//! the file, and keeps the system error that caused it as its source.

use std::io;
use std::path::PathBuf;

/// What went wrong with a ring file. Every variant names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RingError {
    /// The file could not be opened (missing, no permission...): readers
    /// tell these apart by the cause's [`io::ErrorKind`].
    #[error("{path}: cannot open: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A system call on the file failed.
    #[error("{path}: cannot {op}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The ring path is a symbolic link; producers never follow one.
    #[error(
        "{path}: is a symbolic link; refusing to follow it (accepted: a regular file or no file)"
    )]
    Symlink {
        /// The file.
        path: PathBuf,
    },
    /// The path exists but is not a regular file.
    #[error("{path}: is not a regular file (accepted: a ring file)")]
    NotRegularFile {
        /// The path.
        path: PathBuf,
    },
    /// Another live producer holds the ring.
    #[error("{path}: is in use by another running producer{}; refusing to take it over", .pid.map(|p| format!(" (pid {p})")).unwrap_or_default())]
    InUse {
        /// The file.
        path: PathBuf,
        /// The producer's pid, from the trailer, when known.
        pid: Option<u32>,
    },
    /// The file is shorter than the 40-byte header.
    #[error("{path}: file is {size} bytes, too short for the 40-byte ring header")]
    TooShort {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
    },
    /// The header's version is none of 1–4.
    #[error("{path}: ring version {found} is not supported (accepted: 1, 2, 3, 4)")]
    WrongVersion {
        /// The file.
        path: PathBuf,
        /// The version found.
        found: i32,
    },
    /// The capacity is unusable.
    #[error("{path}: capacity {capacity} is invalid: {reason} (accepted: a power of two ≥ 2)")]
    BadCapacity {
        /// The file.
        path: PathBuf,
        /// The capacity found.
        capacity: u64,
        /// Why it is unusable.
        reason: &'static str,
    },
    /// The mask is not capacity − 1.
    #[error("{path}: mask {mask} does not match capacity {capacity} (accepted: capacity - 1)")]
    BadMask {
        /// The file.
        path: PathBuf,
        /// The mask found.
        mask: u64,
        /// The capacity found.
        capacity: u64,
    },
    /// The header promises more slots than the file holds.
    #[error(
        "{path}: header says version {version}, capacity {capacity} ({needed} bytes) but the file is {size} bytes"
    )]
    CapacityBeyondFile {
        /// The file.
        path: PathBuf,
        /// The version found.
        version: i32,
        /// The capacity found.
        capacity: u64,
        /// Bytes the header and slots need.
        needed: u64,
        /// The file's size.
        size: u64,
    },
    /// The version has two layouts and the file's size fits neither.
    #[error(
        "{path}: version {version} with capacity {capacity} is {} bytes (48-byte slots, NIXL 1.1) or {} bytes (16-byte slots, NIXL 1.2), but the file is {size} bytes",
        .sizes[0], .sizes[1]
    )]
    AmbiguousLayout {
        /// The file.
        path: PathBuf,
        /// The version found.
        version: i32,
        /// The capacity found.
        capacity: u64,
        /// The file's size.
        size: u64,
        /// The sizes of the version's layouts.
        sizes: [u64; 2],
    },
    /// A position is outside `[0, capacity)`.
    #[error("{path}: {field} = {value} is outside [0, {capacity})")]
    PositionOutOfRange {
        /// The file.
        path: PathBuf,
        /// `write_pos` or `read_pos`.
        field: &'static str,
        /// The value found.
        value: u64,
        /// The capacity.
        capacity: u64,
    },
    /// [`RingReader::peek_batch`](super::RingReader::peek_batch) hands out
    /// version-1 events only.
    #[error(
        "{path}: the ring has layout {layout}, not version 1; read it as records (peek_records)"
    )]
    NotVersion1 {
        /// The file.
        path: PathBuf,
        /// The layout's name.
        layout: &'static str,
    },
    /// The name led to another file when it was opened than when its
    /// directory was scanned (it was replaced in between).
    #[error("{path}: the name was given to another file while it was being opened")]
    Changed {
        /// The file.
        path: PathBuf,
    },
    /// The file was rewritten in place in another layout (version,
    /// capacity, mask or size changed since it was opened): a new producer
    /// created its ring over the old one. The reader must be opened again.
    #[error("{path}: rewritten in place while being read: was {was}, now {now}")]
    LayoutChanged {
        /// The file.
        path: PathBuf,
        /// Version, capacity, mask and size when it was opened.
        was: String,
        /// The same, now.
        now: String,
    },
    /// The file shrank below the mapped size while it was being read.
    #[error("{path}: file was truncated to {size} bytes while being read (needs {needed})")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Its size now.
        size: u64,
        /// Bytes the reader had mapped.
        needed: u64,
    },
}

impl RingError {
    pub(crate) fn io(path: &std::path::Path, op: &'static str, source: io::Error) -> RingError {
        RingError::Io {
            path: path.to_owned(),
            op,
            source,
        }
    }
}
