//! Why an exporter cannot be created.

use thiserror::Error;

use crate::settings::SettingsError;

/// Why [`OtlpExporter::with_settings`](crate::OtlpExporter::with_settings) (and
/// so the plug-in's `create_exporter`) failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum OtlpError {
    /// A configuration value is unusable.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// An `https://` endpoint is configured but the system's trust store
    /// yields no certificate to check the collector's with.
    #[error("cannot read the system's trust store for https:// endpoints: {0}; install the CA certificates (ca-certificates) or point SSL_CERT_FILE / SSL_CERT_DIR at them")]
    TrustStore(String),
    /// A live agent of this name already exports through this pipeline.
    #[error("agent {agent:?} is already exported to {url} by this process: two agents with one name would send the same data points; give the agents distinct names")]
    DuplicateAgent {
        /// The agent's name.
        agent: String,
        /// The metrics URL.
        url: String,
    },
    /// The export thread could not be started.
    #[error("cannot start the OTLP export thread: {0}")]
    Thread(#[source] std::io::Error),
}
