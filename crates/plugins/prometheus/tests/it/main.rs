//! The integration tests of the Prometheus plug-in: through its C entry points
//! and as a library, over real HTTP, with real Prometheus tools.
//!
//! One test binary for the whole crate (one link instead of one per file):
//! a module per area, `cargo test -p nixl-telemetry-exporter-prometheus --test it <module>` runs one.

mod common;

mod c_abi;
mod env_configuration;
mod exposition;
mod http_endpoint;
mod nixl_fixture;
mod reset_clients_cannot_kill_the_host;
mod shared_endpoint;
