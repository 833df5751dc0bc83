//! Configuration from the process environment, through the C entry point: the
//! only test of this binary, so it owns the environment.

mod common;

use std::ffi::{c_char, c_void, CStr, CString};
use std::net::{SocketAddr, TcpListener};

use common::{ev, scrape};
use nixl_telemetry_abi::plugin::{ExporterParams, PluginDescriptor, EXPORT_OK};
use nixl_telemetry_abi::{Category, Event};

fn descriptor() -> &'static PluginDescriptor {
    // SAFETY: the descriptor is a static built by export_plugin!.
    unsafe { &*telemetry_exporter_prometheus::nixl_telemetry_plugin_init() }
}

/// Creates an exporter through the C entry point: the handle or the error text.
fn create(agent: &str, output: Option<&str>) -> Result<*mut c_void, String> {
    let agent = CString::new(agent).unwrap();
    let output = output.map(|o| CString::new(o).unwrap());
    let params = ExporterParams {
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

fn export(handle: *mut c_void, events: &[Event]) -> i32 {
    let batch = descriptor().export_batch.expect("export_batch");
    // SAFETY: handle is live; events is valid for its length.
    unsafe { batch(handle, events.as_ptr(), events.len()) }
}

fn destroy(handle: *mut c_void) {
    let destroy = descriptor().destroy_exporter.expect("destroy_exporter");
    // SAFETY: handle came from create and is destroyed once.
    unsafe { destroy(handle) }
}

fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

#[test]
fn configuration_comes_from_the_environment() {
    // The only test of this binary: nothing else reads the environment meanwhile.
    let set = |k: &str, v: Option<&str>| match v {
        Some(v) => std::env::set_var(k, v),
        None => std::env::remove_var(k),
    };
    let port = free_addr().port();
    set("NIXL_TELEMETRY_PROMETHEUS_PORT", Some(&port.to_string()));
    set("NIXL_TELEMETRY_PROMETHEUS_LOCAL", Some("yes"));
    set("NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US", Some("5,50"));
    let h = create("env", None).expect("created from the environment");
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    assert_eq!(
        export(h, &[ev(Category::PERFORMANCE, "agent_xfer_time", 7)]),
        EXPORT_OK
    );
    let body = scrape(addr, None).text();
    let les: Vec<&str> = body
        .lines()
        .filter(|l| l.starts_with("agent_xfer_time_us_bucket{"))
        .map(|l| l.rsplit_once("le=\"").unwrap().1)
        .collect();
    assert_eq!(les, ["5\"} 0", "50\"} 1", "+Inf\"} 1"]);
    destroy(h);

    for (buckets, reason) in [
        ("10,5", "strictly increasing"),
        ("", "empty"),
        ("1,x", "not a number"),
    ] {
        set("NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US", Some(buckets));
        let err = create("env", None).unwrap_err();
        assert!(
            err.contains("NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US") && err.contains(reason),
            "{buckets:?}: {err}"
        );
    }
    set("NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US", None);
    set("NIXL_TELEMETRY_PROMETHEUS_PORT", Some("ninety"));
    let err = create("env", None).unwrap_err();
    assert!(
        err.contains("NIXL_TELEMETRY_PROMETHEUS_PORT") && err.contains("ninety"),
        "{err}"
    );
    set("NIXL_TELEMETRY_PROMETHEUS_PORT", Some(&port.to_string()));
    set("NIXL_TELEMETRY_PROMETHEUS_LOCAL", Some("perhaps"));
    let err = create("env", None).unwrap_err();
    assert!(err.contains("NIXL_TELEMETRY_PROMETHEUS_LOCAL"), "{err}");
    set("NIXL_TELEMETRY_PROMETHEUS_LOCAL", None);
    set("NIXL_TELEMETRY_PROMETHEUS_PORT", None);
}
