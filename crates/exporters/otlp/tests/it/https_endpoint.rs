//! `https://` endpoints are checked against the system's trust store (read
//! with the operating system's rules, so `SSL_CERT_FILE` selects it here):
//! a collector whose certificate chains to it gets the metrics; with a store
//! that does not hold its CA, nothing is delivered.
//! The test sets the process environment, so it runs in a process of its own.

use crate::common;
use nixl_telemetry_testsupport::child;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use nixl_telemetry_abi::{Category, Event};
use nixl_telemetry_otlp::{OtlpExporter, Settings};

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls")
}

fn settings(url: &str) -> Settings {
    let mut s = Settings::new(url).unwrap();
    s.export_interval = Duration::from_millis(100);
    s.retry_initial = Duration::from_millis(50);
    s.retry_max = Duration::from_millis(200);
    s
}

/// Set in the process the test runs in.
const OWN_PROCESS: &str = "NIXL_OTLP_TEST_HTTPS_CHILD";

#[test]
#[ignore = "needs the OTLP receiver's Python packages: run scripts/test-otlp.sh"]
fn https_uses_the_system_trust_store() {
    if !child::in_own_process(
        module_path!(),
        "https_uses_the_system_trust_store",
        OWN_PROCESS,
    ) {
        return;
    }
    let receiver = Receiver::start_tls(
        &fixtures().join("server.pem"),
        &fixtures().join("server.key"),
    );
    let url = format!("https://localhost:{}", receiver.port);

    // A store without the test CA (an empty directory and a file holding a
    // certificate of no relation) has nothing to trust the collector with.
    let empty = tempfile::tempdir().unwrap();
    std::env::set_var("SSL_CERT_DIR", empty.path());
    std::env::set_var("SSL_CERT_FILE", fixtures().join("server.pem"));
    let mut untrusting = OtlpExporter::with_settings("untrusting", &settings(&url)).unwrap();
    untrusting
        .record(&[Event::new(1, Category::TRANSFER, "agent_tx_bytes", 1)])
        .unwrap();
    untrusting.publish();
    let deadline = Instant::now() + Duration::from_secs(20);
    while untrusting.stats().metric_requests_retried < 2 {
        assert!(Instant::now() < deadline, "{:?}", untrusting.stats());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(untrusting.stats().metric_requests_delivered, 0);
    drop(untrusting);
    assert!(
        receiver.requests().is_empty(),
        "an untrusted handshake delivered"
    );

    // The test CA as the trust store: delivered.
    std::env::set_var("SSL_CERT_FILE", fixtures().join("ca.pem"));
    let mut trusting = OtlpExporter::with_settings("trusting", &settings(&url)).unwrap();
    trusting
        .record(&[Event::new(1, Category::TRANSFER, "agent_tx_bytes", 77)])
        .unwrap();
    trusting.publish();
    receiver.wait_for(Duration::from_secs(20), "metrics over TLS", |r| {
        last_value_is(r, "agent_tx_bytes_total", "trusting", 77)
    });
}
