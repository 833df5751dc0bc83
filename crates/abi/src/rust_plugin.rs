//! Writing an exporter plug-in in Rust: implement [`RustPluginExporter`] and call
//! [`export_plugin!`](crate::export_plugin).
//!
//! The generated C functions catch every panic: each runs its whole body
//! inside [`guard`]; a panicking exporter answers [`EXPORT_PANICKED`] from
//! then on and is never called again, and a panic in `create` becomes a
//! creation error. Nothing unwinds into the host.
//!
//! ```
//! use nixl_telemetry_abi::rust_plugin::{RustPluginExporter, RustPluginParams};
//! use nixl_telemetry_abi::Event;
//!
//! /// Counts events and forgets them.
//! struct Counting { seen: u64 }
//!
//! impl RustPluginExporter for Counting {
//!     fn create(_params: &RustPluginParams<'_>) -> Result<Self, String> {
//!         Ok(Counting { seen: 0 })
//!     }
//!     fn export_batch(&mut self, events: &[Event]) -> Result<(), String> {
//!         self.seen += events.len() as u64;
//!         Ok(())
//!     }
//! }
//!
//! nixl_telemetry_abi::export_plugin!(Counting, name = "counting", version = "1.0.0");
//! # fn main() {}
//! ```

use core::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::c_abi::{
    write_error, CDelivery, CExporterParams, EXPORT_FAILED, EXPORT_OK, EXPORT_PANICKED,
};
use crate::event::Event;

/// The parameters a plug-in exporter is created with, borrowed from the host.
#[derive(Debug, Clone, Copy)]
pub struct RustPluginParams<'a> {
    /// The agent's name.
    pub agent_name: &'a str,
    /// `NIXL_TELEMETRY_BUFFER_SIZE`: the most events one batch will hold.
    pub max_events_buffered: usize,
    /// `NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH`, if set.
    pub output_path: Option<&'a str>,
}

/// An exporter implemented in Rust and exported through the C ABI (the
/// plug-in side; the host's side is `nixl_telemetry`'s `LoadedPluginExporter`).
///
/// The host calls one exporter from one thread at a time, so methods take
/// `&mut self`. An `Err` is reported to the host as a failed call, and its
/// text reaches the host's log through `nixl_telemetry_exporter_last_error`
/// (the host logs each distinct text once, not once per failing call).
pub trait RustPluginExporter: Sized + Send + 'static {
    /// Whether the plug-in's code logs with `tracing`: then its init makes
    /// them reach the host's log ([`plugin_log`](crate::plugin_log)). A
    /// plug-in that never logs says false and installs nothing (`tracing-core`
    /// keeps a global subscriber until the process ends, a few bytes left
    /// behind by each unload).
    const LOGS_WITH_TRACING: bool = true;
    /// Creates an exporter; the error text reaches the host's error message.
    fn create(params: &RustPluginParams<'_>) -> Result<Self, String>;
    /// Exports events in the order given.
    fn export_batch(&mut self, events: &[Event]) -> Result<(), String>;
    /// Makes what was exported durable or visible; called after each flush batch.
    fn flush(&mut self) -> Result<(), String> {
        Ok(())
    }
    /// What became of the events the plug-in's exporters accepted, all of
    /// them since the library was loaded (`nixl_telemetry_exporter_delivery`);
    /// `None` (the default) when exporters deliver within the export call or
    /// cannot tell. Called by the host after the last exporter is dropped.
    fn delivery() -> Option<PluginDelivery> {
        None
    }
}

/// What a plug-in reports through `nixl_telemetry_exporter_delivery`
/// ([`CDelivery`] without its size field).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PluginDelivery {
    /// Events accepted by export calls that returned 0.
    pub events_accepted: u64,
    /// Of those, events known to have reached their destination.
    pub events_delivered: u64,
    /// Of those, events known never to reach it.
    pub events_undelivered: u64,
}

/// `nixl_telemetry_exporter_delivery` for `T`: fills the fields of `out` that
/// fit in the `struct_size` the host set; 0, or -1 when `T` does not track
/// delivery (or `out` is NULL).
///
/// # Safety
/// `out` must be NULL or point to a writable struct of at least the
/// `struct_size` bytes it declares (and at least its first 8 bytes).
pub unsafe extern "C" fn delivery<T: RustPluginExporter>(out: *mut CDelivery) -> i32 {
    guard(
        || EXPORT_FAILED,
        || {
            if out.is_null() {
                return EXPORT_FAILED;
            }
            let Some(d) = T::delivery() else {
                return EXPORT_FAILED;
            };
            // SAFETY: the first 8 bytes exist in every version (caller's contract).
            let size = unsafe { core::ptr::addr_of!((*out).struct_size).read_unaligned() } as usize;
            let fields = [
                (
                    core::mem::offset_of!(CDelivery, events_accepted),
                    d.events_accepted,
                ),
                (
                    core::mem::offset_of!(CDelivery, events_delivered),
                    d.events_delivered,
                ),
                (
                    core::mem::offset_of!(CDelivery, events_undelivered),
                    d.events_undelivered,
                ),
            ];
            for (offset, value) in fields {
                if offset + 8 <= size {
                    // SAFETY: the field lies inside the `size` bytes the host
                    // declared writable.
                    unsafe {
                        out.cast::<u8>()
                            .add(offset)
                            .cast::<u64>()
                            .write_unaligned(value)
                    };
                }
            }
            EXPORT_OK
        },
    )
}

/// The boxed state behind the opaque exporter pointer handed to the host.
pub struct ExporterCell<T> {
    inner: T,
    poisoned: bool,
    /// The reason of the most recent failed call, for `last_error`.
    last_error: Option<String>,
}

/// The text of an error with its chain of causes (`error: cause: cause…`,
/// leaving out a cause whose text the message already holds): what a plug-in's
/// [`RustPluginExporter::create`] returns, so the host's message says why.
pub fn full_message(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// The panic guard every C function of a Rust plug-in runs its body in: a
/// panic inside `body` becomes `on_panic()` instead of unwinding into the
/// host (which, out of an `extern "C"` function, would abort it). The
/// payload is dropped inside a second guard (a payload whose drop panics
/// must not escape either). Used by [`export_plugin!`](crate::export_plugin).
#[doc(hidden)]
pub fn guard<R>(on_panic: impl FnOnce() -> R, body: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(payload) => {
            let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
            on_panic()
        }
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

/// Reads an optional C string; `Err` names the field when it is not UTF-8.
///
/// # Safety
/// `ptr` must be NULL or point to a NUL-terminated string alive for `'a`.
unsafe fn c_str<'a>(ptr: *const c_char, field: &str) -> Result<Option<&'a str>, String> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null and NUL-terminated per the caller's contract.
    let s = unsafe { CStr::from_ptr(ptr) };
    s.to_str()
        .map(Some)
        .map_err(|_| format!("{field} is not valid UTF-8"))
}

/// `create_exporter` for `T`.
///
/// # Safety
/// `params` must be NULL or point to valid [`CExporterParams`]; `err` must be NULL
/// or valid for writes of `err_len` bytes.
pub unsafe extern "C" fn create_exporter<T: RustPluginExporter>(
    params: *const CExporterParams,
    err: *mut c_char,
    err_len: usize,
) -> *mut c_void {
    guard(core::ptr::null_mut, || {
        let result = catch_unwind(AssertUnwindSafe(|| {
            if params.is_null() {
                return Err("params is NULL".to_owned());
            }
            // SAFETY: non-null and valid per the caller's contract.
            let raw = unsafe { &*params };
            // SAFETY: the host passes NUL-terminated strings that outlive this call.
            let agent_name = unsafe { c_str(raw.agent_name, "agent_name") }?
                .ok_or_else(|| "agent_name is NULL".to_owned())?;
            // SAFETY: as above.
            let output_path = unsafe { c_str(raw.output_path, "output_path") }?;
            let params = RustPluginParams {
                agent_name,
                max_events_buffered: raw.max_events_buffered,
                output_path,
            };
            T::create(&params)
        }));
        let message = match result {
            Ok(Ok(exporter)) => {
                let cell = Box::new(ExporterCell {
                    inner: exporter,
                    poisoned: false,
                    last_error: None,
                });
                return Box::into_raw(cell).cast();
            }
            Ok(Err(message)) => message,
            Err(payload) => format!(
                "exporter panicked while being created: {}",
                panic_message(&*payload)
            ),
        };
        // SAFETY: per the caller's contract on `err` and `err_len`.
        unsafe { write_error(err, err_len, &message) };
        core::ptr::null_mut()
    })
}

/// Runs `f` on the exporter behind `exporter`, turning errors and panics into codes.
///
/// # Safety
/// `exporter` must be NULL or a pointer returned by [`create_exporter::<T>`] and not
/// yet destroyed, used by one thread at a time.
unsafe fn with_exporter<T: RustPluginExporter>(
    exporter: *mut c_void,
    f: impl FnOnce(&mut T) -> Result<(), String>,
) -> i32 {
    guard(
        || EXPORT_PANICKED,
        || {
            if exporter.is_null() {
                return EXPORT_FAILED;
            }
            // SAFETY: per the caller's contract the pointer came from
            // Box<ExporterCell<T>> and no other thread uses it now.
            let cell = unsafe { &mut *exporter.cast::<ExporterCell<T>>() };
            if cell.poisoned {
                return EXPORT_PANICKED;
            }
            match catch_unwind(AssertUnwindSafe(|| f(&mut cell.inner))) {
                Ok(Ok(())) => EXPORT_OK,
                Ok(Err(reason)) => {
                    cell.last_error = Some(reason);
                    EXPORT_FAILED
                }
                Err(payload) => {
                    cell.poisoned = true;
                    cell.last_error = Some(format!("panicked: {}", panic_message(&*payload)));
                    EXPORT_PANICKED
                }
            }
        },
    )
}

/// `nixl_telemetry_exporter_last_error` for `T`: the reason of the exporter's
/// most recent failed call.
///
/// # Safety
/// `exporter` must be NULL or a pointer returned by [`create_exporter::<T>`] and not
/// yet destroyed, used by one thread at a time; `err` must be NULL or valid for
/// writes of `err_len` bytes.
pub unsafe extern "C" fn last_error<T: RustPluginExporter>(
    exporter: *mut c_void,
    err: *mut c_char,
    err_len: usize,
) -> usize {
    guard(
        || 0,
        || {
            if exporter.is_null() {
                return 0;
            }
            // SAFETY: per the caller's contract the pointer came from
            // Box<ExporterCell<T>> and no other thread uses it now.
            let cell = unsafe { &*exporter.cast::<ExporterCell<T>>() };
            match &cell.last_error {
                Some(reason) => {
                    // SAFETY: per the caller's contract on `err` and `err_len`.
                    unsafe { write_error(err, err_len, reason) };
                    reason.len()
                }
                None => 0,
            }
        },
    )
}

/// `export_event` for `T`.
///
/// # Safety
/// `exporter` must be NULL or a pointer returned by [`create_exporter::<T>`] and not
/// yet destroyed, used by one thread at a time; `event` must be NULL or point to a
/// valid event.
pub unsafe extern "C" fn export_event<T: RustPluginExporter>(
    exporter: *mut c_void,
    event: *const Event,
) -> i32 {
    guard(
        || EXPORT_PANICKED,
        || {
            if event.is_null() {
                return EXPORT_FAILED;
            }
            // SAFETY: non-null and valid per the caller's contract.
            let event = unsafe { &*event };
            // SAFETY: per the caller's contract.
            unsafe {
                with_exporter::<T>(exporter, |e| e.export_batch(core::slice::from_ref(event)))
            }
        },
    )
}

/// `export_batch` for `T`.
///
/// # Safety
/// `exporter` must be NULL or a pointer returned by [`create_exporter::<T>`] and not
/// yet destroyed, used by one thread at a time; `events` must be valid for `count`
/// events (or `count` 0).
pub unsafe extern "C" fn export_batch<T: RustPluginExporter>(
    exporter: *mut c_void,
    events: *const Event,
    count: usize,
) -> i32 {
    guard(
        || EXPORT_PANICKED,
        || {
            let events = if count == 0 {
                &[][..]
            } else if events.is_null() {
                return EXPORT_FAILED;
            } else {
                // SAFETY: valid for `count` events per the caller's contract.
                unsafe { core::slice::from_raw_parts(events, count) }
            };
            // SAFETY: per the caller's contract.
            unsafe { with_exporter::<T>(exporter, |e| e.export_batch(events)) }
        },
    )
}

/// `flush` for `T`.
///
/// # Safety
/// `exporter` must be NULL or a pointer returned by [`create_exporter::<T>`] and not
/// yet destroyed, used by one thread at a time.
pub unsafe extern "C" fn flush<T: RustPluginExporter>(exporter: *mut c_void) -> i32 {
    // SAFETY: per the caller's contract.
    unsafe { with_exporter::<T>(exporter, |e| e.flush()) }
}

/// `destroy_exporter` for `T`.
///
/// # Safety
/// `exporter` must be NULL or a pointer returned by [`create_exporter::<T>`],
/// destroyed only once.
pub unsafe extern "C" fn destroy_exporter<T: RustPluginExporter>(exporter: *mut c_void) {
    // A panic in T's Drop must not unwind into the host either.
    guard(
        || (),
        || {
            if !exporter.is_null() {
                // SAFETY: the pointer came from Box::into_raw in
                // create_exporter::<T> and is destroyed once per the caller's contract.
                drop(unsafe { Box::from_raw(exporter.cast::<ExporterCell<T>>()) });
            }
        },
    )
}

/// Exports a [`RustPluginExporter`] as a NIXL telemetry plug-in: defines
/// `nixl_telemetry_exporter_plugin_init`, `nixl_telemetry_exporter_plugin_fini`,
/// `nixl_telemetry_exporter_last_error`, `nixl_telemetry_exporter_set_log`
/// and `nixl_telemetry_exporter_delivery`. Init makes the plug-in's copy of
/// `tracing` send its messages to the host's log
/// ([`plugin_log`](crate::plugin_log)), or to stderr until the host gives a
/// callback.
///
/// It never defines `nixl_telemetry_plugin_init`, the name NIXL's own loader
/// calls: NIXL, finding the file in its plug-in directory, refuses it
/// ("Failed to find nixl_telemetry_plugin_init") instead of misreading it. NIXL
/// loads our exporters through the adapters of `crates/nixl_adapters`.
///
/// Use it once per `cdylib`, with string literals for `name` and `version`:
/// `export_plugin!(MyExporter, name = "mine", version = "1.0.0");`
#[macro_export]
macro_rules! export_plugin {
    ($exporter:ty, name = $name:literal, version = $version:expr $(,)?) => {
        #[doc(hidden)]
        pub static NIXL_TELEMETRY_PLUGIN_DESCRIPTOR: $crate::c_abi::PluginDescriptor =
            $crate::c_abi::PluginDescriptor {
                api_version: $crate::c_abi::PLUGIN_API_VERSION,
                struct_size: ::core::mem::size_of::<$crate::c_abi::PluginDescriptor>() as u32,
                name: ::core::concat!($name, "\0").as_ptr().cast(),
                version: ::core::concat!($version, "\0").as_ptr().cast(),
                create_exporter: Some($crate::rust_plugin::create_exporter::<$exporter>),
                export_event: Some($crate::rust_plugin::export_event::<$exporter>),
                export_batch: Some($crate::rust_plugin::export_batch::<$exporter>),
                flush: Some($crate::rust_plugin::flush::<$exporter>),
                destroy_exporter: Some($crate::rust_plugin::destroy_exporter::<$exporter>),
            };

        /// Returns this plug-in's descriptor.
        #[no_mangle]
        pub extern "C" fn nixl_telemetry_exporter_plugin_init(
        ) -> *const $crate::c_abi::PluginDescriptor {
            $crate::rust_plugin::guard(::core::ptr::null, || {
                if <$exporter as $crate::rust_plugin::RustPluginExporter>::LOGS_WITH_TRACING {
                    $crate::plugin_log::install($name);
                } else {
                    $crate::plugin_log::set_plugin_name($name);
                }
                ::core::ptr::addr_of!(NIXL_TELEMETRY_PLUGIN_DESCRIPTOR)
            })
        }

        /// Takes (or, with NULL, forgets) the host's log callback.
        ///
        /// # Safety
        /// As for `nixl_telemetry_exporter_set_log` in the plug-in ABI: `log`
        /// stays callable with `context` from any thread until the next call.
        #[no_mangle]
        pub unsafe extern "C" fn nixl_telemetry_exporter_set_log(
            log: ::core::option::Option<$crate::c_abi::LogFn>,
            context: *mut ::core::ffi::c_void,
        ) {
            // SAFETY: the caller's contract is the one of `set_log`.
            unsafe { $crate::plugin_log::set_log(log, context) }
        }

        /// What became of the events this plug-in accepted.
        ///
        /// # Safety
        /// As for `nixl_telemetry_exporter_delivery` in the plug-in ABI: `out`
        /// is NULL or writable for the `struct_size` it declares.
        #[no_mangle]
        pub unsafe extern "C" fn nixl_telemetry_exporter_delivery(
            out: *mut $crate::c_abi::CDelivery,
        ) -> i32 {
            // SAFETY: the caller's contract is the one of `delivery`.
            unsafe { $crate::rust_plugin::delivery::<$exporter>(out) }
        }

        /// Called once before the host unloads the library.
        #[no_mangle]
        pub extern "C" fn nixl_telemetry_exporter_plugin_fini() {
            // The rate limit's memory goes before the library may be unloaded.
            $crate::rust_plugin::guard(|| (), || $crate::plugin_log::release())
        }

        /// The reason of an exporter's most recent failed call.
        ///
        /// # Safety
        /// As for `nixl_telemetry_exporter_last_error` in the plug-in ABI:
        /// `exporter` comes from this plug-in's `create_exporter` and is not yet
        /// destroyed; `err` is NULL or valid for `err_len` bytes.
        #[no_mangle]
        pub unsafe extern "C" fn nixl_telemetry_exporter_last_error(
            exporter: *mut ::core::ffi::c_void,
            err: *mut ::core::ffi::c_char,
            err_len: usize,
        ) -> usize {
            // SAFETY: the caller's contract is the one of `last_error`.
            unsafe { $crate::rust_plugin::last_error::<$exporter>(exporter, err, err_len) }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Category;
    use std::ffi::CString;

    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|e| e as _)
        }
    }

    #[test]
    fn full_messages_chain_the_causes_they_do_not_already_say() {
        let inner = Layer("permission denied", None);
        let middle = Layer(
            "cannot bind 0.0.0.0:80: permission denied",
            Some(Box::new(inner)),
        );
        let outer = Layer("exporter not created", Some(Box::new(middle)));
        assert_eq!(
            full_message(&outer),
            "exporter not created: cannot bind 0.0.0.0:80: permission denied"
        );
        assert_eq!(full_message(&Layer("alone", None)), "alone");
    }

    struct Recording {
        events: Vec<Event>,
        panic_on_value: Option<u64>,
    }

    impl RustPluginExporter for Recording {
        fn create(params: &RustPluginParams<'_>) -> Result<Self, String> {
            match params.output_path {
                Some("fail") => Err(format!("cannot export for {}", params.agent_name)),
                Some("panic") => panic!("boom in create"),
                Some("panic-later") => Ok(Recording {
                    events: vec![],
                    panic_on_value: Some(13),
                }),
                _ => Ok(Recording {
                    events: vec![],
                    panic_on_value: None,
                }),
            }
        }
        fn export_batch(&mut self, events: &[Event]) -> Result<(), String> {
            for e in events {
                if Some(e.value) == self.panic_on_value {
                    panic!("unlucky value");
                }
                self.events.push(*e);
            }
            Ok(())
        }
    }

    crate::export_plugin!(Recording, name = "recording", version = "0.0.1");

    fn create(output: Option<&str>) -> (*mut c_void, String) {
        let agent = CString::new("agent-a").unwrap();
        let out = output.map(|o| CString::new(o).unwrap());
        let params = CExporterParams {
            agent_name: agent.as_ptr(),
            max_events_buffered: 16,
            output_path: out.as_ref().map_or(core::ptr::null(), |o| o.as_ptr()),
        };
        let mut err = [0 as c_char; 64];
        let desc = nixl_telemetry_exporter_plugin_init();
        // SAFETY: the descriptor is a static built by the macro.
        let desc = unsafe { &*desc };
        // SAFETY: params and err are valid for the call.
        let handle =
            unsafe { (desc.create_exporter.unwrap())(&params, err.as_mut_ptr(), err.len()) };
        // SAFETY: write_error always NUL-terminates within err.
        let msg = unsafe { CStr::from_ptr(err.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        (handle, msg)
    }

    #[test]
    fn descriptor_is_well_formed() {
        // SAFETY: static descriptor.
        let desc = unsafe { &*nixl_telemetry_exporter_plugin_init() };
        assert_eq!(desc.api_version, 1);
        assert_eq!(
            desc.struct_size as usize,
            core::mem::size_of::<crate::c_abi::PluginDescriptor>()
        );
        // SAFETY: static NUL-terminated strings.
        let name = unsafe { CStr::from_ptr(desc.name) };
        assert_eq!(name.to_str().unwrap(), "recording");
    }

    #[test]
    fn events_flow_through_the_c_functions() {
        let (h, msg) = create(None);
        assert!(!h.is_null(), "{msg}");
        let evs = [
            Event::new(1, Category::TRANSFER, "agent_tx_bytes", 4096),
            Event::new(2, Category::ERROR, "NIXL_ERR_BACKEND", 1),
        ];
        // SAFETY: h is a live exporter; evs is valid for its length.
        unsafe {
            assert_eq!(
                export_batch::<Recording>(h, evs.as_ptr(), evs.len()),
                EXPORT_OK
            );
            assert_eq!(export_event::<Recording>(h, &evs[0]), EXPORT_OK);
            assert_eq!(
                export_event::<Recording>(h, core::ptr::null()),
                EXPORT_FAILED
            );
            assert_eq!(flush::<Recording>(h), EXPORT_OK);
            let cell = &*h.cast::<ExporterCell<Recording>>();
            assert_eq!(cell.inner.events.len(), 3);
            destroy_exporter::<Recording>(h);
        }
    }

    #[test]
    fn creation_errors_and_panics_become_messages() {
        let (h, msg) = create(Some("fail"));
        assert!(h.is_null());
        assert_eq!(msg, "cannot export for agent-a");
        let (h, msg) = create(Some("panic"));
        assert!(h.is_null());
        assert!(msg.contains("panicked") && msg.contains("boom"), "{msg}");
    }

    #[test]
    fn a_panicking_exporter_is_disabled_not_unwound() {
        let (h, _) = create(Some("panic-later"));
        let bad = Event::new(1, Category::CUSTOM, "x", 13);
        let good = Event::new(1, Category::CUSTOM, "x", 1);
        // SAFETY: h is live; events are valid.
        unsafe {
            assert_eq!(export_event::<Recording>(h, &bad), EXPORT_PANICKED);
            assert_eq!(export_event::<Recording>(h, &good), EXPORT_PANICKED);
            assert_eq!(flush::<Recording>(h), EXPORT_PANICKED);
            destroy_exporter::<Recording>(h);
        }
    }

    #[test]
    fn a_failed_call_leaves_its_reason_for_the_host() {
        let (h, _) = create(Some("panic-later"));
        let mut buf = [0 as c_char; 64];
        // SAFETY: h is live; buf is valid for its length.
        unsafe {
            assert_eq!(
                nixl_telemetry_exporter_last_error(h, buf.as_mut_ptr(), buf.len()),
                0
            );
            let bad = Event::new(1, Category::CUSTOM, "x", 13);
            assert_eq!(export_event::<Recording>(h, &bad), EXPORT_PANICKED);
            let n = nixl_telemetry_exporter_last_error(h, buf.as_mut_ptr(), buf.len());
            let text = CStr::from_ptr(buf.as_ptr()).to_str().unwrap();
            assert_eq!(text, "panicked: unlucky value");
            assert_eq!(n, text.len());
            destroy_exporter::<Recording>(h);
        }
    }

    #[test]
    fn error_buffer_is_cut_and_terminated() {
        let mut buf = [1 as c_char; 5];
        // SAFETY: buf is valid for 5 bytes.
        unsafe { write_error(buf.as_mut_ptr(), buf.len(), "héllo") };
        // "hé" is 3 bytes, "hél" 4: 4 bytes fit before the NUL.
        // SAFETY: NUL-terminated by write_error.
        let text = unsafe { CStr::from_ptr(buf.as_ptr()) };
        assert_eq!(text.to_str().unwrap(), "hél");
    }
}
