//! Configuration from the process environment, through the C entry point. The
//! test runs in a process of its own, so it owns the environment while the
//! other tests of the binary run.

use crate::common;
use nixl_telemetry_testsupport::child;

use std::net::SocketAddr;

use common::c_entry::{create, destroy, export, free_addr};
use common::{ev, scrape};
use nixl_telemetry_abi::c_abi::EXPORT_OK;
use nixl_telemetry_abi::Category;

/// Set in the process the test runs in.
const OWN_PROCESS: &str = "NIXL_PROMETHEUS_TEST_ENV_CHILD";

#[test]
fn configuration_comes_from_the_environment() {
    if !child::in_own_process(
        module_path!(),
        "configuration_comes_from_the_environment",
        OWN_PROCESS,
    ) {
        return;
    }
    // In a process of its own: nothing else reads the environment meanwhile.
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

    // Blank is unset, as in NIXL: the default buckets (10 µs … 10 s).
    set("NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US", Some(""));
    let h = create("env", None).expect("a blank bucket list means the defaults");
    let body = scrape(addr, None).text();
    let first = body
        .lines()
        .find(|l| l.starts_with("agent_xfer_time_us_bucket{"))
        .unwrap();
    assert!(first.contains("le=\"10\""), "{first}");
    destroy(h);

    for (buckets, reason) in [
        ("10,5", "strictly increasing"),
        (",", "bound 1 is empty"),
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
    // The on/off words and their "accepted" text are the host's own.
    assert!(
        err.contains(nixl_telemetry_abi::env::SWITCH_ACCEPTED),
        "{err}"
    );
    set("NIXL_TELEMETRY_PROMETHEUS_LOCAL", None);

    // A value that is not UTF-8 is an error naming its variable (as in the
    // host's configuration), not a lossy conversion.
    for variable in [
        "NIXL_TELEMETRY_PROMETHEUS_PORT",
        "NIXL_TELEMETRY_PROMETHEUS_LOCAL",
        "NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US",
    ] {
        use std::os::unix::ffi::OsStrExt;
        std::env::set_var(variable, std::ffi::OsStr::from_bytes(b"9\xff"));
        let err = create("env", None).unwrap_err();
        assert!(
            err.contains(variable) && err.contains("not UTF-8"),
            "{variable}: {err}"
        );
        set(variable, None);
    }
    set("NIXL_TELEMETRY_PROMETHEUS_PORT", None);
}
