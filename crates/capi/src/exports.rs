//! The exported C functions, and the only module with `unsafe` code: here raw
//! pointers from C become references and strings, and messages go into the
//! caller's buffers. Everything else is checked and done by safe code.
//!
//! The rules every function relies on (stated in `include/nixl_telemetry.h`):
//! a telemetry or handle pointer is NULL or a live object this library created
//! and not yet destroyed; a string is NULL or NUL-terminated; `err` is NULL or
//! points to `err_len` writable bytes; an output pointer is NULL or writable.
//! NULL is always checked; the rest is the caller's promise.
//!
//! Objects remember the fork generation of the process that created them
//! (`nixl_telemetry::fork`): in a child forked without exec, an inherited
//! telemetry acts as disabled telemetry (every call returns at once and does
//! nothing) and is never flushed, joined or closed there.

use std::ffi::{c_char, CStr};
use std::sync::OnceLock;

use nixl_telemetry::{fork, EventHandle, Telemetry};

use crate::boundary;
use crate::create;
use crate::names;
use crate::settings::{
    check_struct_size, unknown_fields_set, NixlTelemetrySettings, SettingsText,
    SETTINGS_KNOWN_SIZE, SETTINGS_V1_SIZE,
};
use crate::stats::{NixlTelemetryStats, STATS_KNOWN_SIZE, STATS_V1_SIZE};
use crate::status::{self, CapiError, ERR_NULL, OK};

/// `nixl_telemetry_t`: one agent's telemetry (opaque to C).
pub struct NixlTelemetry {
    telemetry: Telemetry,
    /// The fork generation of the process that created it.
    generation: u64,
}

/// `nixl_telemetry_handle_t`: a pre-resolved (category, name) pair (opaque to C).
pub struct NixlTelemetryHandle {
    handle: EventHandle,
    /// The fork generation of the process that created it.
    generation: u64,
}

/// What an object inherited through `fork()` stands in for: telemetry that
/// records nothing. Made when the first object is created (so never for the
/// first time in a child, where a parent thread might have been making it).
fn inherited_stand_in() -> &'static Telemetry {
    static DISABLED: OnceLock<Telemetry> = OnceLock::new();
    DISABLED.get_or_init(Telemetry::disabled)
}

/// Whether an object of `generation` was inherited through `fork()`.
#[inline(always)]
fn inherited(generation: u64) -> bool {
    generation != fork::generation()
}

// ---------------------------------------------------------------------------
// Pointer helpers. Each is `unsafe` with the caller's promise as its contract.

/// The bytes of a C string before its NUL, or `None` for NULL.
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string valid for `'a`.
#[inline]
unsafe fn c_bytes<'a>(ptr: *const c_char) -> Option<&'a [u8]> {
    if ptr.is_null() {
        None
    } else {
        // SAFETY: non-NULL, and NUL-terminated and valid for 'a by the contract.
        Some(unsafe { CStr::from_ptr(ptr) }.to_bytes())
    }
}

/// The telemetry behind `ptr`, or `None` for NULL; in a forked child, a
/// disabled stand-in for the parent's.
///
/// # Safety
/// `ptr` is NULL or was returned by a `nixl_telemetry_create*` and not destroyed.
#[inline(always)]
unsafe fn telemetry<'a>(ptr: *const NixlTelemetry) -> Option<&'a Telemetry> {
    // SAFETY: NULL or a live, properly aligned object by the contract.
    unsafe { ptr.as_ref() }.map(|t| {
        if inherited(t.generation) {
            inherited_stand_in()
        } else {
            &t.telemetry
        }
    })
}

/// The handle behind `ptr`, or `None` for NULL; in a forked child, a handle
/// that records nothing.
///
/// # Safety
/// `ptr` is NULL or was returned by `nixl_telemetry_handle_create` and not destroyed.
#[inline(always)]
unsafe fn handle<'a>(ptr: *const NixlTelemetryHandle) -> Option<&'a EventHandle> {
    static INHERITED: EventHandle = EventHandle::noop(nixl_telemetry::Category::CUSTOM, "");
    // SAFETY: NULL or a live, properly aligned object by the contract.
    unsafe { ptr.as_ref() }.map(|h| {
        if inherited(h.generation) {
            &INHERITED
        } else {
            &h.handle
        }
    })
}

/// Frees an object created by [`finish`]; one inherited through `fork()` is
/// not dropped (its flush thread does not exist in this process, its locks
/// may be held forever, its exporter is the parent's): its memory stays.
///
/// # Safety
/// `ptr` is non-NULL, created by `finish` and not yet destroyed.
unsafe fn destroy<T>(ptr: *mut T, generation: impl FnOnce(&T) -> u64) {
    // SAFETY: created by Box::into_raw in `finish` and not yet destroyed, as
    // promised; ownership comes back here once.
    let object = unsafe { Box::from_raw(ptr) };
    if inherited(generation(&object)) {
        // The box's own allocation is freed; what the object owns is not.
        std::mem::forget(*object);
    } else {
        drop(object);
    }
}

/// Writes `message`, cut to fit at a character boundary and NUL-terminated,
/// into `err`; nothing when `err` is NULL or `err_len` is 0.
///
/// # Safety
/// `err` is NULL or points to `err_len` writable bytes.
unsafe fn write_message(err: *mut c_char, err_len: usize, message: &str) {
    if err.is_null() {
        return;
    }
    let Some(bytes) = names::fit_message(message, err_len) else {
        return;
    };
    // SAFETY: `bytes.len() + 1 <= err_len` (fit_message keeps room for the
    // NUL), `err` holds `err_len` writable bytes, and a caller's buffer cannot
    // overlap the message, which this library owns.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), err.cast::<u8>(), bytes.len());
        *err.add(bytes.len()) = 0;
    }
}

/// Reports `error` to the caller: its message into `err`, its status returned.
///
/// # Safety
/// As [`write_message`].
unsafe fn fail(error: &CapiError, err: *mut c_char, err_len: usize) -> i32 {
    // SAFETY: passed on from the caller.
    unsafe { write_message(err, err_len, &error.to_string()) };
    error.status()
}

/// A created telemetry, of this process's fork generation.
fn new_telemetry(telemetry: Telemetry) -> NixlTelemetry {
    inherited_stand_in();
    NixlTelemetry {
        telemetry,
        generation: fork::generation(),
    }
}

/// Stores a created object into `*out` (as a raw pointer the caller owns), or
/// reports the error and stores NULL.
///
/// # Safety
/// `out` is non-NULL and writable; `err` as in [`write_message`].
unsafe fn finish<T>(
    result: Result<T, CapiError>,
    out: *mut *mut T,
    err: *mut c_char,
    err_len: usize,
) -> i32 {
    match result {
        Ok(object) => {
            // SAFETY: `out` is writable by the contract.
            unsafe { out.write(Box::into_raw(Box::new(object))) };
            // SAFETY: as in write_message; an empty message on success.
            unsafe { write_message(err, err_len, "") };
            OK
        }
        Err(error) => {
            // SAFETY: `out` is writable by the contract.
            unsafe { out.write(std::ptr::null_mut()) };
            // SAFETY: passed on from the caller.
            unsafe { fail(&error, err, err_len) }
        }
    }
}

/// The error for a NULL output pointer of a creating function.
fn null_out(what: &'static str) -> CapiError {
    CapiError::Null {
        what,
        accepted: "the address of a pointer variable that receives the new object",
    }
}

/// Reads a caller's settings struct of `struct_size` bytes: the fields both
/// sides know (fields an older caller lacks stay unset), after checking that
/// any bytes past the fields this library knows are zero.
///
/// # Safety
/// `ptr` is non-NULL and points to a readable struct of at least the size in
/// its `struct_size` field (as `nixl_telemetry.h` requires).
unsafe fn read_settings(
    ptr: *const NixlTelemetrySettings,
) -> Result<NixlTelemetrySettings, CapiError> {
    // SAFETY: `struct_size` is the first field of every version: readable.
    let size = unsafe { std::ptr::addr_of!((*ptr).struct_size).read() };
    let size = check_struct_size("settings.struct_size", size, SETTINGS_V1_SIZE)?;
    if size > SETTINGS_KNOWN_SIZE {
        // SAFETY: the caller's struct holds `size` readable bytes.
        let tail = unsafe {
            std::slice::from_raw_parts(
                ptr.cast::<u8>().add(SETTINGS_KNOWN_SIZE),
                size - SETTINGS_KNOWN_SIZE,
            )
        };
        if tail.iter().any(|&b| b != 0) {
            return Err(unknown_fields_set(size));
        }
    }
    let mut settings = NixlTelemetrySettings::UNSET;
    // SAFETY: the caller's struct holds `size` readable bytes, `settings`
    // holds SETTINGS_KNOWN_SIZE; the smaller count is copied. Every field is
    // an integer or a pointer, for which any bytes are a valid value (the
    // pointers are checked for NULL and trusted as the header requires).
    unsafe {
        std::ptr::copy_nonoverlapping(
            ptr.cast::<u8>(),
            std::ptr::addr_of_mut!(settings).cast::<u8>(),
            size.min(SETTINGS_KNOWN_SIZE),
        );
    }
    Ok(settings)
}

// ---------------------------------------------------------------------------
// Creation and destruction.

/// Creates telemetry for `agent_name` configured from the `NIXL_TELEMETRY_*`
/// environment variables (see `nixl_telemetry.h`).
///
/// # Safety
/// `agent_name` NULL or NUL-terminated; `out` NULL or writable; `err` NULL or
/// `err_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn nixl_telemetry_create_from_env(
    agent_name: *const c_char,
    out: *mut *mut NixlTelemetry,
    err: *mut c_char,
    err_len: usize,
) -> i32 {
    boundary::status("nixl_telemetry_create_from_env", || {
        if out.is_null() {
            // SAFETY: err as promised.
            return unsafe { fail(&null_out("out"), err, err_len) };
        }
        // SAFETY: agent_name NULL or NUL-terminated, as promised.
        let agent = unsafe { c_bytes(agent_name) };
        let result = create::from_env(agent).map(new_telemetry);
        // SAFETY: out checked non-NULL, writable as promised; err as promised.
        unsafe { finish(result, out, err, err_len) }
    })
}

/// Creates telemetry for `agent_name` configured by `settings`.
///
/// # Safety
/// As [`nixl_telemetry_create_from_env`]; `settings` NULL or a struct of at
/// least its `struct_size` readable bytes whose strings are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn nixl_telemetry_create(
    agent_name: *const c_char,
    settings: *const NixlTelemetrySettings,
    out: *mut *mut NixlTelemetry,
    err: *mut c_char,
    err_len: usize,
) -> i32 {
    boundary::status("nixl_telemetry_create", || {
        if out.is_null() {
            // SAFETY: err as promised.
            return unsafe { fail(&null_out("out"), err, err_len) };
        }
        let result = if settings.is_null() {
            Err(CapiError::Null {
                what: "settings",
                accepted: "a nixl_telemetry_settings_t with struct_size = sizeof(nixl_telemetry_settings_t)",
            })
        } else {
            // SAFETY: non-NULL settings of struct_size readable bytes, as promised.
            unsafe { read_settings(settings) }.and_then(|s| {
                // SAFETY: every string field NULL or NUL-terminated, as promised.
                let text = unsafe {
                    SettingsText {
                        exporter: c_bytes(s.exporter),
                        ring_directory: c_bytes(s.ring_directory),
                        output_path: c_bytes(s.output_path),
                        plugin_dirs: c_bytes(s.plugin_dirs),
                        enabled_metrics: c_bytes(s.enabled_metrics),
                        ring_version: c_bytes(s.ring_version),
                    }
                };
                // SAFETY: agent_name NULL or NUL-terminated, as promised.
                let agent = unsafe { c_bytes(agent_name) };
                create::from_settings(agent, &s, text)
            })
        };
        let result = result.map(new_telemetry);
        // SAFETY: out checked non-NULL, writable as promised; err as promised.
        unsafe { finish(result, out, err, err_len) }
    })
}

/// Flushes what is staged, stops the flush thread, closes the exporter and
/// frees `telemetry`. NULL is a no-op.
///
/// # Safety
/// `telemetry` NULL or live; not used again afterwards.
#[no_mangle]
pub unsafe extern "C" fn nixl_telemetry_destroy(telemetry: *mut NixlTelemetry) -> i32 {
    boundary::status("nixl_telemetry_destroy", || {
        if !telemetry.is_null() {
            // SAFETY: created by `finish` and not yet destroyed, as promised.
            unsafe { destroy(telemetry, |t| t.generation) };
        }
        OK
    })
}

/// Creates a pre-resolved handle for (`category`, `name`).
///
/// # Safety
/// `telemetry` NULL or live; `name` NULL or NUL-terminated; `out` NULL or
/// writable; `err` NULL or `err_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn nixl_telemetry_handle_create(
    telemetry: *const NixlTelemetry,
    category: i32,
    name: *const c_char,
    out: *mut *mut NixlTelemetryHandle,
    err: *mut c_char,
    err_len: usize,
) -> i32 {
    boundary::status("nixl_telemetry_handle_create", || {
        if out.is_null() {
            // SAFETY: err as promised.
            return unsafe { fail(&null_out("out"), err, err_len) };
        }
        // SAFETY: telemetry NULL or live; name NULL or NUL-terminated.
        let (telemetry, name) = unsafe { (self::telemetry(telemetry), c_bytes(name)) };
        let result = match telemetry {
            None => Err(CapiError::Null {
                what: "telemetry",
                accepted:
                    "a telemetry from nixl_telemetry_create or nixl_telemetry_create_from_env",
            }),
            Some(t) => create::handle(t, category, name).map(|handle| NixlTelemetryHandle {
                handle,
                generation: fork::generation(),
            }),
        };
        // SAFETY: out checked non-NULL, writable as promised; err as promised.
        unsafe { finish(result, out, err, err_len) }
    })
}

/// Frees a handle. NULL is a no-op. A handle may outlive its telemetry.
///
/// # Safety
/// `handle` NULL or live; not used again afterwards.
#[no_mangle]
pub unsafe extern "C" fn nixl_telemetry_handle_destroy(handle: *mut NixlTelemetryHandle) -> i32 {
    boundary::status("nixl_telemetry_handle_destroy", || {
        if !handle.is_null() {
            // SAFETY: created by `finish` and not yet destroyed, as promised.
            unsafe { destroy(handle, |h| h.generation) };
        }
        OK
    })
}

// ---------------------------------------------------------------------------
// Recording.

/// Records `value` now through a handle: the fast path.
///
/// # Safety
/// `handle` NULL or live.
#[no_mangle]
pub unsafe extern "C" fn nixl_telemetry_handle_record(
    handle: *const NixlTelemetryHandle,
    value: u64,
) -> i32 {
    boundary::status("nixl_telemetry_handle_record", || {
        // SAFETY: NULL or live, as promised.
        match unsafe { self::handle(handle) } {
            Some(h) => {
                h.record(value);
                OK
            }
            None => ERR_NULL,
        }
    })
}

/// Records `value` through a handle with the caller's timestamp (µs since the
/// epoch, e.g. from `nixl_telemetry_now_us`).
///
/// # Safety
/// `handle` NULL or live.
#[no_mangle]
pub unsafe extern "C" fn nixl_telemetry_handle_record_at(
    handle: *const NixlTelemetryHandle,
    timestamp_us: u64,
    value: u64,
) -> i32 {
    boundary::status("nixl_telemetry_handle_record_at", || {
        // SAFETY: NULL or live, as promised.
        match unsafe { self::handle(handle) } {
            Some(h) => {
                h.record_at(timestamp_us, value);
                OK
            }
            None => ERR_NULL,
        }
    })
}

/// Runs `body` on the telemetry behind `ptr`; NULL records nothing.
///
/// # Safety
/// `ptr` NULL or live.
#[inline(always)]
unsafe fn with_telemetry(
    what: &'static str,
    ptr: *const NixlTelemetry,
    body: impl FnOnce(&Telemetry) -> Result<(), CapiError>,
) -> i32 {
    boundary::status(what, || {
        // SAFETY: NULL or live, as promised.
        match unsafe { telemetry(ptr) } {
            None => ERR_NULL,
            Some(t) => match body(t) {
                Ok(()) => OK,
                Err(e) => e.status(),
            },
        }
    })
}

/// Records one event of `category` named `name` (the allowlist applies).
///
/// # Safety
/// `telemetry` NULL or live; `name` NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn nixl_telemetry_record(
    telemetry: *const NixlTelemetry,
    category: i32,
    name: *const c_char,
    value: u64,
) -> i32 {
    // SAFETY: telemetry NULL or live, as promised.
    unsafe {
        with_telemetry("nixl_telemetry_record", telemetry, |t| {
            let category = names::category(category)?;
            // SAFETY: name NULL or NUL-terminated, as promised.
            let name = names::event_name(c_bytes(name))?;
            t.record(category, name, value);
            Ok(())
        })
    }
}

/// One completed transfer: `agent_xfer_time`, `agent_{tx|rx}_bytes`,
/// `agent_{tx|rx}_requests_num`, one timestamp.
///
/// # Safety
/// `telemetry` NULL or live.
#[no_mangle]
pub unsafe extern "C" fn nixl_telemetry_transfer_completed(
    telemetry: *const NixlTelemetry,
    duration_us: u64,
    direction: i32,
    bytes: u64,
) -> i32 {
    // SAFETY: telemetry NULL or live, as promised.
    unsafe {
        with_telemetry("nixl_telemetry_transfer_completed", telemetry, |t| {
            t.transfer_completed(duration_us, names::direction(direction)?, bytes);
            Ok(())
        })
    }
}

/// [`nixl_telemetry_transfer_completed`] with the caller's completion timestamp.
///
/// # Safety
/// `telemetry` NULL or live.
#[no_mangle]
pub unsafe extern "C" fn nixl_telemetry_transfer_completed_at(
    telemetry: *const NixlTelemetry,
    timestamp_us: u64,
    duration_us: u64,
    direction: i32,
    bytes: u64,
) -> i32 {
    // SAFETY: telemetry NULL or live, as promised.
    unsafe {
        with_telemetry("nixl_telemetry_transfer_completed_at", telemetry, |t| {
            t.transfer_completed_at(
                timestamp_us,
                duration_us,
                names::direction(direction)?,
                bytes,
            );
            Ok(())
        })
    }
}

/// `agent_xfer_post_time`: posting a transfer took `us` µs.
///
/// # Safety
/// `telemetry` NULL or live.
#[no_mangle]
pub unsafe extern "C" fn nixl_telemetry_post_time(telemetry: *const NixlTelemetry, us: u64) -> i32 {
    // SAFETY: telemetry NULL or live, as promised.
    unsafe {
        with_telemetry("nixl_telemetry_post_time", telemetry, |t| {
            t.post_time(us);
            Ok(())
        })
    }
}

/// [`nixl_telemetry_post_time`] with the caller's timestamp.
///
/// # Safety
/// `telemetry` NULL or live.
#[no_mangle]
pub unsafe extern "C" fn nixl_telemetry_post_time_at(
    telemetry: *const NixlTelemetry,
    timestamp_us: u64,
    us: u64,
) -> i32 {
    // SAFETY: telemetry NULL or live, as promised.
    unsafe {
        with_telemetry("nixl_telemetry_post_time_at", telemetry, |t| {
            t.post_time_at(timestamp_us, us);
            Ok(())
        })
    }
}

/// `agent_memory_registered`: `bytes` were registered.
///
/// # Safety
/// `telemetry` NULL or live.
#[no_mangle]
pub unsafe extern "C" fn nixl_telemetry_memory_registered(
    telemetry: *const NixlTelemetry,
    bytes: u64,
) -> i32 {
    // SAFETY: telemetry NULL or live, as promised.
    unsafe {
        with_telemetry("nixl_telemetry_memory_registered", telemetry, |t| {
            t.memory_registered(bytes);
            Ok(())
        })
    }
}

/// `agent_memory_deregistered`: `bytes` were deregistered.
///
/// # Safety
/// `telemetry` NULL or live.
#[no_mangle]
pub unsafe extern "C" fn nixl_telemetry_memory_deregistered(
    telemetry: *const NixlTelemetry,
    bytes: u64,
) -> i32 {
    // SAFETY: telemetry NULL or live, as promised.
    unsafe {
        with_telemetry("nixl_telemetry_memory_deregistered", telemetry, |t| {
            t.memory_deregistered(bytes);
            Ok(())
        })
    }
}

/// An error: ERROR event named by the status string (e.g. `NIXL_ERR_BACKEND`), value 1.
///
/// # Safety
/// `telemetry` NULL or live; `status` NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn nixl_telemetry_error(
    telemetry: *const NixlTelemetry,
    status: *const c_char,
) -> i32 {
    // SAFETY: telemetry NULL or live, as promised.
    unsafe {
        with_telemetry("nixl_telemetry_error", telemetry, |t| {
            // SAFETY: status NULL or NUL-terminated, as promised.
            t.error(names::status_name(c_bytes(status))?);
            Ok(())
        })
    }
}

/// A BACKEND event.
///
/// # Safety
/// `telemetry` NULL or live; `name` NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn nixl_telemetry_backend_event(
    telemetry: *const NixlTelemetry,
    name: *const c_char,
    value: u64,
) -> i32 {
    // SAFETY: telemetry NULL or live, as promised.
    unsafe {
        with_telemetry("nixl_telemetry_backend_event", telemetry, |t| {
            // SAFETY: name NULL or NUL-terminated, as promised.
            t.backend_event(names::event_name(c_bytes(name))?, value);
            Ok(())
        })
    }
}

/// A CONNECTION event.
///
/// # Safety
/// `telemetry` NULL or live; `name` NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn nixl_telemetry_connection_event(
    telemetry: *const NixlTelemetry,
    name: *const c_char,
    value: u64,
) -> i32 {
    // SAFETY: telemetry NULL or live, as promised.
    unsafe {
        with_telemetry("nixl_telemetry_connection_event", telemetry, |t| {
            // SAFETY: name NULL or NUL-terminated, as promised.
            t.connection_event(names::event_name(c_bytes(name))?, value);
            Ok(())
        })
    }
}

// ---------------------------------------------------------------------------
// Flush, stats, queries.

/// Flushes everything staged so far to the exporter, on the calling thread.
///
/// # Safety
/// `telemetry` NULL or live.
#[no_mangle]
pub unsafe extern "C" fn nixl_telemetry_flush(telemetry: *const NixlTelemetry) -> i32 {
    // SAFETY: telemetry NULL or live, as promised.
    unsafe {
        with_telemetry("nixl_telemetry_flush", telemetry, |t| {
            t.flush();
            Ok(())
        })
    }
}

/// Copies the accounting into `*out`, whose `struct_size` the caller set.
///
/// # Safety
/// `telemetry` NULL or live; `out` NULL or a writable struct of at least its
/// `struct_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn nixl_telemetry_stats(
    telemetry: *const NixlTelemetry,
    out: *mut NixlTelemetryStats,
) -> i32 {
    boundary::status("nixl_telemetry_stats", || {
        // SAFETY: NULL or live, as promised.
        let Some(t) = (unsafe { self::telemetry(telemetry) }) else {
            return ERR_NULL;
        };
        if out.is_null() {
            return ERR_NULL;
        }
        // SAFETY: `struct_size` is the first field of every version: readable.
        let size = unsafe { std::ptr::addr_of!((*out).struct_size).read() };
        let size = match check_struct_size("stats.struct_size", size, STATS_V1_SIZE) {
            Ok(size) => size,
            Err(e) => return e.status(),
        };
        let stats = NixlTelemetryStats::from_stats(&t.stats(), size as u32);
        // SAFETY: the caller's struct holds `size` writable bytes: it gets
        // the first min(size, STATS_KNOWN_SIZE) bytes of `stats` (the fields
        // both sides know), and any bytes past STATS_KNOWN_SIZE (fields of a
        // newer header) are zeroed.
        unsafe {
            std::ptr::copy_nonoverlapping(
                std::ptr::addr_of!(stats).cast::<u8>(),
                out.cast::<u8>(),
                size.min(STATS_KNOWN_SIZE),
            );
            if size > STATS_KNOWN_SIZE {
                std::ptr::write_bytes(
                    out.cast::<u8>().add(STATS_KNOWN_SIZE),
                    0,
                    size - STATS_KNOWN_SIZE,
                );
            }
        }
        OK
    })
}

/// 1 when `telemetry` records (enabled), 0 when it was created disabled,
/// `NIXL_TELEMETRY_ERR_NULL` for NULL.
///
/// # Safety
/// `telemetry` NULL or live.
#[no_mangle]
pub unsafe extern "C" fn nixl_telemetry_is_enabled(telemetry: *const NixlTelemetry) -> i32 {
    boundary::status("nixl_telemetry_is_enabled", || {
        // SAFETY: NULL or live, as promised.
        match unsafe { self::telemetry(telemetry) } {
            None => ERR_NULL,
            Some(t) => i32::from(t.is_enabled()),
        }
    })
}

/// The clock events are stamped with: wall-clock µs since the Unix epoch.
/// 0 only if the library failed inside.
#[no_mangle]
pub extern "C" fn nixl_telemetry_now_us() -> u64 {
    boundary::guard("nixl_telemetry_now_us", || 0, Telemetry::now_us)
}

/// A static NUL-terminated description of a status code (never NULL).
#[no_mangle]
pub extern "C" fn nixl_telemetry_status_string(status: i32) -> *const c_char {
    boundary::guard(
        "nixl_telemetry_status_string",
        || status::UNKNOWN.as_ptr().cast(),
        || status::text(status).as_ptr().cast(),
    )
}

/// `NIXL_TELEMETRY_C_API_VERSION` of the library actually loaded.
#[no_mangle]
pub extern "C" fn nixl_telemetry_api_version() -> u32 {
    boundary::guard("nixl_telemetry_api_version", || 0, || crate::C_API_VERSION)
}
