//! The examples of `examples/c` and `examples/cpp`, compiled straight against
//! the library cargo built (scripts/test-capi.sh builds them again through
//! pkg-config and CMake from an installed prefix) and run: their rings hold
//! the transfer loop they recorded.

use crate::support;

use support::{build_c, build_cpp, read_ring, run, workspace_root};

fn names(events: &[nixl_telemetry::Event]) -> Vec<String> {
    events.iter().map(|e| e.name().into_owned()).collect()
}

#[test]
fn the_c_example_records_its_transfer_loop_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("transfer_loop");
    build_c(
        &[workspace_root().join("examples/c/transfer_loop.c")],
        &exe,
        &[],
    );
    let rings = dir.path().join("rings");
    let out = run(
        &exe,
        &["c-example", "50"],
        &[
            ("NIXL_TELEMETRY_ENABLE", "1"),
            ("NIXL_TELEMETRY_DIR", rings.to_str().unwrap()),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("enabled=1 recorded=253 delivered=253 dropped=0"),
        "{stdout}"
    );
    let events = read_ring(&rings.join("c-example"));
    let names = names(&events);
    assert_eq!(names.len(), 253);
    assert_eq!(
        names[..2],
        ["agent_memory_registered", "example_peer_connected"]
    );
    assert_eq!(
        names[2..7],
        [
            "agent_xfer_post_time",
            "agent_xfer_time",
            "agent_tx_bytes",
            "agent_tx_requests_num",
            "example_completions"
        ]
    );
    assert_eq!(names[8..10], ["agent_xfer_time", "agent_rx_bytes"]);
    assert_eq!(names[252], "agent_memory_deregistered");

    // Telemetry off (NIXL_TELEMETRY_ENABLE unset): the host runs, records nothing.
    let out = run(&exe, &["c-example-off", "5"], &[]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("enabled=0 recorded=0"));
}

#[test]
fn the_cpp_example_records_its_transfer_loop_from_settings() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("transfer_loop");
    build_cpp(
        &[workspace_root().join("examples/cpp/transfer_loop.cpp")],
        &exe,
        "c++11",
    );
    let rings = dir.path().join("rings");
    let out = run(&exe, &[rings.to_str().unwrap(), "cpp-example", "40"], &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("recorded=162 delivered=162 dropped=0"),
        "{stdout}"
    );
    let events = read_ring(&rings.join("cpp-example"));
    assert_eq!(events.len(), 162);
    assert_eq!(events[0].name(), "agent_memory_registered");
    assert_eq!(events[0].value, 2 << 16);
    assert_eq!(events[161].name(), "agent_memory_deregistered");
    assert_eq!(
        events
            .iter()
            .filter(|e| e.name() == "example_completions")
            .count(),
        40
    );
}
