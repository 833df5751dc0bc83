//! The integration tests of the collector, the ring files and the plug-in
//! loader, against real files, real plug-ins and real threads.
//!
//! One test binary for the whole crate (one link instead of one per file):
//! a module per area, `cargo test -p nixl-telemetry --test it <module>` runs one.

mod collector_accounting;
mod fixtures_decode;
mod no_panic_crosses_a_rust_plugin;
mod plugin_c_abi;
mod plugin_csv;
mod plugin_descriptor_sizes;
mod plugin_failure_reasons_are_logged_once;
mod plugin_failures;
mod plugin_faults_never_hold_up_recording;
mod plugin_rust_panic;
mod plugin_sharing;
mod plugin_truncated_file_is_an_error;
mod ring_concurrency;
mod ring_directory;
mod ring_full_disk;
mod ring_layout;
mod ring_ownership;
mod ring_peek_behind_consumer;
mod ring_rewritten_in_place;
mod ring_truncated_under_the_writer;
mod ring_versions;
mod ring_visit_checks_once;
mod staging_out_of_memory;
