//! The errors of creating a telemetry instance ([`TelemetryError`]) and of
//! loading an exporter plug-in ([`PluginError`]): each names what was wrong,
//! the file or setting involved and what is accepted.

use std::path::PathBuf;

use crate::config::ConfigError;
use crate::exporter::plugin::SearchedPath;
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
    /// An exporter plug-in cannot be found, loaded or instantiated (boxed: the
    /// error carries the whole search trail).
    #[error(transparent)]
    Plugin(Box<PluginError>),
    /// The flush thread could not be started.
    #[error("cannot start the telemetry flush thread: {0}")]
    Thread(#[source] std::io::Error),
}

impl From<PluginError> for TelemetryError {
    fn from(err: PluginError) -> TelemetryError {
        TelemetryError::Plugin(Box::new(err))
    }
}

/// Writes `; searched: a (origin), b (origin)` for an error message.
struct Searched<'a>(&'a [SearchedPath]);

impl std::fmt::Display for Searched<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            return f.write_str("searched no directory");
        }
        f.write_str("searched ")?;
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

/// Why an exporter plug-in could not be used.
///
/// Every message names the plug-in, the file (when one was found), the
/// candidate paths searched in order, and the cause.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PluginError {
    /// The name cannot be a plug-in's: it would reach outside the search
    /// directories or is not a file name.
    #[error("{0:?} is not an exporter plug-in name; accepted: letters, digits, '_', '-' and '.', not starting with '.' (the file is libtelemetry_exporter_<name>.so)")]
    InvalidName(String),
    /// No directory of the search path holds `libtelemetry_exporter_<name>.so`.
    #[error("exporter plug-in {name:?}: {file} not found; {}", Searched(searched))]
    NotFound {
        /// The plug-in's name.
        name: String,
        /// The file name looked for.
        file: String,
        /// Every candidate path, in search order.
        searched: Vec<SearchedPath>,
    },
    /// The file exists but the dynamic loader refuses it.
    #[error(
        "exporter plug-in {name:?}: {} is not a loadable library: {cause}; {}",
        path.display(),
        Searched(searched)
    )]
    NotLoadable {
        /// The plug-in's name.
        name: String,
        /// The file found.
        path: PathBuf,
        /// The loader's message (also the error's `source`).
        #[source]
        cause: libloading::Error,
        /// Candidate paths up to and including the one found.
        searched: Vec<SearchedPath>,
    },
    /// The file is an ELF file cut short (a half-written install or a truncated
    /// copy): loading it would kill the process inside the loader.
    #[error(
        "exporter plug-in {name:?}: {} is not a complete library: {defect}; reinstall the plug-in; {}",
        path.display(),
        Searched(searched)
    )]
    IncompleteFile {
        /// The plug-in's name.
        name: String,
        /// The file found.
        path: PathBuf,
        /// What is wrong with it (also the error's `source`).
        #[source]
        defect: crate::exporter::plugin::ElfDefect,
        /// Candidate paths up to and including the one found.
        searched: Vec<SearchedPath>,
    },
    /// A required symbol is not exported.
    #[error(
        "exporter plug-in {name:?}: {} does not export {symbol}: {cause}; {}",
        path.display(),
        Searched(searched)
    )]
    MissingSymbol {
        /// The plug-in's name.
        name: String,
        /// The file found.
        path: PathBuf,
        /// The missing symbol.
        symbol: &'static str,
        /// The loader's message (also the error's `source`).
        #[source]
        cause: libloading::Error,
        /// Candidate paths up to and including the one found.
        searched: Vec<SearchedPath>,
    },
    /// The init function returned NULL.
    #[error(
        "exporter plug-in {name:?}: the init function of {} returned NULL; {}",
        path.display(),
        Searched(searched)
    )]
    InitFailed {
        /// The plug-in's name.
        name: String,
        /// The file found.
        path: PathBuf,
        /// Candidate paths up to and including the one found.
        searched: Vec<SearchedPath>,
    },
    /// The plug-in speaks another ABI version.
    #[error(
        "exporter plug-in {name:?}: {} has api_version {found}, this host accepts only {accepted}; {}",
        path.display(),
        Searched(searched)
    )]
    UnsupportedApiVersion {
        /// The plug-in's name.
        name: String,
        /// The file found.
        path: PathBuf,
        /// The descriptor's `api_version`.
        found: u32,
        /// The version this host accepts.
        accepted: u32,
        /// Candidate paths up to and including the one found.
        searched: Vec<SearchedPath>,
    },
    /// The library exports only `nixl_telemetry_plugin_init`, the entry point
    /// of NIXL's C++ plug-ins (and of plug-ins built against earlier versions
    /// of this ABI), and what it returned is not a descriptor of this ABI: a
    /// plug-in for NIXL itself (or a NIXL adapter without its mark).
    #[error(
        "exporter plug-in {name:?}: {} is not a nixl-telemetry plug-in: it exports only nixl_telemetry_plugin_init, the entry point of NIXL's own C++ plug-ins, and what that returned is not a nixl-telemetry descriptor (api_version {api_version}); NIXL loads such files itself, our exporters are libtelemetry_exporter_<name>.so exporting nixl_telemetry_exporter_plugin_init; {}",
        path.display(),
        Searched(searched)
    )]
    ForeignPlugin {
        /// The plug-in's name.
        name: String,
        /// The file found.
        path: PathBuf,
        /// The first four bytes of what it returned, read as `api_version`.
        api_version: u32,
        /// Candidate paths up to and including the one found.
        searched: Vec<SearchedPath>,
    },
    /// The descriptor's `struct_size` is not the size of the version-1 descriptor.
    #[error(
        "exporter plug-in {name:?}: {} has struct_size {found}, this host accepts only {accepted} (api_version 1); {}",
        path.display(),
        Searched(searched)
    )]
    UnsupportedStructSize {
        /// The plug-in's name.
        name: String,
        /// The file found.
        path: PathBuf,
        /// The descriptor's `struct_size`.
        found: u32,
        /// The size this host accepts.
        accepted: u32,
        /// Candidate paths up to and including the one found.
        searched: Vec<SearchedPath>,
    },
    /// A required descriptor field is NULL.
    #[error(
        "exporter plug-in {name:?}: the descriptor of {} is invalid: {reason}; {}",
        path.display(),
        Searched(searched)
    )]
    InvalidDescriptor {
        /// The plug-in's name.
        name: String,
        /// The file found.
        path: PathBuf,
        /// What is wrong.
        reason: &'static str,
        /// Candidate paths up to and including the one found.
        searched: Vec<SearchedPath>,
    },
    /// A parameter cannot be passed as a C string.
    #[error(
        "exporter plug-in {name:?}: {parameter} {value:?} contains a NUL byte and cannot be passed to {}; {}",
        path.display(),
        Searched(searched)
    )]
    InvalidParameter {
        /// The plug-in's name.
        name: String,
        /// The file found.
        path: PathBuf,
        /// The parameter (`agent_name`, `output_path`).
        parameter: &'static str,
        /// Its value.
        value: String,
        /// Candidate paths up to and including the one found.
        searched: Vec<SearchedPath>,
    },
    /// `create_exporter` returned NULL.
    #[error(
        "exporter plug-in {name:?}: {} could not create an exporter for agent {agent:?}: {reason}; {}",
        path.display(),
        Searched(searched)
    )]
    CreateFailed {
        /// The plug-in's name.
        name: String,
        /// The file found.
        path: PathBuf,
        /// The agent.
        agent: String,
        /// The reason the plug-in wrote (or a note that it gave none).
        reason: String,
        /// Candidate paths up to and including the one found.
        searched: Vec<SearchedPath>,
    },
}
