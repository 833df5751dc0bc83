//! The library behind the `nixl-telemetry` and `telemetry_reader` binaries:
//! the telemetry reader ([`read`]) and the stop-signal flag both use
//! ([`signal`]). Each binary only parses its command line and calls in here;
//! `emit` and `process` (the subcommands of `nixl-telemetry`) live here too, so
//! that the fuzz targets in `fuzz/` reach their input handling; so does `export`
//! (the sidecar), which the benchmarks drive.

#![forbid(unsafe_code)]

pub mod emit;
pub mod export;
pub mod lines;
pub mod lost;
pub mod process;
pub mod read;
pub mod report;
pub mod ring_files;
pub mod signal;
pub mod top;
pub mod units;
