//! The stable contracts of NIXL telemetry, written once and shared by every part.
//!
//! * [`event`]: the 56-byte event ([`Event`]) that is both a ring slot and the
//!   plug-in ABI's `nixl_telemetry_event_t`, plus [`Category`].
//! * [`buckets`]: the latency histograms' default bounds and the one parser of
//!   `NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US`.
//! * [`names`]: the names of the events the host records itself.
//! * [`env`](mod@env): the `NIXL_TELEMETRY_*` variable names, the one on/off parser and
//!   the one rule for a variable that is not UTF-8.
//! * [`text`]: label-value escaping of the Prometheus text formats.
//! * [`ring`]: the version-1 ring-file layout (header offsets, slot size) and the
//!   trailer this project appends after the slots.
//! * [`c_abi`]: the exporter plug-in C ABI, version 1, as both sides see it
//!   (`nixl_telemetry_plugin_t`, [`c_abi::CExporterParams`]).
//! * [`rust_plugin`]: the plug-in side, for plug-ins written in Rust: the
//!   [`rust_plugin::RustPluginExporter`] trait and the [`export_plugin!`] macro
//!   that turns a type into a plug-in. (The host side is
//!   `nixl_telemetry::exporter::plugin::LoadedPluginExporter`.)
//!
//! * [`plugin_log`]: a plug-in's log messages, to the host's log callback or
//!   to stderr, rate-limited.
//!
//! This crate's one dependency is `tracing-core` (for [`plugin_log`]). Changing any layout here is a format change and
//! needs a version bump (see `docs/ring-format.md` and `docs/plugins.md`).
//!
//! Unsafe code is denied here and allowed only in the modules that need it
//! (each marked `#[allow(unsafe_code)]` where it is declared).

#![deny(unsafe_code)]

pub mod buckets;
#[allow(unsafe_code)] // the C ABI: raw pointers from and to the host, `extern "C"` entry points
pub mod c_abi;
pub mod env;
pub mod event;
pub mod names;
#[allow(unsafe_code)] // the plug-in side of the log callback: a C function pointer the host gave
pub mod plugin_log;
pub mod ring;
#[allow(unsafe_code)] // the entry points `export_plugin!` declares around a Rust exporter
pub mod rust_plugin;
pub mod text;

pub use event::{Category, Event, EVENT_NAME_CAPACITY, MAX_EVENT_NAME_LEN};
