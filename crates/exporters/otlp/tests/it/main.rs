//! The integration tests of the OTLP exporter: against a real OpenTelemetry
//! receiver, through the host, and its families beside the Prometheus ones.
//!
//! One test binary for the whole crate (one link instead of one per file):
//! a module per area, `cargo test -p nixl-telemetry-otlp --test it <module>` runs one.

mod common;

mod events_as_logs;
mod families_match_prometheus;
mod https_endpoint;
mod metrics_reach_a_real_receiver;
mod retries_are_paced;
mod shutdown_is_bounded;
mod through_the_host;
