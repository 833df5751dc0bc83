//! Why an exporter cannot be created.

use std::io;
use std::net::SocketAddr;

use nixl_telemetry_abi::env;
use thiserror::Error;

use crate::settings::SettingsError;

/// Why [`PrometheusExporter::with_settings`](crate::PrometheusExporter::with_settings) (and so the plug-in's `create_exporter`) failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PrometheusError {
    /// A configuration value is unusable.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// The address cannot be bound (held by another process, not local, no
    /// permission).
    #[error("cannot listen for Prometheus scrapes on {addr}: {source}; is another process using it? Choose another address with {} (ip:port) or {}", env::EXPORTER_OUTPUT_PATH, crate::settings::ENV_PORT)]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// A live agent of this name already exports on this endpoint.
    #[error("agent {agent:?} is already exported on {addr} by this process: two agents with one name on one endpoint would produce the same series; give the agents distinct names or distinct addresses")]
    DuplicateAgent {
        /// The agent's name.
        agent: String,
        /// The endpoint's address.
        addr: SocketAddr,
    },
    /// The server thread or its poller could not be started.
    #[error("cannot start the Prometheus HTTP server on {addr}: {source}")]
    Server {
        /// The endpoint's address.
        addr: SocketAddr,
        /// What the system said.
        #[source]
        source: io::Error,
    },
}
