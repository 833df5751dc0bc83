//! Entry points for the fuzz targets in `fuzz/` (not a stable interface): the
//! loader's checks of a plug-in file and of the descriptor its
//! `nixl_telemetry_exporter_plugin_init` returns, reachable without loading a library.

use std::ffi::{c_char, c_void, CString};
use std::path::Path;

use nixl_telemetry_abi::c_abi::{CExporterParams, PluginDescriptor};
use nixl_telemetry_abi::Event;

use super::{ElfDefect, PluginError};

/// The ELF check the loader runs on `path` before `dlopen`.
pub fn check_elf(path: &Path) -> Result<(), ElfDefect> {
    super::elf_check::check_segments_inside_file(path)
}

unsafe extern "C" fn never_create(
    _params: *const CExporterParams,
    _err: *mut c_char,
    _err_len: usize,
) -> *mut c_void {
    std::ptr::null_mut()
}

unsafe extern "C" fn never_export_event(_exporter: *mut c_void, _event: *const Event) -> i32 {
    -1
}

unsafe extern "C" fn never_export_batch(
    _exporter: *mut c_void,
    _events: *const Event,
    _count: usize,
) -> i32 {
    -1
}

unsafe extern "C" fn never_flush(_exporter: *mut c_void) -> i32 {
    -1
}

unsafe extern "C" fn never_destroy(_exporter: *mut c_void) {}

/// A descriptor as a plug-in could return it, described by the fuzz target.
#[derive(Debug, Clone)]
pub struct DescriptorShape {
    /// `api_version`.
    pub api_version: u32,
    /// `struct_size`.
    pub struct_size: u32,
    /// Which functions are non-NULL: bit 0 create, 1 export_event, 2 export_batch,
    /// 3 flush, 4 destroy.
    pub functions: u8,
    /// The name's bytes (a NUL is appended; NULL when `None`).
    pub name: Option<Vec<u8>>,
    /// The version's bytes (a NUL is appended; NULL when `None`).
    pub version: Option<Vec<u8>>,
    /// Hand the loader a misaligned pointer (one byte past an aligned descriptor).
    pub misaligned: bool,
    /// Hand the loader NULL (an `init` that failed).
    pub null: bool,
}

fn c_text(bytes: &Option<Vec<u8>>) -> Option<CString> {
    bytes.as_ref().map(|b| {
        let cut = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        CString::new(&b[..cut]).unwrap_or_default()
    })
}

/// Runs the loader's descriptor checks on the descriptor `shape` describes: the
/// plug-in's name and version, or the error the loader would report.
pub fn check_descriptor(shape: &DescriptorShape) -> Result<(String, String), PluginError> {
    let name = c_text(&shape.name);
    let version = c_text(&shape.version);
    let has = |bit: u8| shape.functions & (1 << bit) != 0;
    let descriptor = PluginDescriptor {
        api_version: shape.api_version,
        struct_size: shape.struct_size,
        name: name.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()),
        version: version.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()),
        create_exporter: has(0).then_some(never_create as _),
        export_event: has(1).then_some(never_export_event as _),
        export_batch: has(2).then_some(never_export_batch as _),
        flush: has(3).then_some(never_flush as _),
        destroy_exporter: has(4).then_some(never_destroy as _),
    };
    let pointer: *const PluginDescriptor = if shape.null {
        std::ptr::null()
    } else if shape.misaligned {
        // Never dereferenced: the loader refuses a misaligned pointer first.
        std::ptr::from_ref(&descriptor)
            .cast::<u8>()
            .wrapping_add(1)
            .cast()
    } else {
        &descriptor
    };
    super::library::check_descriptor(pointer)
}
