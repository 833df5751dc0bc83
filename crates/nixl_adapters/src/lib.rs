//! Adapters that let NIXL load nixl-telemetry's exporters (OTLP, CSV, our
//! Prometheus, any plug-in of our C ABI) through NIXL's own C++ plug-in
//! interface, one per generation of that interface, and the tools that put
//! them where a NIXL installation looks (`nixl-telemetry-adapters`).
//!
//! An adapter is a small C++ shared library (`cpp/`), built by this crate's
//! build script with g++: NIXL `dlopen`s it as
//! `libtelemetry_exporter_<name>.so`, and it forwards every event, converted
//! to our [`Event`](https://docs.rs/nixl-telemetry-abi) layout, to our plug-in
//! `<name>` (less a leading `nixl_telemetry_`) through our plug-in C ABI. It
//! checks that the NIXL loading it speaks its generation and otherwise answers
//! with an API version NIXL refuses. See `docs/nixl-adapters.md`.
//!
//! This crate's Rust side:
//! * [`generations`]: the table of generations (releases, API version, event
//!   layout, exporter functions);
//! * [`nixl_install`]: finding a NIXL installation and its generation;
//! * [`placement`]: staging the adapters, linking them into NIXL's plug-in
//!   directory, or building an overlay for `NIXL_PLUGIN_DIR`;
//! * [`elf_symbols`]: reading a library's dynamic symbols from its file.

pub mod elf_symbols;
pub mod generations;
pub mod nixl_install;
pub mod placement;

use std::path::PathBuf;

pub use generations::{generation, generation_of_release, EventLayout, Generation, GENERATIONS};

/// Where this build put the adapters: `<dir>/<generation>/nixl_adapter.so`.
pub fn build_dir() -> PathBuf {
    PathBuf::from(env!("NIXL_ADAPTERS_BUILD_DIR"))
}

/// The adapter this build made for `generation`.
pub fn built_adapter(generation: &Generation) -> PathBuf {
    build_dir()
        .join(generation.id)
        .join(placement::BUILT_ADAPTER)
}
