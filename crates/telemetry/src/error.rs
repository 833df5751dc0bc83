use std::path::PathBuf;

use crate::config::ConfigError;
use crate::ring::RingError;

/// Why a telemetry instance could not be created.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// A setting is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The ring directory cannot be used.
    #[error("ring directory {path}: {reason}")]
    RingDirectory {
        /// The directory.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The ring file cannot be created.
    #[error(transparent)]
    Ring(#[from] RingError),
    /// Plug-in exporters are not available in this build.
    #[error("exporter plug-in {name:?} cannot be loaded: plug-in loading is not available")]
    PluginUnavailable {
        /// The plug-in's name.
        name: String,
    },
    /// The flush thread could not be started.
    #[error("cannot start the telemetry flush thread: {0}")]
    Thread(#[source] std::io::Error),
}
