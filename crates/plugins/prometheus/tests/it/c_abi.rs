//! The plug-in through the C functions `export_plugin!` generates, as the host
//! calls them: descriptor, create (with its error text), export, flush, destroy.
//! (Configuration from the environment is checked in `env_configuration.rs`,
//! a binary of its own, since it changes the process environment.)

use crate::common;

use std::ffi::CStr;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

use common::c_entry::{create, descriptor, destroy, export, free_addr};
use common::{ev, scrape, value_of};
use nixl_telemetry_abi::c_abi::{PluginDescriptor, EXPORT_OK};
use nixl_telemetry_abi::Category;

#[test]
fn the_descriptor_names_the_plugin() {
    let d = descriptor();
    assert_eq!(d.api_version, nixl_telemetry_abi::c_abi::PLUGIN_API_VERSION);
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
    let labels = format!("agent_name=\"c-agent\",hostname=\"{}\"", host.trim());
    assert_eq!(
        value_of(&body, &format!("agent_tx_bytes_total{{{labels}}}")).as_deref(),
        Some("4100")
    );
    assert_eq!(
        value_of(
            &body,
            &format!("agent_errors_total{{{labels},status=\"backend\"}}")
        )
        .as_deref(),
        Some("1")
    );
    destroy(h);
    // Nothing listens there any more; or, if another test's server was given
    // the freed port meanwhile, it is not this endpoint.
    if let Ok(mut stream) = TcpStream::connect(addr) {
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let _ = stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        assert!(
            !String::from_utf8_lossy(&answer).contains("agent_name=\"c-agent\""),
            "destroy closes the endpoint"
        );
    }
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
