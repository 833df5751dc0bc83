//! The built-in `nop` exporter: accepts and discards every event.

use nixl_telemetry_abi::Event;

use super::{ExportOutcome, Exporter};

/// Accepts every event and discards it: telemetry that only collects.
#[derive(Debug, Default)]
pub struct NopExporter {
    seen: u64,
}

impl NopExporter {
    /// Events accepted so far.
    pub fn seen(&self) -> u64 {
        self.seen
    }
}

impl Exporter for NopExporter {
    fn name(&self) -> &str {
        "nop"
    }

    fn export(&mut self, events: &[Event]) -> ExportOutcome {
        self.seen += events.len() as u64;
        ExportOutcome::delivered(events.len())
    }
}
