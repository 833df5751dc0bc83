//! The Prometheus endpoint's request-head parser (`httparse` and the
//! endpoint's reading of the head), on any bytes a client can send.
//! Properties: no panic; a complete head never claims more bytes than it was
//! given; the verdict on a complete head depends only on the head's bytes (what
//! follows it does not change it); and, because the endpoint parses everything
//! received after every read and answers as soon as there is a verdict, the
//! verdict on any prefix is consistent with the whole: a prefix found complete
//! is the same complete head, a prefix refused is refused with the same status,
//! and a buffer still incomplete has no refused prefix.

#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use nixl_telemetry_prometheus::fuzzing::parse_request;

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
            let head = &data[..*consumed];
            assert_eq!(
                parse_request(head),
                verdict,
                "the bytes after the head changed it"
            );
        }
        Some(Err(status)) => assert!(!status.is_empty()),
    }
    // The same bytes delivered in two reads: what the endpoint decides after
    // the first must agree with what the whole says.
    let first_byte = data.first().copied().unwrap_or(0) as usize;
    for split in [
        data.len() / 2,
        first_byte.min(data.len()),
        data.len().saturating_sub(1),
    ] {
        let early = parse_request(&data[..split]);
        match (&early, &verdict) {
            (None, _) => {}
            (Some(Ok(_)), _) => assert_eq!(
                early, verdict,
                "a head complete after {split} bytes changed with more"
            ),
            (Some(Err(_)), _) => assert_eq!(
                early, verdict,
                "a head refused after {split} bytes is not refused alike when whole"
            ),
        }
    }
    if verdict.is_some() {
        // Whatever the verdict, it is the same when asked again (no hidden state).
        assert_eq!(parse_request(data), verdict);
    }
});
