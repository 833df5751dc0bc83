//! The integration tests of the OTLP plug-in, driven through its own C entry
//! points as a host calls them.
//!
//! One test binary for the whole crate (one link instead of one per file): a
//! module per area, `cargo test -p nixl-telemetry-exporter-otlp --test it
//! <module>` runs one. Tests that set the process environment or the plug-in's
//! log subscriber run in a process of their own (`testsupport::child`).

mod creation_errors;
mod log_callback_and_delivery;
