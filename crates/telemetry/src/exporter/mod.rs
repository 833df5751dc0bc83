//! The exporter trait and the built-in exporters.
//!
//! Exactly one exporter serves a telemetry instance. The flush side calls it
//! from one thread at a time with batches of at most `buffer_size` events.

mod buffer;
mod nop;
pub mod plugin;

use std::fmt;

pub use buffer::BufferExporter;
pub use nop::NopExporter;

use nixl_telemetry_abi::Event;

use crate::config::{ExporterChoice, TelemetryConfig};
use crate::error::TelemetryError;
use crate::stats::DropCounts;

/// What became of one batch handed to an exporter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportOutcome {
    /// Events the exporter accepted.
    pub delivered: usize,
    /// Events it had no room for (a full ring).
    pub dropped_full: usize,
    /// Events lost because the exporter failed.
    pub failed: usize,
    /// Events the exporter's format cannot carry (a ring version without an
    /// event type for them), dropped.
    pub dropped_format: usize,
}

impl ExportOutcome {
    /// Every event delivered.
    pub fn delivered(n: usize) -> ExportOutcome {
        ExportOutcome {
            delivered: n,
            ..ExportOutcome::default()
        }
    }

    /// Every event lost to a failure.
    pub fn failed(n: usize) -> ExportOutcome {
        ExportOutcome {
            failed: n,
            ..ExportOutcome::default()
        }
    }
}

/// Where flushed events go.
pub trait Exporter: Send {
    /// A short name for messages (`buffer`, `nop`, a plug-in's name).
    fn name(&self) -> &str;
    /// Exports `events` in order and says what became of them. Never panics on
    /// bad input; a failure is reported in the outcome.
    fn export(&mut self, events: &[Event]) -> ExportOutcome;
    /// Called once after each flush's batches.
    fn flush(&mut self) {}
    /// The collector's running loss totals, after each flush, for exporters that
    /// publish them (the ring keeps them in its trailer).
    fn report_drops(&mut self, _totals: &DropCounts) {}
}

impl fmt::Debug for dyn Exporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Exporter({})", self.name())
    }
}

/// Builds the exporter `config` selects for `agent`; `None` means collect only.
pub fn create(
    config: &TelemetryConfig,
    agent: &str,
) -> Result<Option<Box<dyn Exporter>>, TelemetryError> {
    Ok(match &config.exporter {
        ExporterChoice::None => None,
        ExporterChoice::Nop => Some(Box::new(NopExporter::default())),
        ExporterChoice::Buffer { dir } => Some(Box::new(BufferExporter::create(
            dir,
            agent,
            config.buffer_size,
            config.ring_layout,
        )?)),
        ExporterChoice::Plugin { name } => Some(Box::new(plugin::LoadedPluginExporter::load(
            name, config, agent,
        )?)),
    })
}
