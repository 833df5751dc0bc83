//! The C++ wrapper compiled as C++11, C++17 and C++20 with every warning an
//! error: ownership through moves (nothing destroyed twice), noexcept record
//! calls, throwing factories and their noexcept twins; its events reach the
//! ring.

use crate::support;

use support::{build_cpp, read_ring, run, test_source, triples};

#[test]
fn the_wrapper_owns_moves_and_records_in_every_standard() {
    for standard in ["c++11", "c++17", "c++20"] {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("wrapper");
        build_cpp(&[test_source("cpp/wrapper.cpp")], &exe, standard);
        let rings = dir.path().join("rings");
        run(&exe, &[rings.to_str().unwrap()], &[]);
        let events = read_ring(&rings.join("cpp-wrapper"));
        let s = |x: &str| x.to_owned();
        assert_eq!(
            triples(&events),
            vec![
                (3, s("cpp_handle"), 1),
                (3, s("cpp_handle"), 2),
                (5, s("agent_xfer_time"), 120),
                (1, s("agent_tx_bytes"), 4096),
                (1, s("agent_tx_requests_num"), 1),
                (7, s("cpp_generic"), 3),
                (4, s("NIXL_ERR_BACKEND"), 1),
                (3, s("cpp_handle"), 4),
            ],
            "{standard}"
        );
        // The failed factory created no ring.
        assert!(!rings.join("cpp-wrapper-bad").exists());
    }
}
