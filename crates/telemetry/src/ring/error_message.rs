//! What a reader tells a person about a ring file it cannot read: every
//! [`RingError`] as one line naming the file, what is wrong with it and what
//! would be accepted. `telemetry_reader`, the `export` sidecar, `top` and
//! `report` all word a broken ring the same way through [`error_message`].

use std::io::ErrorKind;

use super::{ReadMode, RingError};

/// What the reader accepts, for messages.
const ACCEPTED_FILE: &str = "a NIXL ring file (version 1 to 4)";
/// The slot sizes of the versions, for messages.
const SLOT_SIZES: &str =
    "56 bytes each in version 1, 48 or 16 in version 2, 16 in versions 3 and 4";

/// A reader's message for a ring error: the path, what is wrong and what
/// is accepted. `mode` is how the ring was opened (a consuming reader needs
/// write access, a peeking one only read access).
pub fn error_message(err: &RingError, mode: ReadMode) -> String {
    match err {
        RingError::Open { path, source } => {
            let path = path.display();
            match source.kind() {
                ErrorKind::NotFound => format!(
                    "{path}: no such file or directory; expected {ACCEPTED_FILE} or a \
                     directory of ring files"
                ),
                ErrorKind::PermissionDenied if mode == ReadMode::Peek => format!(
                    "{path}: permission denied opening it for reading; the reader needs read access"
                ),
                ErrorKind::PermissionDenied => format!(
                    "{path}: permission denied opening it for reading and writing; consuming \
                     needs write access, --peek reads without writing"
                ),
                _ => format!("{path}: cannot open ({source}); expected a readable ring file"),
            }
        }
        RingError::Io { path, op, source } => format!(
            "{}: cannot {op} ({source}); expected a readable ring file",
            path.display()
        ),
        RingError::NotRegularFile { path } => format!(
            "{}: not a regular file; expected {ACCEPTED_FILE}",
            path.display()
        ),
        RingError::TooShort { path, size } => format!(
            "{}: file is {size} bytes, too short for the 40-byte ring header; accepted: a \
             40-byte header followed by capacity slots ({SLOT_SIZES})",
            path.display()
        ),
        RingError::WrongVersion { path, found } => format!(
            "{}: ring version {found}; this reader accepts versions 1, 2, 3 and 4",
            path.display()
        ),
        RingError::BadCapacity {
            path,
            capacity,
            reason,
        } => {
            let what = if !capacity.is_power_of_two() {
                format!("capacity {capacity} is not a power of two")
            } else if *capacity == 1 {
                "capacity 1: a one-slot ring can hold no event".to_owned()
            } else {
                format!("capacity {capacity} is invalid ({reason})")
            };
            format!(
                "{}: {what}; accepted: a power of two >= 2 (the number of slots)",
                path.display()
            )
        }
        RingError::BadMask {
            path,
            mask,
            capacity,
        } => format!(
            "{}: mask {mask} is not capacity - 1 = {}; accepted: mask = capacity - 1",
            path.display(),
            capacity.wrapping_sub(1)
        ),
        RingError::CapacityBeyondFile {
            path,
            version,
            capacity,
            needed,
            size,
        } => format!(
            "{}: version {version} capacity {capacity} needs {needed} bytes (40-byte header + \
             {capacity} x {}-byte slots) but the file has {size}; accepted: a file holding the \
             header and all its slots",
            path.display(),
            needed.saturating_sub(40) / (*capacity).max(1)
        ),
        RingError::AmbiguousLayout {
            path,
            version,
            capacity,
            size,
            sizes,
        } => format!(
            "{}: version {version} capacity {capacity} matches neither version-2 layout: the \
             file has {size} bytes; accepted: exactly {} bytes (48-byte slots, NIXL 1.1) or {} \
             bytes (16-byte slots, NIXL 1.2), optionally followed by this project's trailer",
            path.display(),
            sizes[0],
            sizes[1]
        ),
        RingError::PositionOutOfRange {
            path,
            field,
            value,
            capacity,
        } => format!(
            "{}: {field} {value} is outside [0, {capacity}); accepted: a slot index below the \
             capacity",
            path.display()
        ),
        RingError::Truncated { path, size, needed } => format!(
            "{}: file truncated to {size} bytes while being read; the reader mapped {needed} \
             bytes (40-byte header and the slots)",
            path.display()
        ),
        other => other.to_string(),
    }
}
