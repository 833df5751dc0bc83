//! Creating telemetry from C: the checks before the collector's own.

use nixl_telemetry::{Category, EventHandle, Telemetry};

use crate::names;
use crate::settings::{to_config, NixlTelemetrySettings, SettingsText};
use crate::status::CapiError;

/// Telemetry for the agent named `agent` (bytes read from C), configured
/// from the `NIXL_TELEMETRY_*` variables.
pub fn from_env(agent: Option<&[u8]>) -> Result<Telemetry, CapiError> {
    let agent = names::agent_name(agent)?;
    Ok(Telemetry::from_env(agent)?)
}

/// Telemetry for `agent` configured by a settings struct.
pub fn from_settings(
    agent: Option<&[u8]>,
    settings: &NixlTelemetrySettings,
    text: SettingsText<'_>,
) -> Result<Telemetry, CapiError> {
    let agent = names::agent_name(agent)?;
    let config = to_config(settings, text)?;
    Ok(Telemetry::new(agent, config)?)
}

/// A pre-resolved handle for (`category`, `name`).
pub fn handle(
    telemetry: &Telemetry,
    category: i32,
    name: Option<&[u8]>,
) -> Result<EventHandle, CapiError> {
    let category: Category = names::category(category)?;
    let name = names::event_name(name)?;
    Ok(telemetry.handle(category, name))
}
