//! What plug-ins tell the host besides return codes: their log messages
//! (through the callback given to `nixl_telemetry_exporter_set_log`, logged
//! here with `tracing`, rate-limited) and, when a library is unloaded, what
//! became of the events it accepted (`nixl_telemetry_exporter_delivery`),
//! kept for [`delivery_reports`].

use std::ffi::{c_char, c_void, CStr};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use nixl_telemetry_abi::c_abi::{LOG_DEBUG, LOG_ERROR, LOG_INFO, LOG_TRACE};
use nixl_telemetry_abi::plugin_log::{self as abi_log, LogRate, RateVerdict};
use nixl_telemetry_abi::rust_plugin::PluginDelivery;

/// The most messages of one level a plug-in gets into the host's log every
/// [`abi_log::WINDOW`] (a plug-in limits its own too; this bounds one that
/// does not).
pub const HOST_BURST: u32 = 20;

/// The context of one library's log callback.
#[derive(Debug)]
pub(super) struct HostLogContext {
    plugin: String,
    rate: Mutex<LogRate<i32>>,
}

impl HostLogContext {
    pub(super) fn new(plugin: &str) -> HostLogContext {
        HostLogContext {
            plugin: plugin.to_owned(),
            rate: Mutex::new(LogRate::new(abi_log::WINDOW, HOST_BURST)),
        }
    }

    /// The pointer handed to the plug-in with the callback.
    pub(super) fn as_pointer(&self) -> *mut c_void {
        std::ptr::from_ref(self).cast_mut().cast()
    }
}

/// The log callback given to every plug-in that exports
/// `nixl_telemetry_exporter_set_log`: the message, as one line, goes to
/// `tracing` at its level with the plug-in's name.
///
/// # Safety
/// `context` is the pointer of a live [`HostLogContext`] (given with this
/// callback); `message` is NULL or a NUL-terminated string.
pub(super) unsafe extern "C" fn host_log(context: *mut c_void, level: i32, message: *const c_char) {
    // Nothing may unwind into the plug-in.
    let _ = std::panic::catch_unwind(|| {
        if context.is_null() || message.is_null() {
            return;
        }
        // SAFETY: per the contract above: the library's context outlives every
        // call (set_log with NULL runs before it is dropped).
        let context = unsafe { &*context.cast::<HostLogContext>() };
        // SAFETY: NUL-terminated per the contract.
        let text = unsafe { CStr::from_ptr(message) }.to_string_lossy();
        let verdict = context
            .rate
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .check(level, Instant::now());
        let RateVerdict::Pass { held_back } = verdict else {
            return;
        };
        let mut text = abi_log::one_line(&text);
        if held_back > 0 {
            text.push_str(&abi_log::held_back_note(held_back));
        }
        let plugin = context.plugin.as_str();
        match level {
            LOG_ERROR => tracing::error!("plug-in {plugin}: {text}"),
            LOG_INFO => tracing::info!("plug-in {plugin}: {text}"),
            LOG_DEBUG => tracing::debug!("plug-in {plugin}: {text}"),
            LOG_TRACE => tracing::trace!("plug-in {plugin}: {text}"),
            _ => tracing::warn!("plug-in {plugin}: {text}"),
        }
    });
}

/// What a plug-in library said, when it was unloaded, became of the events
/// its exporters accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryReport {
    /// The name in the plug-in's descriptor.
    pub plugin: String,
    /// The file it was loaded from.
    pub path: PathBuf,
    /// Its figures.
    pub delivery: PluginDelivery,
}

static REPORTS: Mutex<Vec<DeliveryReport>> = Mutex::new(Vec::new());

/// Keeps what an unloading library reported.
pub(super) fn note_delivery(plugin: &str, path: &Path, delivery: PluginDelivery) {
    REPORTS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(DeliveryReport {
            plugin: plugin.to_owned(),
            path: path.to_owned(),
            delivery,
        });
}

/// Takes the delivery reports of the plug-in libraries unloaded so far (of
/// those that export `nixl_telemetry_exporter_delivery` and track it), the
/// oldest first. A library is unloaded when its last exporter is dropped.
pub fn delivery_reports() -> Vec<DeliveryReport> {
    std::mem::take(&mut *REPORTS.lock().unwrap_or_else(PoisonError::into_inner))
}
