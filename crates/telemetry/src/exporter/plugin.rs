//! Exporter plug-ins loaded at run time through the C ABI.

use nixl_telemetry_abi::Event;

use super::{ExportOutcome, Exporter};
use crate::config::TelemetryConfig;
use crate::error::TelemetryError;

/// An exporter living in a plug-in library.
#[derive(Debug)]
pub struct PluginExporter {
    name: String,
}

impl PluginExporter {
    /// Finds, loads and instantiates plug-in `name` for `agent`.
    pub fn load(
        name: &str,
        _config: &TelemetryConfig,
        _agent: &str,
    ) -> Result<PluginExporter, TelemetryError> {
        Err(TelemetryError::PluginUnavailable {
            name: name.to_owned(),
        })
    }
}

impl Exporter for PluginExporter {
    fn name(&self) -> &str {
        &self.name
    }

    fn export(&mut self, events: &[Event]) -> ExportOutcome {
        ExportOutcome::failed(events.len())
    }
}
