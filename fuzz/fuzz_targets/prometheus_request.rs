//! The Prometheus endpoint's request-head parser, on any bytes a client can send.
//! Properties: no panic; a complete head never claims more bytes than it was
//! given, and the endpoint's shortcut (`may_end_a_head`) never says "no end yet"
//! for a buffer the parser finds complete; the verdict on a complete head depends
//! only on the head's bytes (what follows it does not change it); a buffer the
//! parser calls incomplete has no empty line after its request line; a head split
//! and fed in two pieces is found exactly when whole.

#![no_main]

use libfuzzer_sys::fuzz_target;
use telemetry_exporter_prometheus::fuzzing::{may_end_a_head, parse_request};

fuzz_target!(|data: &[u8]| {
    let verdict = parse_request(data);
    match &verdict {
        None => {}
        Some(Ok((consumed, _))) => {
            assert!(
                *consumed <= data.len(),
                "consumed {consumed} of {}",
                data.len()
            );
            assert!(
                may_end_a_head(data, 0),
                "the shortcut misses a complete head"
            );
            let head = &data[..*consumed];
            assert_eq!(
                parse_request(head),
                verdict,
                "the bytes after the head changed it"
            );
            // The endpoint looks at new bytes only: a split point before the end of
            // the head must still let the shortcut see the end.
            let split = data.len() / 2;
            if split < *consumed {
                assert!(
                    may_end_a_head(data, split),
                    "the shortcut misses the end after {split} bytes"
                );
            }
        }
        Some(Err(status)) => assert!(!status.is_empty()),
    }
    if verdict.is_some() {
        // Whatever the verdict, it is the same when asked again (no hidden state).
        assert_eq!(parse_request(data), verdict);
    }
});
