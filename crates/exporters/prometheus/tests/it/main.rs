//! The integration tests of the Prometheus exporter's HTTP endpoint over real
//! sockets.
//!
//! One test binary for the whole crate (one link instead of one per file):
//! a module per area, `cargo test -p nixl-telemetry-prometheus --test it <module>` runs one.

mod connection_slots;
mod refused_requests;
