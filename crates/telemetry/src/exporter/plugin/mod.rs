//! Exporter plug-ins loaded at run time through the C ABI (`include/nixl_telemetry_plugin.h`).
//!
//! * [`search`]: where `libtelemetry_exporter_<name>.so` is looked for.
//! * `elf_check` (private): a file whose loadable segments reach past its end
//!   (a truncated copy) is refused before the loader maps it ([`ElfDefect`]).
//! * `library` (private): loading, the descriptor checks, and every call into a
//!   plug-in, the only unsafe code here.
//! * [`LoadedPluginExporter`]: the host's side of one plug-in exporter, the
//!   [`Exporter`] the collector talks to (a plug-in written in Rust implements
//!   `nixl_telemetry_abi::rust_plugin::RustPluginExporter`). It counts failed
//!   calls as lost events, logs them at a bounded rate, logs each distinct
//!   reason the plug-in gives once, and disables a plug-in that reports a panic.
//!
//! * `plugin_log` (private): a plug-in's log messages, through the callback
//!   it is given, into `tracing` (rate-limited), and what it says became of
//!   its events when it is unloaded ([`delivery_reports`]).
//!
//! See `docs/plugins.md` for the ABI, the lifetimes and the failure messages.

mod elf_check;
mod failures;
#[doc(hidden)]
#[allow(unsafe_code)] // fuzzing entry points around the plug-in loader
pub mod fuzzing;
#[allow(unsafe_code)] // loading a plug-in library and calling its C entry points
mod library;
#[allow(unsafe_code)] // the host side of the log callback, called by a plug-in with C pointers
mod plugin_log;
pub mod search;

use std::ffi::CString;
use std::path::Path;
use std::time::Instant;

use nixl_telemetry_abi::c_abi::{library_file_name, EXPORT_OK, EXPORT_PANICKED};
use nixl_telemetry_abi::Event;

use super::{ExportOutcome, Exporter};
use crate::config::TelemetryConfig;
use failures::{FailureLog, FailureReport, ReasonLog, ReasonVerdict, REPORT_INTERVAL};
use library::{PluginLibrary, RawExporter};

pub use crate::error::PluginError;
pub use elf_check::ElfDefect;
pub use failures::{MAX_LOGGED_REASONS, REPORT_INTERVAL as FAILURE_REPORT_INTERVAL};
pub use library::loaded_libraries;
pub use plugin_log::{delivery_reports, DeliveryReport, HOST_BURST as PLUGIN_LOG_BURST};
pub use search::{search_dirs, SearchOrigin, SearchedPath};

/// An exporter living in a plug-in library.
///
/// Dropping it destroys the plug-in's exporter; when it was the last exporter
/// of its library, the plug-in's fini function runs and the library is unloaded.
#[must_use = "dropping it destroys the plug-in's exporter"]
pub struct LoadedPluginExporter {
    name: String,
    agent: String,
    raw: RawExporter,
    disabled: bool,
    export_failures: FailureLog,
    flush_failures: FailureLog,
    reasons: ReasonLog,
}

impl std::fmt::Debug for LoadedPluginExporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedPluginExporter")
            .field("name", &self.name)
            .field("agent", &self.agent)
            .field("path", &self.path())
            .field("disabled", &self.disabled)
            .finish()
    }
}

impl LoadedPluginExporter {
    /// Finds, loads and instantiates plug-in `name` for `agent`: searches
    /// [`search_dirs`], loads the first `libtelemetry_exporter_<name>.so` found
    /// (or shares it when this process already loaded it), checks its
    /// descriptor and calls `create_exporter` with the agent's name,
    /// `config.buffer_size` and `config.output_path`.
    pub fn load(
        name: &str,
        config: &TelemetryConfig,
        agent: &str,
    ) -> Result<LoadedPluginExporter, PluginError> {
        // The configuration checks the name it reads; a name given in code is
        // checked here, so no caller can reach a file outside the search path.
        if crate::config::check_plugin_name("plug-in name", name).is_err() {
            return Err(PluginError::InvalidName(name.to_owned()));
        }
        // NIXL adapters found on the way (files of our name pattern serving
        // NIXL's interface, e.g. in NIXL_PLUGIN_DIR) are passed over.
        let mut nixl_adapters = Vec::new();
        let (library, path, searched) = loop {
            let search = search::locate(name, config, &nixl_adapters);
            let Some(path) = search.found else {
                return Err(PluginError::NotFound {
                    name: name.to_owned(),
                    file: library_file_name(name),
                    searched: search.searched,
                });
            };
            match PluginLibrary::acquire(name, &path, &search.searched)? {
                Some(library) => break (library, path, search.searched),
                None => nixl_adapters.push(path),
            }
        };
        let invalid = |parameter: &'static str, value: &str| PluginError::InvalidParameter {
            name: name.to_owned(),
            path: path.clone(),
            parameter,
            value: value.to_owned(),
            searched: searched.clone(),
        };
        let agent_c = CString::new(agent).map_err(|_| invalid("agent_name", agent))?;
        let output_c = match &config.output_path {
            Some(out) => Some(CString::new(out.as_str()).map_err(|_| invalid("output_path", out))?),
            None => None,
        };
        let raw = RawExporter::create(library, &agent_c, config.buffer_size, output_c.as_ref())
            .map_err(|(library, reason)| PluginError::CreateFailed {
                name: name.to_owned(),
                path: library.path().to_owned(),
                agent: agent.to_owned(),
                reason,
                searched: searched.clone(),
            })?;
        tracing::debug!(
            plugin = name,
            agent,
            path = %raw.library().path().display(),
            "exporter plug-in instantiated"
        );
        Ok(LoadedPluginExporter {
            name: name.to_owned(),
            agent: agent.to_owned(),
            raw,
            disabled: false,
            export_failures: FailureLog::new(REPORT_INTERVAL),
            flush_failures: FailureLog::new(REPORT_INTERVAL),
            reasons: ReasonLog::default(),
        })
    }

    /// The file the plug-in was loaded from (symlinks resolved).
    pub fn path(&self) -> &Path {
        self.raw.library().path()
    }

    /// The name in the plug-in's descriptor.
    pub fn plugin_name(&self) -> &str {
        self.raw.library().plugin_name()
    }

    /// The version in the plug-in's descriptor.
    pub fn plugin_version(&self) -> &str {
        self.raw.library().plugin_version()
    }

    /// Whether the plug-in has `export_batch` (else the host loops `export_event`).
    pub fn has_export_batch(&self) -> bool {
        self.raw.library().has_export_batch()
    }

    /// Whether the plug-in reported a panic; a disabled exporter is never called
    /// again (but is still destroyed) and every later event counts as failed.
    pub fn is_disabled(&self) -> bool {
        self.disabled
    }

    fn disable(&mut self, function: &str) {
        self.disabled = true;
        let reason = self.raw.last_error();
        tracing::error!(
            plugin = %self.name,
            agent = %self.agent,
            path = %self.path().display(),
            function,
            reason = reason.as_deref().unwrap_or("(the plug-in gives none)"),
            "exporter plug-in panicked; it is disabled and every later event is counted as lost"
        );
    }

    /// Logs the reason the plug-in gives for a failed call of `function`, the
    /// first time that reason is given.
    fn log_reason(&mut self, function: &str) {
        let Some(reason) = self.raw.last_error() else {
            return;
        };
        match self.reasons.note(&reason) {
            ReasonVerdict::New => tracing::warn!(
                plugin = %self.name,
                agent = %self.agent,
                function,
                reason = %reason,
                "exporter plug-in call failed: {reason} (each distinct reason is logged once)"
            ),
            ReasonVerdict::LimitReached => tracing::warn!(
                plugin = %self.name,
                agent = %self.agent,
                function,
                reason = %reason,
                "exporter plug-in call failed: {reason} (the plug-in has given {} distinct reasons; further new ones are not logged)",
                failures::MAX_LOGGED_REASONS
            ),
            ReasonVerdict::Seen | ReasonVerdict::Dropped => {}
        }
    }

    fn log_export_failure(&self, report: FailureReport) {
        if report.first {
            tracing::warn!(
                plugin = %self.name,
                agent = %self.agent,
                code = report.code,
                events_lost = report.events,
                "exporter plug-in failed to export; the events are counted as lost and telemetry goes on \
                 (further failures are reported at most every {} s)",
                REPORT_INTERVAL.as_secs()
            );
        } else {
            tracing::warn!(
                plugin = %self.name,
                agent = %self.agent,
                code = report.code,
                failed_calls = report.calls,
                events_lost = report.events,
                events_lost_total = report.total_events,
                "exporter plug-in keeps failing"
            );
        }
    }

    fn log_flush_failure(&self, report: FailureReport) {
        tracing::warn!(
            plugin = %self.name,
            agent = %self.agent,
            code = report.code,
            failed_calls = report.calls,
            "exporter plug-in failed to flush"
        );
    }

    fn note_export_failure(&mut self, events: usize, code: i32) {
        if let Some(report) = self.export_failures.record(Instant::now(), events, code) {
            self.log_export_failure(report);
        }
    }
}

impl Exporter for LoadedPluginExporter {
    fn name(&self) -> &str {
        &self.name
    }

    fn export(&mut self, events: &[Event]) -> ExportOutcome {
        if self.disabled {
            return ExportOutcome::failed(events.len());
        }
        if events.is_empty() {
            return ExportOutcome::default();
        }
        if let Some(code) = self.raw.export_batch(events) {
            return match code {
                EXPORT_OK => ExportOutcome::delivered(events.len()),
                EXPORT_PANICKED => {
                    self.disable("export_batch");
                    ExportOutcome::failed(events.len())
                }
                code => {
                    self.log_reason("export_batch");
                    self.note_export_failure(events.len(), code);
                    ExportOutcome::failed(events.len())
                }
            };
        }
        let mut outcome = ExportOutcome::default();
        let mut last_failure = EXPORT_OK;
        for (i, event) in events.iter().enumerate() {
            match self.raw.export_event(event) {
                EXPORT_OK => outcome.delivered += 1,
                EXPORT_PANICKED => {
                    outcome.failed += events.len() - i;
                    self.disable("export_event");
                    break;
                }
                code => {
                    self.log_reason("export_event");
                    outcome.failed += 1;
                    last_failure = code;
                }
            }
        }
        if last_failure != EXPORT_OK {
            let lost = outcome.failed;
            self.note_export_failure(lost, last_failure);
        }
        outcome
    }

    fn flush(&mut self) {
        if self.disabled {
            return;
        }
        match self.raw.flush() {
            None | Some(EXPORT_OK) => {}
            Some(EXPORT_PANICKED) => self.disable("flush"),
            Some(code) => {
                self.log_reason("flush");
                if let Some(report) = self.flush_failures.record(Instant::now(), 0, code) {
                    self.log_flush_failure(report);
                }
            }
        }
    }
}

impl Drop for LoadedPluginExporter {
    fn drop(&mut self) {
        if let Some(report) = self.export_failures.pending() {
            self.log_export_failure(report);
        }
        if let Some(report) = self.flush_failures.pending() {
            self.log_flush_failure(report);
        }
    }
}
