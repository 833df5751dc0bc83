//! The integration tests of the C API: C and C++ programs built against the
//! headers and the library, and the header checked against the Rust side.
//!
//! One test binary for the whole crate (one link instead of one per file):
//! a module per area, `cargo test -p nixl-telemetry-capi --test it <module>` runs one.

mod support;

mod c_bad_inputs;
mod c_fork;
mod c_threads;
mod cpp_wrapper;
mod examples_run;
mod header_matches_rust;
mod no_panic_crosses_the_c_api;
mod struct_sizes;
