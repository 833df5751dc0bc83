//! The plug-in's C entry points, called as the host calls them.

use std::ffi::{c_char, c_void, CStr, CString};
use std::net::SocketAddr;

use nixl_telemetry_abi::c_abi::{CExporterParams, PluginDescriptor};
use nixl_telemetry_abi::Event;

/// The descriptor `nixl_telemetry_exporter_plugin_init` returns.
pub fn descriptor() -> &'static PluginDescriptor {
    // SAFETY: the descriptor is a static built by export_plugin!.
    unsafe { &*telemetry_exporter_prometheus::nixl_telemetry_exporter_plugin_init() }
}

/// Creates an exporter through the C entry point: the handle or the error text.
pub fn create(agent: &str, output: Option<&str>) -> Result<*mut c_void, String> {
    let agent = CString::new(agent).unwrap();
    let output = output.map(|o| CString::new(o).unwrap());
    let params = CExporterParams {
        agent_name: agent.as_ptr(),
        max_events_buffered: 4096,
        output_path: output.as_ref().map_or(std::ptr::null(), |o| o.as_ptr()),
    };
    let mut err = [0 as c_char; 512];
    let create = descriptor().create_exporter.expect("create_exporter");
    // SAFETY: params and err are valid for the call; strings outlive it.
    let handle = unsafe { create(&params, err.as_mut_ptr(), err.len()) };
    if handle.is_null() {
        // SAFETY: the plug-in NUL-terminates the reason within err.
        let text = unsafe { CStr::from_ptr(err.as_ptr()) };
        Err(text.to_string_lossy().into_owned())
    } else {
        Ok(handle)
    }
}

/// Exports a batch through `export_batch`.
pub fn export(handle: *mut c_void, events: &[Event]) -> i32 {
    let batch = descriptor().export_batch.expect("export_batch");
    // SAFETY: handle is live; events is valid for its length.
    unsafe { batch(handle, events.as_ptr(), events.len()) }
}

/// Destroys an exporter through `destroy_exporter`.
pub fn destroy(handle: *mut c_void) {
    let destroy = descriptor().destroy_exporter.expect("destroy_exporter");
    // SAFETY: handle came from create and is destroyed once.
    unsafe { destroy(handle) }
}

/// A loopback address with a port that was free a moment ago, never the same
/// twice in this process.
pub fn free_addr() -> SocketAddr {
    nixl_telemetry_testsupport::loopback::unused_address()
}
