//! `nixl-telemetry emit --events`: the JSON lines, read through the same bounded
//! line reader (a small limit here, so that over-long lines are reached) and
//! judged line by line as `emit` does. Properties: no panic; every byte of the
//! input is accounted to a line or its newline; a line over the limit is reported
//! with its true length and not kept; a rejected line has a reason; an accepted
//! line is accepted again when re-read (deterministic).

#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use nixl_telemetry_cli::emit::parse_event_line;
use nixl_telemetry_cli::lines::{BoundedLines, Line};

const LIMIT: usize = 512;

fuzz_target!(|data: &[u8]| {
    let mut lines = BoundedLines::new(data, LIMIT, 64);
    let mut counted = 0u64;
    let mut expected_number = 0u64;
    while let Some((number, line)) = lines.next_line().expect("reading a slice cannot fail") {
        expected_number += 1;
        assert_eq!(
            number, expected_number,
            "lines are numbered from 1 without gaps"
        );
        counted += 1; // its newline, or the end of the input
        match line {
            Line::TooLong(length) => {
                assert!(
                    length > LIMIT as u64,
                    "a line of {length} bytes called too long"
                );
                counted += length;
            }
            Line::Bytes(bytes) => {
                assert!(bytes.len() <= LIMIT);
                assert!(!bytes.contains(&b'\n'));
                counted += bytes.len() as u64;
                let Ok(text) = std::str::from_utf8(bytes) else {
                    continue;
                };
                let text = text.trim();
                if text.is_empty() || text.starts_with('#') {
                    continue;
                }
                match parse_event_line(text) {
                    Ok(parsed) => assert_eq!(parse_event_line(text), Ok(parsed)),
                    Err(reason) => assert!(!reason.is_empty(), "a rejection without a reason"),
                }
            }
        }
    }
    // The last line may lack its newline.
    let total = data.len() as u64;
    assert!(
        counted == total || counted == total + 1,
        "{counted} bytes accounted for an input of {total}"
    );
});
