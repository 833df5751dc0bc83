//! NIXL telemetry: an always-on event collector for data-transfer agents.
//!
//! * [`Telemetry`]: one agent's handle. Records go into bounded per-thread
//!   staging queues (no lock, no allocation, no system call); a flush thread
//!   moves them every `NIXL_TELEMETRY_RUN_INTERVAL` ms to one [`Exporter`].
//!   Every lost event is counted ([`TelemetryStats`]) and reported as an
//!   `agent_telemetry_events_dropped` event.
//! * [`config`]: the `NIXL_TELEMETRY_*` variables and their errors.
//! * [`exporter`]: the trait and the built-in `buffer` (shared-memory ring) and
//!   `nop` exporters, and plug-ins loaded through the C ABI.
//! * [`ring`]: the version-1 ring file, writer and reader.
//! * [`clock`]: the cheap wall clock of the hot path.
//! * [`fork`]: telling telemetry inherited through `fork()` from the child's own.
//!
//! Unsafe code is denied here and allowed only in the few modules that need it
//! (each marked `#[allow(unsafe_code)]` where it is declared, every block with
//! a `// SAFETY:` comment).

#![deny(unsafe_code)]

#[allow(unsafe_code)] // RDTSC and CPUID: the cycle counter of the hot path's clock
pub mod clock;
mod collector;
pub mod config;
mod error;
pub mod exporter;
pub mod filter;
#[allow(unsafe_code)] // pthread_atfork registration
pub mod fork;
#[allow(unsafe_code)] // the C library's time-zone conversion
pub mod local_time;
pub mod ring;
mod staging;
mod stats;
#[allow(unsafe_code)] // the slot cell whose accesses the callers order
mod sync;
mod telemetry;

pub use collector::EVENTS_DROPPED_EVENT;
pub use config::{ConfigError, ExporterChoice, TelemetryConfig};
pub use error::{PluginError, TelemetryError};
pub use exporter::{ExportOutcome, Exporter};
pub use nixl_telemetry_abi::{Category, Event};
pub use stats::{DropCounts, TelemetryStats};
pub use telemetry::{
    Direction, EventHandle, Telemetry, TelemetryBuilder, MEMORY_DEREGISTERED, MEMORY_REGISTERED,
    RX_BYTES, RX_REQUESTS, TX_BYTES, TX_REQUESTS, XFER_POST_TIME, XFER_TIME,
};

/// The examples of `docs/collector.md`, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/collector.md")]
struct CollectorGuide;

/// The examples of the README, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeExamples;
