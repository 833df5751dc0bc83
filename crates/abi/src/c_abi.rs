//! The exporter plug-in C ABI, version 1 (`include/nixl_telemetry_plugin.h`).
//!
//! A plug-in is a shared library `libtelemetry_exporter_<name>.so` exporting
//! [`INIT_SYMBOL`] (returning a [`PluginDescriptor`]) and [`FINI_SYMBOL`].
//! The host checks `api_version` and `struct_size` before calling anything,
//! calls every function of one exporter from one thread at a time, and destroys
//! every exporter before `fini` and before unloading.
//!
//! The entry points have names of their own. NIXL loads files of the same name
//! pattern from its plug-in directory and calls `nixl_telemetry_plugin_init`
//! there, expecting a C++ object; plug-ins built before this ABI named their
//! entry points that way ([`LEGACY_INIT_SYMBOL`], [`LEGACY_FINI_SYMBOL`]), so
//! NIXL misread them. Hosts still accept the legacy names, with a deprecation
//! warning; new plug-ins never export them.

use core::ffi::{c_char, c_void};
use core::mem::{offset_of, size_of};

use crate::event::Event;

/// `NIXL_TELEMETRY_PLUGIN_API_VERSION`.
pub const PLUGIN_API_VERSION: u32 = 1;

/// Name of the init symbol, NUL-terminated.
pub const INIT_SYMBOL: &[u8] = b"nixl_telemetry_exporter_plugin_init\0";
/// Name of the fini symbol, NUL-terminated.
pub const FINI_SYMBOL: &[u8] = b"nixl_telemetry_exporter_plugin_fini\0";
/// The init symbol's name before it got a name of its own (deprecated): the
/// name NIXL's C++ plug-in loader looks up, with another meaning.
pub const LEGACY_INIT_SYMBOL: &[u8] = b"nixl_telemetry_plugin_init\0";
/// The fini symbol's name before it got a name of its own (deprecated).
pub const LEGACY_FINI_SYMBOL: &[u8] = b"nixl_telemetry_plugin_fini\0";
/// Exported (as a NUL-terminated string naming the NIXL interface generation it
/// serves) by the NIXL adapters (`crates/nixl_adapters`): a file of the plug-in
/// name pattern that is not a plug-in of this ABI, which hosts skip.
pub const NIXL_ADAPTER_SYMBOL: &[u8] = b"nixl_telemetry_nixl_adapter\0";
/// Name of the optional last-error symbol ([`LastErrorFn`]), NUL-terminated.
/// A plug-in may export it; the host looks it up and uses it when present.
pub const LAST_ERROR_SYMBOL: &[u8] = b"nixl_telemetry_exporter_last_error\0";
/// Name of the optional log symbol ([`SetLogFn`]), NUL-terminated: a plug-in
/// that exports it sends its log messages to the host's log through the
/// callback the host gives it. Added to version 1 without changing the
/// descriptor: an old host never calls it (the plug-in then writes its
/// messages to stderr), a new host loads an old plug-in without it.
pub const SET_LOG_SYMBOL: &[u8] = b"nixl_telemetry_exporter_set_log\0";
/// Name of the optional delivery symbol ([`DeliveryFn`]), NUL-terminated.
pub const DELIVERY_SYMBOL: &[u8] = b"nixl_telemetry_exporter_delivery\0";
/// File-name prefix of a plug-in library.
pub const LIBRARY_PREFIX: &str = "libtelemetry_exporter_";
/// File-name suffix of a plug-in library.
pub const LIBRARY_SUFFIX: &str = ".so";

/// Return code of a successful call.
pub const EXPORT_OK: i32 = 0;
/// Return code of a failed call (the exporter stays usable).
pub const EXPORT_FAILED: i32 = -1;
/// Return code of a Rust plug-in whose exporter panicked: it is disabled for good.
pub const EXPORT_PANICKED: i32 = -2;

/// `nixl_telemetry_exporter_params_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CExporterParams {
    /// The agent's name, NUL-terminated; never NULL.
    pub agent_name: *const c_char,
    /// `NIXL_TELEMETRY_BUFFER_SIZE`.
    pub max_events_buffered: usize,
    /// `NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH`, NUL-terminated, or NULL.
    pub output_path: *const c_char,
}

/// `create_exporter`: NULL on failure, with a NUL-terminated reason in `err`.
pub type CreateExporterFn = unsafe extern "C" fn(
    params: *const CExporterParams,
    err: *mut c_char,
    err_len: usize,
) -> *mut c_void;
/// `export_event`: 0 = ok.
pub type ExportEventFn = unsafe extern "C" fn(exporter: *mut c_void, event: *const Event) -> i32;
/// `export_batch`: 0 = ok.
pub type ExportBatchFn =
    unsafe extern "C" fn(exporter: *mut c_void, events: *const Event, count: usize) -> i32;
/// `flush`: 0 = ok.
pub type FlushFn = unsafe extern "C" fn(exporter: *mut c_void) -> i32;
/// `destroy_exporter`.
pub type DestroyExporterFn = unsafe extern "C" fn(exporter: *mut c_void);
/// `nixl_telemetry_exporter_last_error` (optional symbol): writes the reason
/// of `exporter`'s most recent failed call into `err` (NUL-terminated, cut to
/// `err_len` bytes) and returns the reason's full length in bytes, 0 when it
/// has none. The host calls it right after a call returned non-zero, from the
/// thread that made that call.
pub type LastErrorFn =
    unsafe extern "C" fn(exporter: *mut c_void, err: *mut c_char, err_len: usize) -> usize;
/// Level of a log message a plug-in sends ([`LogFn`]): an error.
pub const LOG_ERROR: i32 = 1;
/// Level of a log message: a warning.
pub const LOG_WARN: i32 = 2;
/// Level of a log message: information.
pub const LOG_INFO: i32 = 3;
/// Level of a log message: detail for debugging.
pub const LOG_DEBUG: i32 = 4;
/// Level of a log message: finer detail still.
pub const LOG_TRACE: i32 = 5;

/// `nixl_telemetry_log_fn`: the host's log callback. `level` is one of
/// [`LOG_ERROR`]..[`LOG_TRACE`] (a host treats other numbers as
/// [`LOG_WARN`]), `message` one NUL-terminated line of UTF-8, valid only
/// during the call. The plug-in may call it from any of its threads, also
/// concurrently, until it returns from `set_log` with NULL or from `fini`.
pub type LogFn = unsafe extern "C" fn(context: *mut c_void, level: i32, message: *const c_char);
/// `nixl_telemetry_exporter_set_log` (optional symbol): the host gives its
/// log callback (with `context`, passed back on every call) after `init`,
/// before any `create_exporter`, and takes it back (`log` NULL) before
/// `fini`. Once the call with NULL returns, the plug-in is inside no call of
/// the old callback and starts none. Without a callback the plug-in writes
/// its messages to stderr. The callback must not call `set_log`.
pub type SetLogFn = unsafe extern "C" fn(log: Option<LogFn>, context: *mut c_void);

/// `nixl_telemetry_delivery_t`: what became of the events a plug-in took
/// (all its exporters, since it was loaded). `struct_size` is set by the
/// host; the plug-in fills the fields that fit in it (versioned by size:
/// fields are only ever appended).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CDelivery {
    /// `sizeof(nixl_telemetry_delivery_t)` as the host knows it.
    pub struct_size: u32,
    /// 0.
    pub reserved: u32,
    /// Events the plug-in accepted (export calls that returned 0).
    pub events_accepted: u64,
    /// Of those, events known to have reached their destination.
    pub events_delivered: u64,
    /// Of those, events known never to reach it (given up, rejected, still
    /// unsent when the plug-in stopped). The rest are on their way.
    pub events_undelivered: u64,
}

/// `nixl_telemetry_exporter_delivery` (optional symbol): fills `out` (whose
/// `struct_size` the host set) and returns 0, or returns non-zero when the
/// plug-in does not track delivery (its exporters deliver within the export
/// call, or it cannot tell). The host calls it after the library's last
/// exporter is destroyed, before `fini`, from any thread.
pub type DeliveryFn = unsafe extern "C" fn(out: *mut CDelivery) -> i32;

/// `nixl_telemetry_exporter_plugin_init`.
pub type PluginInitFn = unsafe extern "C" fn() -> *const PluginDescriptor;
/// `nixl_telemetry_exporter_plugin_fini`.
pub type PluginFiniFn = unsafe extern "C" fn();

/// `nixl_telemetry_plugin_t`: what `nixl_telemetry_exporter_plugin_init` returns.
#[repr(C)]
#[derive(Debug)]
pub struct PluginDescriptor {
    /// [`PLUGIN_API_VERSION`].
    pub api_version: u32,
    /// `size_of::<PluginDescriptor>()`.
    pub struct_size: u32,
    /// The plug-in's name, NUL-terminated.
    pub name: *const c_char,
    /// The plug-in's version, NUL-terminated.
    pub version: *const c_char,
    /// Creates one exporter.
    pub create_exporter: Option<CreateExporterFn>,
    /// Exports one event.
    pub export_event: Option<ExportEventFn>,
    /// Exports a batch; may be NULL, then the host loops `export_event`.
    pub export_batch: Option<ExportBatchFn>,
    /// Called after each flush batch; may be NULL.
    pub flush: Option<FlushFn>,
    /// Destroys one exporter.
    pub destroy_exporter: Option<DestroyExporterFn>,
}

// SAFETY: a descriptor is immutable once built and its pointers refer to static,
// NUL-terminated strings and to functions, which every thread may read.
unsafe impl Sync for PluginDescriptor {}
// SAFETY: as above; nothing in it is tied to the thread that built it.
unsafe impl Send for PluginDescriptor {}

#[cfg(target_pointer_width = "64")]
const _: () = {
    assert!(size_of::<CExporterParams>() == 24);
    assert!(offset_of!(CExporterParams, max_events_buffered) == 8);
    assert!(offset_of!(CExporterParams, output_path) == 16);
    assert!(size_of::<PluginDescriptor>() == 64);
    assert!(size_of::<CDelivery>() == 32);
    assert!(offset_of!(CDelivery, events_accepted) == 8);
    assert!(offset_of!(CDelivery, events_delivered) == 16);
    assert!(offset_of!(CDelivery, events_undelivered) == 24);
    assert!(offset_of!(PluginDescriptor, struct_size) == 4);
    assert!(offset_of!(PluginDescriptor, name) == 8);
    assert!(offset_of!(PluginDescriptor, version) == 16);
    assert!(offset_of!(PluginDescriptor, create_exporter) == 24);
    assert!(offset_of!(PluginDescriptor, export_event) == 32);
    assert!(offset_of!(PluginDescriptor, export_batch) == 40);
    assert!(offset_of!(PluginDescriptor, flush) == 48);
    assert!(offset_of!(PluginDescriptor, destroy_exporter) == 56);
};

/// The file name of plug-in `name`: `libtelemetry_exporter_<name>.so`.
pub fn library_file_name(name: &str) -> String {
    format!("{LIBRARY_PREFIX}{name}{LIBRARY_SUFFIX}")
}

/// Writes `message` into a C error buffer of `len` bytes, cut at a character
/// boundary and NUL-terminated. Does nothing when `buf` is NULL or `len` is 0.
///
/// # Safety
/// `buf` must be NULL or valid for writes of `len` bytes.
pub unsafe fn write_error(buf: *mut c_char, len: usize, message: &str) {
    if buf.is_null() || len == 0 {
        return;
    }
    let mut n = message.len().min(len - 1);
    while !message.is_char_boundary(n) {
        n -= 1;
    }
    // SAFETY: the caller guarantees `buf` is valid for `len` bytes and n + 1 <= len;
    // the source is a live &str that cannot overlap a caller-owned C buffer.
    unsafe {
        core::ptr::copy_nonoverlapping(message.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = 0;
    }
}
