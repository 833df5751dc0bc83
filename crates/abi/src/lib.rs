//! The stable layouts of NIXL telemetry, written once and shared by every part.
//!
//! * [`event`]: the 56-byte event ([`Event`]) that is both a ring slot and the
//!   plug-in ABI's `nixl_telemetry_event_t`, plus [`Category`].
//! * [`ring`]: the version-1 ring-file layout (header offsets, slot size) and the
//!   trailer this project appends after the slots.
//! * [`plugin`]: the exporter plug-in C ABI, version 1 (`nixl_telemetry_plugin_t`).
//! * [`export`]: the Rust side for plug-in authors: the [`export::PluginExporter`]
//!   trait and the [`export_plugin!`] macro that turns a type into a plug-in.
//!
//! This crate has no dependencies. Changing any layout here is a format change and
//! needs a version bump (see `docs/ring-format.md` and `docs/plugins.md`).

pub mod event;
pub mod export;
pub mod plugin;
pub mod ring;

pub use event::{Category, Event, EVENT_NAME_CAPACITY, MAX_EVENT_NAME_LEN};
