//! The C API of NIXL telemetry.
//!
//! This crate builds `libnixl_telemetry.so` and `libnixl_telemetry.a` (the
//! build names them `libnixl_telemetry_capi.*`; `scripts/install.sh` installs
//! them under their C names) for C and C++ hosts. The contract is
//! `include/nixl_telemetry.h` (and the header-only C++ wrapper
//! `include/nixl_telemetry.hpp`); `docs/c-api.md` explains it, and
//! `tests/it/header_matches_rust.rs` compiles the header and compares every name,
//! signature, layout and constant with the definitions here.
//!
//! Every exported function runs inside a panic boundary and returns a status
//! ([`status`]); a NULL telemetry or handle records nothing; invalid input is
//! an error code, never an abort. The only `unsafe` code is in the module
//! holding the exported functions, where raw pointers become references.
#![deny(unsafe_code)]

mod boundary;
pub mod create;
#[allow(unsafe_code)]
pub mod exports;
pub mod names;
pub mod settings;
pub mod stats;
pub mod status;

pub use exports::{NixlTelemetry, NixlTelemetryHandle};
pub use settings::NixlTelemetrySettings;
pub use stats::NixlTelemetryStats;

/// `NIXL_TELEMETRY_C_API_VERSION`: the version of the C API this library
/// implements (also the soname's major number, `libnixl_telemetry.so.1`).
pub const C_API_VERSION: u32 = 1;

/// `NIXL_TELEMETRY_DIRECTION_READ`: data came to this agent (NIXL READ), `agent_rx_*`.
pub const DIRECTION_READ: i32 = 0;
/// `NIXL_TELEMETRY_DIRECTION_WRITE`: data left this agent (NIXL WRITE), `agent_tx_*`.
pub const DIRECTION_WRITE: i32 = 1;
