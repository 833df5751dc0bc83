//! Helpers shared by the integration tests and benchmarks of several crates
//! (a dev-dependency only; never part of a shipped binary):
//!
//! * the crate root ([`plugins`], re-exported): building C plug-ins with the
//!   system compiler and the workspace's Rust plug-in crates, configurations
//!   from variables, raw event files;
//! * [`capture`]: a `tracing` subscriber that keeps every event;
//! * [`child`]: running one test again in a child process;
//! * [`header_syntax`]: the public headers compiled, syntax only, warnings
//!   as errors;
//! * [`c_values`]: what a C program prints of a header's constants and
//!   layout, checked against the Rust side;
//! * [`panic_boundary`]: every `extern "C"` entry point of a boundary runs
//!   inside a panic guard, checked in the source;
//! * [`loopback`]: loopback addresses for test servers, no port twice;
//! * [`nixl_ring`]: rings as NIXL's own writer writes them (no trailer);
//! * [`promtool`]: Prometheus's `promtool check metrics` on our exposition
//!   text;
//! * [`prometheus_server`]: a real Prometheus server scraping a test's
//!   target, and its query API.

#![forbid(unsafe_code)]

pub mod c_values;
pub mod capture;
pub mod child;
pub mod header_syntax;
pub mod loopback;
pub mod nixl_ring;
pub mod panic_boundary;
pub mod plugins;
pub mod prometheus_server;
pub mod promtool;

pub use plugins::*;
