//! The only unsafe code of the plug-in loader: opening a library (after
//! `elf_check` found it complete), reading its descriptor, and calling its
//! functions.
//!
//! * [`PluginLibrary`] is a lease on a loaded, accepted library. One library is
//!   loaded once per canonical path and shared by every exporter made from it
//!   (several agents in one process); `nixl_telemetry_exporter_plugin_fini` is called and
//!   the library unloaded when the last lease goes. Loading and unloading happen
//!   under one process-wide lock, so `init` and `fini` calls never interleave.
//! * [`RawExporter`] owns one exporter handle and a lease on its library; its
//!   `Drop` calls `destroy_exporter` before the lease (and so `fini` and the
//!   unload) can go.

use std::ffi::{c_char, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, PoisonError};

use libloading::os::unix::{Library as UnixLibrary, RTLD_LOCAL, RTLD_NOW};
use libloading::Library;
use nixl_telemetry_abi::c_abi::{
    CDelivery, CExporterParams, CreateExporterFn, DeliveryFn, DestroyExporterFn, ExportBatchFn,
    ExportEventFn, FlushFn, LastErrorFn, PluginDescriptor, PluginFiniFn, PluginInitFn, SetLogFn,
    DELIVERY_SYMBOL, EXPORT_OK, FINI_SYMBOL, INIT_SYMBOL, LAST_ERROR_SYMBOL, LEGACY_FINI_SYMBOL,
    LEGACY_INIT_SYMBOL, NIXL_ADAPTER_SYMBOL, PLUGIN_API_VERSION, SET_LOG_SYMBOL,
};
use nixl_telemetry_abi::rust_plugin::PluginDelivery;
use nixl_telemetry_abi::Event;

use super::plugin_log::{self, HostLogContext};
use super::search::SearchedPath;
use crate::error::PluginError;

/// The only `struct_size` accepted for `api_version` 1.
pub(super) const V1_STRUCT_SIZE: u32 = std::mem::size_of::<PluginDescriptor>() as u32;

/// Bytes of the buffer `create_exporter` may write its reason into.
const ERROR_BUFFER_LEN: usize = 1024;

/// The functions of an accepted descriptor, copied out of it.
#[derive(Clone, Copy)]
struct Functions {
    create_exporter: CreateExporterFn,
    export_event: ExportEventFn,
    export_batch: Option<ExportBatchFn>,
    flush: Option<FlushFn>,
    destroy_exporter: DestroyExporterFn,
    /// The optional `nixl_telemetry_exporter_last_error` symbol.
    last_error: Option<LastErrorFn>,
}

/// A library that passed every check, with its functions.
struct LoadedLibrary {
    path: PathBuf,
    name: String,
    version: String,
    functions: Functions,
    fini: PluginFiniFn,
    /// The optional `nixl_telemetry_exporter_set_log`, and the context given
    /// to it (taken back before `fini`).
    set_log: Option<(SetLogFn, Box<HostLogContext>)>,
    /// The optional `nixl_telemetry_exporter_delivery`.
    delivery: Option<DeliveryFn>,
    /// `Some` until `Drop` unloads it after `fini`.
    library: Option<Library>,
}

impl LoadedLibrary {
    /// What the plug-in says became of the events it accepted.
    fn delivery(&self) -> Option<PluginDelivery> {
        let delivery = self.delivery?;
        let mut out = CDelivery {
            struct_size: std::mem::size_of::<CDelivery>() as u32,
            ..CDelivery::default()
        };
        // SAFETY: the function came from this library, still loaded; `out` is
        // writable for the size it declares.
        let code = unsafe { delivery(&mut out) };
        (code == EXPORT_OK).then_some(PluginDelivery {
            events_accepted: out.events_accepted,
            events_delivered: out.events_delivered,
            events_undelivered: out.events_undelivered,
        })
    }
}

impl Drop for LoadedLibrary {
    fn drop(&mut self) {
        if let Some(delivery) = self.delivery() {
            plugin_log::note_delivery(&self.name, &self.path, delivery);
        }
        if let Some((set_log, context)) = self.set_log.take() {
            // SAFETY: the function came from this library, still loaded. Once
            // it returns, the plug-in makes no call of the callback, so the
            // context can go.
            unsafe { set_log(None, std::ptr::null_mut()) };
            drop(context);
        }
        tracing::debug!(path = %self.path.display(), "calling the plug-in's fini and unloading");
        // SAFETY: `fini` came from this library, which is still loaded (`library`
        // is dropped below); every exporter of it is destroyed (each holds a
        // lease, and this runs when the last lease is gone); and `init` returned
        // successfully when it was loaded.
        unsafe { (self.fini)() };
        drop(self.library.take());
    }
}

/// The device and inode of the file at `path`, if it can be read.
fn file_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

struct Entry {
    key: PathBuf,
    /// Device and inode of the file: one loaded image per file.
    file: Option<(u64, u64)>,
    users: usize,
    library: Arc<LoadedLibrary>,
}

/// Every loaded plug-in library of the process.
static REGISTRY: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

fn registry() -> std::sync::MutexGuard<'static, Vec<Entry>> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The loaded plug-in libraries and how many exporters use each.
pub fn loaded_libraries() -> Vec<(PathBuf, usize)> {
    registry()
        .iter()
        .map(|e| (e.key.clone(), e.users))
        .collect()
}

/// A lease on a loaded plug-in library.
pub(super) struct PluginLibrary {
    key: PathBuf,
    /// `Some` until `Drop` hands it back under the registry lock.
    library: Option<Arc<LoadedLibrary>>,
}

impl Drop for PluginLibrary {
    fn drop(&mut self) {
        let mut entries = registry();
        let mine = self.library.take();
        let Some(at) = entries.iter().position(|e| e.key == self.key) else {
            return;
        };
        entries[at].users -= 1;
        if entries[at].users == 0 {
            let entry = entries.swap_remove(at);
            drop(mine);
            // The last Arc: fini and the unload run here, under the lock.
            drop(entry);
        }
    }
}

impl PluginLibrary {
    fn loaded(&self) -> &LoadedLibrary {
        self.library
            .as_deref()
            .expect("a lease holds its library until dropped")
    }

    /// The path the library was loaded from (symlinks resolved).
    pub(super) fn path(&self) -> &Path {
        &self.loaded().path
    }

    /// The descriptor's `name`.
    pub(super) fn plugin_name(&self) -> &str {
        &self.loaded().name
    }

    /// The descriptor's `version`.
    pub(super) fn plugin_version(&self) -> &str {
        &self.loaded().version
    }

    /// Whether the plug-in has `export_batch`.
    pub(super) fn has_export_batch(&self) -> bool {
        self.loaded().functions.export_batch.is_some()
    }

    /// Loads the library at `path` for plug-in `name`, or shares the one already
    /// loaded from the same file. `Ok(None)`: the file is a NIXL adapter (it
    /// exports [`NIXL_ADAPTER_SYMBOL`]), not a plug-in of this ABI; it was
    /// unloaded again and nothing of it ran but its constructors.
    pub(super) fn acquire(
        name: &str,
        path: &Path,
        searched: &[SearchedPath],
    ) -> Result<Option<PluginLibrary>, PluginError> {
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
        let file = file_identity(&key);
        let mut entries = registry();
        // The dynamic loader shares one image per file (device and inode), so
        // a hard link or a bind mount of a loaded library is that library.
        if let Some(entry) = entries
            .iter_mut()
            .find(|e| e.key == key || (file.is_some() && e.file == file))
        {
            entry.users += 1;
            return Ok(Some(PluginLibrary {
                library: Some(Arc::clone(&entry.library)),
                key: entry.key.clone(),
            }));
        }
        let library = match open(name, &key, searched)? {
            Opened::Plugin(library) => Arc::new(library),
            Opened::NixlAdapter(generation) => {
                tracing::debug!(
                    plugin = name,
                    path = %key.display(),
                    generation = %generation,
                    "skipping a NIXL adapter (it serves NIXL's C++ plug-in interface); searching on"
                );
                return Ok(None);
            }
        };
        entries.push(Entry {
            key: key.clone(),
            file,
            users: 1,
            library: Arc::clone(&library),
        });
        Ok(Some(PluginLibrary {
            key,
            library: Some(library),
        }))
    }
}

/// What [`open`] found at a path.
enum Opened {
    /// A plug-in of this ABI, checked.
    Plugin(LoadedLibrary),
    /// A NIXL adapter (unloaded again), with the generation it names.
    NixlAdapter(String),
}

/// The entry points a library exports, and whether under the legacy names.
struct EntryPoints {
    init: PluginInitFn,
    fini: PluginFiniFn,
    legacy: bool,
}

/// Looks up the entry points: [`INIT_SYMBOL`] and [`FINI_SYMBOL`], or else the
/// legacy names ([`LEGACY_INIT_SYMBOL`], [`LEGACY_FINI_SYMBOL`]) that plug-ins
/// built against earlier versions of the ABI export.
fn entry_points(
    library: &Library,
    missing: &dyn Fn(&'static str, libloading::Error) -> PluginError,
) -> Result<EntryPoints, PluginError> {
    // SAFETY: the ABI fixes this symbol's type as `PluginInitFn`; the pointer is
    // only called while `library` stays loaded (both live in `LoadedLibrary`).
    let (init, fini_symbol, fini_name, legacy) =
        match unsafe { library.get::<PluginInitFn>(INIT_SYMBOL) } {
            Ok(init) => (
                *init,
                FINI_SYMBOL,
                "nixl_telemetry_exporter_plugin_fini",
                false,
            ),
            // SAFETY: as above: the legacy name has the same type.
            Err(cause) => match unsafe { library.get::<PluginInitFn>(LEGACY_INIT_SYMBOL) } {
                Ok(init) => (
                    *init,
                    LEGACY_FINI_SYMBOL,
                    "nixl_telemetry_plugin_fini",
                    true,
                ),
                Err(_) => return Err(missing("nixl_telemetry_exporter_plugin_init", cause)),
            },
        };
    // SAFETY: as above, for `PluginFiniFn`.
    let fini: PluginFiniFn = *unsafe { library.get::<PluginFiniFn>(fini_symbol) }
        .map_err(|cause| missing(fini_name, cause))?;
    Ok(EntryPoints { init, fini, legacy })
}

/// Opens `path`, checks its symbols and descriptor. Nothing of the plug-in runs
/// but its init function (and the library's own constructors).
fn open(name: &str, path: &Path, searched: &[SearchedPath]) -> Result<Opened, PluginError> {
    let searched = || searched.to_vec();
    // A truncated library would be mapped all the same, and the first touch of
    // a segment's missing part kills the process (SIGBUS) inside dlopen.
    super::elf_check::check_segments_inside_file(path).map_err(|defect| {
        PluginError::IncompleteFile {
            name: name.to_owned(),
            path: path.to_owned(),
            defect,
            searched: searched(),
        }
    })?;
    // SAFETY: loading a library runs its initialisers. That is the point of a
    // plug-in: the user chose this file through the search path.
    let library: Library = unsafe { UnixLibrary::open(Some(path), RTLD_NOW | RTLD_LOCAL) }
        .map_err(|cause| PluginError::NotLoadable {
            name: name.to_owned(),
            path: path.to_owned(),
            cause,
            searched: searched(),
        })?
        .into();
    // SAFETY: the symbol's address is taken as a pointer (libloading reads a
    // symbol's address as the requested pointer type), nothing is called.
    if let Ok(mark) = unsafe { library.get::<*const c_char>(NIXL_ADAPTER_SYMBOL) } {
        let mark: *const c_char = *mark;
        // SAFETY: the mark is a NUL-terminated `const char[]` of the library (the
        // adapters' contract), read while the library is loaded.
        let generation = unsafe { owned_c_str(mark) };
        return Ok(Opened::NixlAdapter(generation));
    }
    let missing = |symbol: &'static str, cause| PluginError::MissingSymbol {
        name: name.to_owned(),
        path: path.to_owned(),
        symbol,
        cause,
        searched: searched(),
    };
    let EntryPoints { init, fini, legacy } = entry_points(&library, &missing)?;
    if legacy {
        tracing::warn!(
            plugin = name,
            path = %path.display(),
            "exporter plug-in exports its entry points under the deprecated names \
             nixl_telemetry_plugin_init/_fini (built against an earlier nixl_telemetry_plugin.h or \
             nixl-telemetry-abi): loaded, but NIXL misreads such a file when it finds it in its \
             plug-in directory; rebuild it to export nixl_telemetry_exporter_plugin_init/_fini"
        );
    }
    // SAFETY: the ABI fixes this symbol's type; called only while `library` is
    // loaded (both live in `LoadedLibrary`).
    let last_error: Option<LastErrorFn> = unsafe { library.get::<LastErrorFn>(LAST_ERROR_SYMBOL) }
        .ok()
        .map(|symbol| *symbol);
    // SAFETY: as above, for the optional log and delivery symbols.
    let set_log: Option<SetLogFn> = unsafe { library.get::<SetLogFn>(SET_LOG_SYMBOL) }
        .ok()
        .map(|symbol| *symbol);
    // SAFETY: as above.
    let delivery: Option<DeliveryFn> = unsafe { library.get::<DeliveryFn>(DELIVERY_SYMBOL) }
        .ok()
        .map(|symbol| *symbol);
    // SAFETY: the library is loaded and `init` has the ABI's signature.
    let descriptor = unsafe { init() };
    let checked = read_descriptor(name, path, &searched, descriptor).map_err(|refused| {
        if legacy {
            foreign_if_not_ours(refused)
        } else {
            refused
        }
    });
    match checked {
        Ok((mut functions, plugin_name, version)) => {
            functions.last_error = last_error;
            tracing::debug!(
                plugin = name,
                path = %path.display(),
                descriptor_name = %plugin_name,
                version = %version,
                "exporter plug-in loaded"
            );
            let set_log = set_log.map(|set_log| {
                let context = Box::new(HostLogContext::new(name));
                // SAFETY: the function came from this library, loaded; the
                // callback is callable from any thread, and its context lives
                // in `LoadedLibrary` until set_log is called again with NULL.
                unsafe { set_log(Some(plugin_log::host_log), context.as_pointer()) };
                (set_log, context)
            });
            Ok(Opened::Plugin(LoadedLibrary {
                path: path.to_owned(),
                name: plugin_name,
                version,
                functions,
                fini,
                set_log,
                delivery,
                library: Some(library),
            }))
        }
        Err(refused) => {
            // SAFETY: `init` was called and the library is still loaded (it is
            // unloaded when `library` drops, after this); no exporter exists.
            // init once, fini once before the unload, even for a plug-in the
            // host refuses: it may have set something up in init.
            unsafe { fini() };
            Err(refused)
        }
    }
}

/// A library found through the legacy entry point whose descriptor failed the
/// version checks is most likely one of NIXL's own C++ plug-ins (or a NIXL
/// adapter): `nixl_telemetry_plugin_init` is NIXL's entry point, and NIXL's
/// object starts with its API version and four bytes of padding.
fn foreign_if_not_ours(refused: PluginError) -> PluginError {
    match refused {
        PluginError::UnsupportedApiVersion {
            name,
            path,
            found,
            searched,
            ..
        } => PluginError::ForeignPlugin {
            name,
            path,
            api_version: found,
            searched,
        },
        PluginError::UnsupportedStructSize {
            name,
            path,
            searched,
            ..
        } => PluginError::ForeignPlugin {
            name,
            path,
            api_version: PLUGIN_API_VERSION,
            searched,
        },
        other => other,
    }
}

/// Checks what `init` returned: a version-1 descriptor with the required
/// functions. Returns its functions, name and version.
fn read_descriptor(
    name: &str,
    path: &Path,
    searched: &dyn Fn() -> Vec<SearchedPath>,
    descriptor: *const PluginDescriptor,
) -> Result<(Functions, String, String), PluginError> {
    let invalid = |reason: &'static str| PluginError::InvalidDescriptor {
        name: name.to_owned(),
        path: path.to_owned(),
        reason,
        searched: searched(),
    };
    if descriptor.is_null() {
        return Err(PluginError::InitFailed {
            name: name.to_owned(),
            path: path.to_owned(),
            searched: searched(),
        });
    }
    if !descriptor.is_aligned() {
        return Err(invalid("the descriptor pointer is misaligned"));
    }
    let head = descriptor.cast::<u32>();
    // SAFETY: every version of the descriptor starts with `api_version` and
    // `struct_size` (two u32); the pointer is non-null and aligned, and the plug-in
    // promises it points to a descriptor. Nothing past those 8 bytes is read yet.
    let (api_version, struct_size) = unsafe { (head.read(), head.add(1).read()) };
    if api_version != PLUGIN_API_VERSION {
        return Err(PluginError::UnsupportedApiVersion {
            name: name.to_owned(),
            path: path.to_owned(),
            found: api_version,
            accepted: PLUGIN_API_VERSION,
            searched: searched(),
        });
    }
    if struct_size != V1_STRUCT_SIZE {
        return Err(PluginError::UnsupportedStructSize {
            name: name.to_owned(),
            path: path.to_owned(),
            found: struct_size,
            accepted: V1_STRUCT_SIZE,
            searched: searched(),
        });
    }
    // SAFETY: the plug-in declares a version-1 descriptor of exactly our size;
    // it is static data of the loaded library.
    let descriptor: &PluginDescriptor = unsafe { &*descriptor };
    let functions = Functions {
        create_exporter: descriptor
            .create_exporter
            .ok_or_else(|| invalid("create_exporter is NULL"))?,
        export_event: descriptor
            .export_event
            .ok_or_else(|| invalid("export_event is NULL"))?,
        export_batch: descriptor.export_batch,
        flush: descriptor.flush,
        destroy_exporter: descriptor
            .destroy_exporter
            .ok_or_else(|| invalid("destroy_exporter is NULL"))?,
        last_error: None,
    };
    // SAFETY: the descriptor's strings are NULL or NUL-terminated static data of
    // the loaded library.
    let (plugin_name, version) = unsafe {
        (
            owned_c_str(descriptor.name),
            owned_c_str(descriptor.version),
        )
    };
    Ok((functions, plugin_name, version))
}

/// [`read_descriptor`]'s checks on a descriptor the caller built (the fuzz targets'
/// entry, through `super::fuzzing`): the plug-in's name and version, or the error.
pub(super) fn check_descriptor(
    descriptor: *const PluginDescriptor,
) -> Result<(String, String), PluginError> {
    read_descriptor("fuzzed", Path::new("fuzzed"), &Vec::new, descriptor)
        .map(|(_, name, version)| (name, version))
}

/// Copies a C string, lossily; NULL gives "".
///
/// # Safety
/// `ptr` must be NULL or point to a NUL-terminated string.
unsafe fn owned_c_str(ptr: *const c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: per the caller's contract.
    unsafe { CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned()
}

/// One exporter of a plug-in. Not `Sync`: one thread at a time calls it.
pub(super) struct RawExporter {
    handle: NonNull<c_void>,
    functions: Functions,
    /// Declared last: dropped after `Drop::drop` destroyed the handle.
    library: PluginLibrary,
}

// SAFETY: the ABI lets the host call an exporter from any thread as long as it
// is one thread at a time; `&mut self` on every call and the absence of `Sync`
// guarantee that. The lease is `Send` (an Arc of `Send + Sync` data).
unsafe impl Send for RawExporter {}

impl RawExporter {
    /// Calls `create_exporter`. On failure, the reason the plug-in wrote (or a
    /// note that it wrote none); the lease is then dropped.
    pub(super) fn create(
        library: PluginLibrary,
        agent_name: &CStr,
        max_events_buffered: usize,
        output_path: Option<&CString>,
    ) -> Result<RawExporter, (PluginLibrary, String)> {
        let functions = library.loaded().functions;
        let params = CExporterParams {
            agent_name: agent_name.as_ptr(),
            max_events_buffered,
            output_path: output_path.map_or(std::ptr::null(), |p| p.as_ptr()),
        };
        let mut err = [0u8; ERROR_BUFFER_LEN];
        // SAFETY: `params` and the strings it points to live across the call; `err`
        // is writable for its length; the library is loaded (we hold a lease).
        let handle =
            unsafe { (functions.create_exporter)(&params, err.as_mut_ptr().cast(), err.len()) };
        match NonNull::new(handle) {
            Some(handle) => Ok(RawExporter {
                handle,
                functions,
                library,
            }),
            None => {
                err[ERROR_BUFFER_LEN - 1] = 0;
                let reason = CStr::from_bytes_until_nul(&err)
                    .map(|s| s.to_string_lossy().trim().to_owned())
                    .unwrap_or_default();
                let reason = if reason.is_empty() {
                    "create_exporter returned NULL without a reason".to_owned()
                } else {
                    reason
                };
                Err((library, reason))
            }
        }
    }

    /// The library's lease.
    pub(super) fn library(&self) -> &PluginLibrary {
        &self.library
    }

    /// Calls `export_batch`; `None` when the plug-in has none.
    pub(super) fn export_batch(&mut self, events: &[Event]) -> Option<i32> {
        let export_batch = self.functions.export_batch?;
        // SAFETY: the handle is live (destroyed only in Drop), the library is loaded
        // (we hold a lease), `events` is valid for `len` events of the ABI's layout,
        // and `&mut self` keeps the call on one thread.
        Some(unsafe { export_batch(self.handle.as_ptr(), events.as_ptr(), events.len()) })
    }

    /// Calls `export_event`.
    pub(super) fn export_event(&mut self, event: &Event) -> i32 {
        // SAFETY: as for `export_batch`, with one valid event.
        unsafe { (self.functions.export_event)(self.handle.as_ptr(), event) }
    }

    /// Calls `flush`; `None` when the plug-in has none.
    pub(super) fn flush(&mut self) -> Option<i32> {
        let flush = self.functions.flush?;
        // SAFETY: as for `export_batch`.
        Some(unsafe { flush(self.handle.as_ptr()) })
    }

    /// The reason the plug-in gives for this exporter's most recent failed
    /// call, through `nixl_telemetry_exporter_last_error`; `None` when it has
    /// no such function or gives no reason.
    pub(super) fn last_error(&mut self) -> Option<String> {
        let last_error = self.functions.last_error?;
        let mut err = [0u8; ERROR_BUFFER_LEN];
        // SAFETY: as for `export_batch`; `err` is writable for its length.
        let len = unsafe { last_error(self.handle.as_ptr(), err.as_mut_ptr().cast(), err.len()) };
        if len == 0 {
            return None;
        }
        err[ERROR_BUFFER_LEN - 1] = 0;
        let reason = CStr::from_bytes_until_nul(&err)
            .map(|s| s.to_string_lossy().trim().to_owned())
            .unwrap_or_default();
        (!reason.is_empty()).then_some(reason)
    }
}

impl Drop for RawExporter {
    fn drop(&mut self) {
        // SAFETY: the handle came from this library's `create_exporter` and is
        // destroyed exactly once, here, while the lease keeps the library loaded.
        unsafe { (self.functions.destroy_exporter)(self.handle.as_ptr()) };
    }
}
