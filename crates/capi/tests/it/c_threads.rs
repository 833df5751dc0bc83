//! Several C threads record through one handle and the generic calls while
//! another flushes; nothing is destroyed before they are joined. The books
//! balance (checked in C) and the ring holds every event, each thread's in
//! the order it recorded them.

use crate::support;

use std::collections::HashMap;

use support::{build_c, read_ring, run, test_source};

const THREADS: u64 = 4;
const ITERATIONS: u64 = 2000;

#[test]
fn threads_record_concurrently_and_every_event_arrives_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("threads");
    build_c(&[test_source("c/threads.c")], &exe, &[]);
    let rings = dir.path().join("rings");
    run(&exe, &[rings.to_str().unwrap()], &[]);

    let events = read_ring(&rings.join("c-threads"));
    assert_eq!(events.len() as u64, THREADS * ITERATIONS * 5);
    // Per (name, thread): the values seen, in ring order.
    let mut seen: HashMap<(String, u64), Vec<u64>> = HashMap::new();
    for e in &events {
        let name = e.name().into_owned();
        let key = match name.as_str() {
            "thread_handle" | "thread_generic" | "agent_tx_bytes" => (name, e.value >> 32),
            "agent_xfer_time" | "agent_tx_requests_num" => continue,
            other => panic!("unexpected event {other}"),
        };
        seen.entry(key).or_default().push(e.value & 0xffff_ffff);
    }
    assert_eq!(seen.len() as u64, 3 * THREADS);
    let in_order: Vec<u64> = (0..ITERATIONS).collect();
    for (key, values) in seen {
        assert_eq!(values, in_order, "{key:?}");
    }
}
