//! The integration tests of the `nixl-telemetry` command and of the
//! `telemetry_reader` binary, as one test binary (one link of the whole graph
//! instead of one per file): each module was a test file of its own, and
//! runs the built binaries as subprocesses. Run one with a name filter, e.g.
//! `cargo test -p nixl-telemetry-cli --test it serve_cli`.

mod export_support;
mod prometheus_support;
mod read_support;
mod top_support;
mod view_support;

mod accounting_under_stress;
mod demo_run;
mod emit_cli;
mod emit_exporters;
mod export_agents_come_and_go;
mod export_every_layout;
mod export_hostile_directory;
mod export_otlp_delivery;
mod export_stop_is_bounded;
mod process_cli;
mod producer_killed;
mod prometheus_mp_one_sample_per_series;
mod prometheus_mp_ranks;
mod prometheus_real_server;
mod read_consume_peek;
mod read_directory;
mod read_escaping;
mod read_fixtures;
mod read_hostile;
mod read_many_rings;
mod read_python_parity;
mod read_releases;
mod read_replaced_file;
mod read_trailers;
mod report_capture;
mod report_chromium;
mod report_rings;
mod serve_cli;
mod top_beside_the_sidecar;
mod top_plain;
mod top_tmux;
