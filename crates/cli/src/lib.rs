//! The library behind the `nixl-telemetry` binary's own subcommands: `emit`
//! and `process`, here so that the fuzz targets in `fuzz/` reach their input
//! handling. The other subcommands live in their own crates
//! (`nixl-telemetry-export`, `nixl-telemetry-views`); the binary parses the
//! command line and dispatches.

#![forbid(unsafe_code)]

pub mod emit;
pub mod process;

/// Bounded line inputs (`emit --events`, `process --input`), shared with
/// `report`; re-exported for the fuzz targets.
pub use nixl_telemetry_views::lines;
