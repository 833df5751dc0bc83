//! The ways to look at NIXL telemetry rings, each a command of
//! `nixl-telemetry` (which only parses its arguments and calls in here):
//!
//! * [`read`]: the reader, `telemetry_reader` and `nixl-telemetry read`:
//!   every event as a text block or a JSON line, or a summary table;
//! * [`top`]: a live view of every agent (full screen, or `--plain` lines);
//! * [`report`]: charts of a run as one HTML page and PNG files.
//!
//! What they share, each in a module named for it: which ring files to read
//! ([`ring_files`]), how many events a producer lost ([`lost`]), text made
//! safe for a terminal ([`printable`]), local dates ([`local_date`]), human
//! units ([`units`]), bounded line inputs ([`lines`]) and SIGINT/SIGTERM as a
//! flag ([`signal`]). Ring slots become events through the library's
//! [`SlotConverter`](nixl_telemetry::ring::SlotConverter), as in the `export`
//! sidecar, so every view sees what an exporter sees.

#![forbid(unsafe_code)]

pub mod lines;
pub mod local_date;
pub mod lost;
pub mod printable;
pub mod read;
pub mod report;
pub mod ring_files;
pub mod signal;
pub mod top;
pub mod units;
