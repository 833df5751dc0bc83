//! The plug-in's warnings go to the log callback a host gives through
//! `nixl_telemetry_exporter_set_log`, rate-limited, and
//! `nixl_telemetry_exporter_delivery` counts the events that never reached
//! the collector. Driven through the plug-in's own C entry points, as a host
//! calls them, against a port where nothing listens. (In a process of its
//! own: it sets the process environment and the plug-in's log subscriber.)

use std::ffi::{c_char, c_void, CStr, CString};
use std::net::TcpListener;
use std::sync::Mutex;
use std::time::Duration;

use nixl_telemetry_abi::c_abi::{CDelivery, CExporterParams, PluginDescriptor, LOG_WARN};
use nixl_telemetry_abi::{Category, Event};
use nixl_telemetry_testsupport::child;
use telemetry_exporter_otlp::{
    nixl_telemetry_exporter_delivery, nixl_telemetry_exporter_plugin_init,
    nixl_telemetry_exporter_set_log,
};

/// Set in the process the test runs in.
const OWN_PROCESS: &str = "NIXL_OTLP_TEST_LOG_CHILD";

static MESSAGES: Mutex<Vec<(i32, String)>> = Mutex::new(Vec::new());

unsafe extern "C" fn collect(context: *mut c_void, level: i32, message: *const c_char) {
    assert_eq!(context as usize, 0x5eed, "the context comes back");
    // SAFETY: the plug-in passes a NUL-terminated line valid during the call.
    let text = unsafe { CStr::from_ptr(message) }
        .to_string_lossy()
        .into_owned();
    MESSAGES.lock().unwrap().push((level, text));
}

#[test]
fn warnings_reach_the_hosts_callback_and_undelivered_events_are_counted() {
    if !child::in_own_process(
        module_path!(),
        "warnings_reach_the_hosts_callback_and_undelivered_events_are_counted",
        OWN_PROCESS,
    ) {
        return;
    }
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::env::set_var("OTEL_METRIC_EXPORT_INTERVAL", "100");
    std::env::set_var("OTEL_EXPORTER_OTLP_TIMEOUT", "300");
    // SAFETY: the init and set_log entry points of this plug-in, called as a
    // host calls them: init first, then the callback (a static function,
    // callable from any thread for the whole test).
    let descriptor: &PluginDescriptor = unsafe { &*nixl_telemetry_exporter_plugin_init() };
    // SAFETY: as above: `collect` is callable from any thread until the end.
    unsafe { nixl_telemetry_exporter_set_log(Some(collect), 0x5eed as *mut c_void) };

    let agent = CString::new("initiator").unwrap();
    let url = CString::new(format!("http://127.0.0.1:{port}")).unwrap();
    let params = CExporterParams {
        agent_name: agent.as_ptr(),
        max_events_buffered: 64,
        output_path: url.as_ptr(),
    };
    let mut err = [0 as c_char; 256];
    // SAFETY: params and err are valid for the call.
    let h = unsafe { (descriptor.create_exporter.unwrap())(&params, err.as_mut_ptr(), err.len()) };
    assert!(!h.is_null());
    let events = [
        Event::new(1, Category::TRANSFER, "agent_tx_bytes", 64),
        Event::new(2, Category::TRANSFER, "agent_tx_requests_num", 1),
        Event::new(3, Category::PERFORMANCE, "agent_xfer_time", 9),
    ];
    // SAFETY: h is live; the events are valid for the call.
    let rc = unsafe { (descriptor.export_batch.unwrap())(h, events.as_ptr(), events.len()) };
    assert_eq!(rc, 0);
    // Metrics every 100 ms, each refused at once and retried with backoff.
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: h came from create_exporter and is destroyed once.
    unsafe { (descriptor.destroy_exporter.unwrap())(h) };

    let messages = MESSAGES.lock().unwrap().clone();
    let failed: Vec<_> = messages
        .iter()
        .filter(|(_, m)| m.starts_with("OTLP export failed; retrying with backoff"))
        .collect();
    assert_eq!(failed.len(), 1, "{messages:#?}");
    assert_eq!(failed[0].0, LOG_WARN);
    assert!(
        failed[0].1.contains(&format!("127.0.0.1:{port}")),
        "{messages:#?}"
    );
    assert!(
        messages.iter().all(|(_, m)| !m.contains('\n')),
        "one line each: {messages:#?}"
    );
    let stopped: Vec<_> = messages
        .iter()
        .filter(|(_, m)| m.starts_with("OTLP exporter stopped: 0 of 3 events"))
        .collect();
    assert_eq!(stopped.len(), 1, "{messages:#?}");
    assert_eq!(stopped[0].0, LOG_WARN);
    assert!(stopped[0].1.contains("3 did not"), "{messages:#?}");

    // Every event accepted, none delivered, all undelivered: the pipeline stopped.
    let mut out = CDelivery {
        struct_size: std::mem::size_of::<CDelivery>() as u32,
        ..CDelivery::default()
    };
    // SAFETY: out is writable for the size it declares.
    assert_eq!(unsafe { nixl_telemetry_exporter_delivery(&mut out) }, 0);
    assert_eq!(
        (
            out.events_accepted,
            out.events_delivered,
            out.events_undelivered
        ),
        (3, 0, 3)
    );
    // A host that knows only the first field gets only it: nothing past the
    // size it declared is written.
    let mut short = [0u64; 5];
    short[0] = 16; // struct_size 16, reserved 0: one field
    short[3] = 77;
    // SAFETY: 40 writable bytes, 16 declared.
    let rc = unsafe { nixl_telemetry_exporter_delivery(short.as_mut_ptr().cast()) };
    assert_eq!(rc, 0);
    assert_eq!((short[1], short[2], short[3]), (3, 0, 77));

    // Taken back: no more calls of the callback.
    // SAFETY: as a host does before fini.
    unsafe { nixl_telemetry_exporter_set_log(None, std::ptr::null_mut()) };
    let before = MESSAGES.lock().unwrap().len();
    nixl_telemetry_abi::plugin_log::deliver(LOG_WARN, "to stderr now");
    assert_eq!(MESSAGES.lock().unwrap().len(), before);
}
