//! The integration tests of the metric processor: its rules, the reference
//! fixtures and the registry files.
//!
//! One test binary for the whole crate (one link instead of one per file):
//! a module per area, `cargo test -p nixl-telemetry-processor --test it <module>` runs one.

mod atomic_records;
mod many_gpu_names;
mod process_line;
mod processor_rules;
mod reference_fixtures;
mod registry_files;
mod repeated_records;
