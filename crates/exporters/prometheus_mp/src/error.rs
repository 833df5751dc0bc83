//! Why a multi-process exporter cannot be created.

use std::io;
use std::path::PathBuf;

use nixl_telemetry_prometheus::SettingsError;
use thiserror::Error;

use crate::layout::MAX_BOUNDS;
use crate::settings::{ENV_DIR, ENV_STALE_TTL};

/// Why [`MultiProcessExporter::with_settings`](crate::MultiProcessExporter::with_settings)
/// (and so the plug-in's `create_exporter`) failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum MpError {
    /// An address, port or bucket setting is unusable.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// The run's directory is not given.
    #[error("prometheus_mp needs {ENV_DIR}: a directory every process of the run shares (created 0700 if missing); set it to a private directory, one per run")]
    NoDirectory,
    /// The stale TTL is not a positive number of seconds.
    #[error("invalid {ENV_STALE_TTL}={value:?}; accepted: a positive number of seconds such as 30 or 2.5")]
    StaleTtl {
        /// The value given.
        value: String,
    },
    /// More bucket bounds than a store holds.
    #[error("NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US lists {bounds} bounds; prometheus_mp stores hold at most {MAX_BOUNDS}")]
    TooManyBuckets {
        /// How many were given.
        bounds: usize,
    },
    /// A text label does not fit its field in the store.
    #[error("the {what} {value:?} is longer than the {limit} bytes a prometheus_mp store holds")]
    TooLong {
        /// Which label.
        what: &'static str,
        /// Its value.
        value: String,
        /// The most bytes allowed.
        limit: usize,
    },
    /// The directory cannot be created, opened or used.
    #[error("prometheus_mp cannot use {ENV_DIR}={path:?}: {reason}")]
    Directory {
        /// The directory.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A file of the directory cannot be created or set up.
    #[error("prometheus_mp cannot {action} {path:?}: {source}")]
    File {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// Another run serves this directory on another address.
    #[error("{ENV_DIR}={dir:?} is already served by a live prometheus_mp owner on {other} (lock file {lock:?}), but this process exports to {ours}: two runs (or two ports) share one directory, so each would publish the other's ranks; give each run its own directory, or one port to all its processes")]
    Misconfigured {
        /// The directory.
        dir: PathBuf,
        /// The other address.
        other: String,
        /// Its lock file.
        lock: PathBuf,
        /// This exporter's address.
        ours: String,
    },
}
