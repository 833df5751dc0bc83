//! The integration tests of the NIXL adapters: built adapters loaded as NIXL
//! loads them, and our loader passing over them.
//!
//! One test binary for the whole crate (one link instead of one per file):
//! a module per area, `cargo test -p nixl-telemetry-nixl-adapters --test it <module>` runs one.

mod adapters_speak_nixls_binary_interface;
mod event_names_match_the_abi;
mod our_loader_passes_over_adapters;
