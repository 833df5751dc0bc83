//! The plug-in through the C functions `export_plugin!` generates, as the host
//! calls them: descriptor, create (with its error text), export, flush, destroy.
//! (Configuration from the environment is checked in `env_configuration.rs`,
//! a binary of its own, since it changes the process environment.)

mod common;

use std::ffi::{c_char, c_void, CStr, CString};
use std::net::{SocketAddr, TcpListener, TcpStream};

use common::{ev, scrape, value_of};
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
fn the_descriptor_names_the_plugin() {
    let d = descriptor();
    assert_eq!(
        d.api_version,
        nixl_telemetry_abi::plugin::PLUGIN_API_VERSION
    );
    assert_eq!(
        d.struct_size as usize,
        std::mem::size_of::<PluginDescriptor>()
    );
    // SAFETY: static NUL-terminated strings.
    let name = unsafe { CStr::from_ptr(d.name) };
    assert_eq!(name.to_str().unwrap(), "prometheus");
    // SAFETY: as above.
    let version = unsafe { CStr::from_ptr(d.version) };
    assert_eq!(version.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
    assert!(d.export_event.is_some() && d.flush.is_some());
}

#[test]
fn events_exported_through_the_abi_are_scraped() {
    let addr = free_addr();
    let h = create("c-agent", Some(&addr.to_string())).expect("created");
    let events = [
        ev(Category::PERFORMANCE, "agent_xfer_time", 120),
        ev(Category::TRANSFER, "agent_tx_bytes", 4096),
        ev(Category::TRANSFER, "agent_tx_requests_num", 1),
        ev(Category::ERROR, "NIXL_ERR_BACKEND", 1),
    ];
    assert_eq!(export(h, &events), EXPORT_OK);
    let one = ev(Category::TRANSFER, "agent_tx_bytes", 4);
    let export_event = descriptor().export_event.unwrap();
    let flush = descriptor().flush.unwrap();
    // SAFETY: h is live; the event outlives the call.
    unsafe {
        assert_eq!(export_event(h, &one), EXPORT_OK);
        assert_eq!(flush(h), EXPORT_OK);
    }
    assert_eq!(export(h, &[]), EXPORT_OK, "an empty batch is fine");
    let body = scrape(addr, None).text();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let labels = format!("hostname=\"{}\",agent_name=\"c-agent\"", host.trim());
    assert_eq!(
        value_of(
            &body,
            &format!("agent_tx_bytes_total{{category=\"TRANSFER\",{labels}}}")
        )
        .as_deref(),
        Some("4100")
    );
    assert_eq!(
        value_of(
            &body,
            &format!("agent_errors_total{{category=\"ERROR\",{labels},status=\"backend\"}}")
        )
        .as_deref(),
        Some("1")
    );
    destroy(h);
    assert!(
        TcpStream::connect(addr).is_err(),
        "destroy closes the endpoint"
    );
}

#[test]
fn bad_addresses_fail_creation_with_the_accepted_forms() {
    for bad in ["localhost:9090", "127.0.0.1", "1.2.3.4:70000", "::1:80"] {
        let err = create("bad", Some(bad)).unwrap_err();
        assert!(err.contains(bad), "{err}");
        assert!(
            err.contains("127.0.0.1:9090") && err.contains("[::1]:9090"),
            "{err}"
        );
    }
}

#[test]
fn a_busy_address_and_a_duplicate_name_fail_creation() {
    let holder = TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = holder.local_addr().unwrap().to_string();
    let err = create("x", Some(&busy)).unwrap_err();
    assert!(err.contains(&busy), "{err}");

    let addr = free_addr().to_string();
    let h = create("same", Some(&addr)).unwrap();
    let err = create("same", Some(&addr)).unwrap_err();
    assert!(
        err.contains("already exported") && err.contains(&addr),
        "{err}"
    );
    let other = create("other", Some(&addr)).expect("another name joins");
    destroy(other);
    destroy(h);
}
