//! A C program calls every function with bad input (NULL, empty, over-long and
//! non-UTF-8 names, unknown categories, bad struct sizes, a too-small error
//! buffer…) and checks each status and message; then its valid calls must be
//! in the ring, exactly, as the Rust reader reads it.

use crate::support;

use support::{build_c, read_ring, run, test_source, triples};

#[test]
fn every_function_refuses_bad_input_and_records_the_valid_calls() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("bad_inputs");
    build_c(&[test_source("c/bad_inputs.c")], &exe, &[]);
    let rings = dir.path().join("rings");
    let out = run(&exe, &[rings.to_str().unwrap()], &[]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("all checks passed"));

    let events = read_ring(&rings.join("c-bad-inputs"));
    let s = |x: &str| x.to_owned();
    let want = vec![
        (3, s("c_handle_event"), 7),
        (3, s("handle_name_longer_than_thirty_"), 8),
        (3, s("c_handle_event"), 9),
        (7, s("generic_event"), 10),
        (7, "a".repeat(30), 11),
        (5, s("agent_xfer_time"), 120),
        (1, s("agent_tx_bytes"), 4096),
        (1, s("agent_tx_requests_num"), 1),
        (5, s("agent_xfer_time"), 5),
        (1, s("agent_rx_bytes"), 512),
        (1, s("agent_rx_requests_num"), 1),
        (5, s("agent_xfer_post_time"), 3),
        (5, s("agent_xfer_post_time"), 4),
        (0, s("agent_memory_registered"), 65536),
        (0, s("agent_memory_deregistered"), 65536),
        (4, s("NIXL_ERR_BACKEND"), 1),
        (3, s("ucx_rdma_writes"), 2),
        (2, s("agent_connect"), 1),
    ];
    assert_eq!(triples(&events), want);
    // The caller's timestamps are kept as given; the others are "now".
    assert_eq!(events[2].timestamp_us, 1_234_567);
    assert!(events[8..11].iter().all(|e| e.timestamp_us == 2_000_000));
    assert_eq!(events[12].timestamp_us, 3_000_000);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64;
    for e in [&events[0], &events[5], &events[15]] {
        assert!(
            e.timestamp_us.abs_diff(now) < 60_000_000,
            "{e:?} vs now {now}"
        );
    }
    // One transfer: one timestamp for its three events.
    assert!(events[5..8]
        .iter()
        .all(|e| e.timestamp_us == events[5].timestamp_us));
}
