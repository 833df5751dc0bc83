//! The version-1 shared-memory ring file: [`RingWriter`] (the producer side of the
//! built-in `buffer` exporter) and [`RingReader`] (consuming or peeking readers).
//!
//! The layout is defined once in [`nixl_telemetry_abi::ring`]; see
//! `docs/ring-format.md`. All `unsafe` of the ring lives in its `mapping` module.

mod error;
mod mapping;
mod reader;
mod writer;

pub use error::RingError;
pub use reader::{ReadMode, RingHeader, RingReader, TrailerInfo};
pub use writer::{RingWriter, TrailerCounts};
