//! `JsonValue::parse`, the processor's JSON reader (a direct parser for the
//! common shape of records, serde_json for the rest), against serde_json
//! alone. Property: for every text, the same value (strings borrowed or owned
//! alike) or the same error message.

#![no_main]
#![forbid(unsafe_code)]

use std::borrow::Cow;

use libfuzzer_sys::fuzz_target;
use nixl_telemetry_processor::JsonValue;

/// Whether every string and key of two equal values is borrowed in one
/// exactly where it is in the other.
fn same_borrowing(a: &JsonValue<'_>, b: &JsonValue<'_>) -> bool {
    let same = |x: &Cow<'_, str>, y: &Cow<'_, str>| {
        matches!(x, Cow::Borrowed(_)) == matches!(y, Cow::Borrowed(_))
    };
    match (a, b) {
        (JsonValue::String(x), JsonValue::String(y)) => same(x, y),
        (JsonValue::Array(x), JsonValue::Array(y)) => {
            x.iter().zip(y).all(|(x, y)| same_borrowing(x, y))
        }
        (JsonValue::Object(x), JsonValue::Object(y)) => x
            .iter()
            .zip(y)
            .all(|((kx, vx), (ky, vy))| same(kx, ky) && same_borrowing(vx, vy)),
        _ => true,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let ours = JsonValue::parse(text);
    let serde = serde_json::from_str::<JsonValue<'_>>(text);
    match (&ours, &serde) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b, "a value other than serde_json's for {text:?}");
            assert!(
                same_borrowing(a, b),
                "strings borrowed otherwise than serde_json's for {text:?}"
            );
        }
        (Err(a), Err(b)) => assert_eq!(
            a.to_string(),
            b.to_string(),
            "an error other than serde_json's for {text:?}"
        ),
        _ => panic!("for {text:?}: ours {ours:?}, serde_json {serde:?}"),
    }
});
