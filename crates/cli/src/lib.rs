//! The library behind the `nixl-telemetry` and `telemetry_reader` binaries:
//! the telemetry reader ([`read`]) and the stop-signal flag both use
//! ([`signal`]). Each binary only parses its command line and calls in here.

#![forbid(unsafe_code)]

pub mod read;
pub mod signal;
