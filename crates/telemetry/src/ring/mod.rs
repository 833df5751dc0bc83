//! The shared-memory ring file, every version NIXL shipped (1–4):
//! [`RingWriter`] (the producer side of the built-in `buffer` exporter) and
//! [`RingReader`] (consuming or peeking readers, handing out version-1
//! [`Event`](crate::Event)s, version-aware [`RingRecord`]s, or slot bytes whose
//! fields [`SlotView`] reads in place), and [`RingDirectory`] (a directory of
//! rings, one per agent: which files, in which order, what changed, what was
//! refused and why). [`SlotConverter`] turns the slots of any layout into the
//! events an exporter plug-in receives (the `export` sidecar, `top` and
//! `report` all see a ring through it), and [`error_message`] words every
//! [`RingError`] for a person.
//!
//! The layouts are defined once in [`nixl_telemetry_abi::ring`] (re-exported
//! as [`layout`]); see `docs/ring-format.md`. All `unsafe` of the ring lives
//! in its `mapping` module.

mod convert;
mod directory;
mod error;
mod error_message;
mod follow;
#[allow(unsafe_code)] // the shared memory mapping of a ring file
mod mapping;
#[cfg(all(test, loom))]
#[allow(unsafe_code)] // the loom model of the ring protocol writes through loom cells
mod protocol_model;
mod reader;
mod record;
mod writer;

pub use convert::{event_of_type, Converted, SlotConverter, UNKNOWN_TYPE_CATEGORY};
pub use directory::{
    agent_name, is_writer_temp_file, python_sort_key, DirectoryError, DirectoryScan, FileIdentity,
    FileStamp, Refusal, RefusalCause, RingDirectory, RingFile, ScanRules,
};
pub use error::RingError;
pub use error_message::error_message;
pub use nixl_telemetry_abi::ring as layout;
pub use reader::{ReadMode, RingHeader, RingReader, TrailerInfo, TrailerProblem, STALE_WORDS};
pub use record::{event_type_name_field, RingRecord, SlotKey, SlotView};
pub use writer::{PushOutcome, RingWriter, TrailerCounts};
