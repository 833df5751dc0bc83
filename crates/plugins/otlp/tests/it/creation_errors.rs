//! Creating the plug-in's exporter through its C entry points with unusable
//! configuration: the error text names the variable and what is accepted.
//! (In a process of its own: it sets the process environment.)

use std::ffi::{CStr, CString};

use nixl_telemetry_abi::c_abi::{CExporterParams, PluginDescriptor};
use nixl_telemetry_testsupport::child;
use telemetry_exporter_otlp::nixl_telemetry_exporter_plugin_init;

/// Set in the process the test runs in.
const OWN_PROCESS: &str = "NIXL_OTLP_TEST_CREATION_CHILD";

fn descriptor() -> &'static PluginDescriptor {
    // SAFETY: the descriptor is a static built by export_plugin!.
    unsafe { &*nixl_telemetry_exporter_plugin_init() }
}

/// Creates an exporter; `Ok(handle)` or `Err(message)`.
fn create(agent: &str, output: Option<&str>) -> Result<*mut core::ffi::c_void, String> {
    let agent = CString::new(agent).unwrap();
    let output = output.map(|o| CString::new(o).unwrap());
    let params = CExporterParams {
        agent_name: agent.as_ptr(),
        max_events_buffered: 64,
        output_path: output.as_ref().map_or(core::ptr::null(), |o| o.as_ptr()),
    };
    let mut err = [0 as core::ffi::c_char; 512];
    // SAFETY: params and err are valid for the call.
    let h =
        unsafe { (descriptor().create_exporter.unwrap())(&params, err.as_mut_ptr(), err.len()) };
    if h.is_null() {
        // SAFETY: the plug-in NUL-terminates err.
        Err(unsafe { CStr::from_ptr(err.as_ptr()) }
            .to_string_lossy()
            .into_owned())
    } else {
        Ok(h)
    }
}

fn destroy(h: *mut core::ffi::c_void) {
    // SAFETY: h came from create_exporter and is destroyed once.
    unsafe { (descriptor().destroy_exporter.unwrap())(h) }
}

#[test]
fn unusable_values_fail_creation_naming_the_variable() {
    if !child::in_own_process(
        module_path!(),
        "unusable_values_fail_creation_naming_the_variable",
        OWN_PROCESS,
    ) {
        return;
    }
    // SAFETY: static NUL-terminated string.
    let name = unsafe { CStr::from_ptr(descriptor().name) };
    assert_eq!(name.to_str().unwrap(), "otlp");
    for (var, bad, accepted) in [
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "collector:4318",
            "http:// or https:// URL",
        ),
        (
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
            "ftp://c",
            "http:// or https:// URL",
        ),
        ("OTEL_EXPORTER_OTLP_HEADERS", "authorization", "key=value"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "10s", "milliseconds"),
        ("OTEL_EXPORTER_OTLP_COMPRESSION", "brotli", "gzip or none"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "http/protobuf"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "-5", "milliseconds"),
        ("OTEL_RESOURCE_ATTRIBUTES", "a=%G1", "key=value"),
        (
            "NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US",
            "10,5",
            "strictly increasing",
        ),
        ("NIXL_TELEMETRY_OTLP_EVENTS", "sometimes", "on (y, yes"),
        ("NIXL_TELEMETRY_OTLP_QUEUE_EVENTS", "0", "from 1 to"),
    ] {
        std::env::set_var(var, bad);
        let err = create("agent", None).expect_err(var);
        std::env::remove_var(var);
        assert!(err.contains(var), "{var}: {err}");
        assert!(err.contains(&format!("{bad:?}")), "{var}: {err}");
        assert!(err.contains(accepted), "{var}: {err}");
    }
    let err = create("agent", Some("/tmp/rings")).unwrap_err();
    assert!(err.contains("NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH"), "{err}");

    // Valid settings create; a second live agent of one name is refused.
    std::env::set_var("OTEL_METRIC_EXPORT_INTERVAL", "60000");
    let url = "http://127.0.0.1:9";
    let h = create("twin", Some(url)).expect("created");
    let err = create("twin", Some(url)).unwrap_err();
    assert!(
        err.contains("twin") && err.contains("distinct names"),
        "{err}"
    );
    let other = create("sibling", Some(url)).expect("another name is fine");
    destroy(other);
    destroy(h);
    // Once destroyed, the name is free again.
    let h = create("twin", Some(url)).expect("created again");
    destroy(h);
}
