//! `JsonValue::parse`, the processor's JSON reader (a direct parser for the
//! common shape of records, serde_json for the rest), against serde_json
//! alone. Property: for every text, the same value (strings borrowed or owned
//! alike) or the same error message. Also `parse_input_line` (which reads
//! envelopes of the common shape without building their object) against the
//! envelope rule applied to the whole line's reading: the same line or message.

#![no_main]
#![forbid(unsafe_code)]

use std::borrow::Cow;

use libfuzzer_sys::fuzz_target;
use nixl_telemetry_processor::{
    parse_input_line, InputLine, JsonValue, LineError, Record, Timestamp,
};

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

/// The input line as the documented rule reads it from the whole line's record:
/// an object whose only keys are `record` (an object) and `now` (a string or
/// `null`) is an envelope, the last of duplicates counting; anything else is a raw
/// record. Errors as their messages.
fn input_line_by_rule(text: &str) -> Result<InputLine<'_>, String> {
    let record = Record::parse(text).map_err(|e| LineError::from(e).to_string())?;
    let is_envelope = matches!(record.get("record"), Some(JsonValue::Object(_)))
        && record
            .fields()
            .iter()
            .all(|(k, _)| k == "record" || k == "now");
    if !is_envelope {
        return Ok(InputLine { now: None, record });
    }
    let now = match record.get("now") {
        None | Some(JsonValue::Null) => None,
        Some(JsonValue::String(s)) => {
            Some(Timestamp::parse_iso(s).map_err(|e| format!("key `now`: {e}"))?)
        }
        Some(other) => {
            return Err(format!(
                "key `now`: expected an ISO 8601 string, found {}",
                other.kind()
            ))
        }
    };
    let Some(JsonValue::Object(fields)) = record.get("record").cloned() else {
        unreachable!("checked above");
    };
    Ok(InputLine {
        now,
        record: Record::from_fields(fields),
    })
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
    let line = parse_input_line(text).map_err(|e| e.to_string());
    let rule = input_line_by_rule(text);
    assert_eq!(
        line, rule,
        "an input line other than the rule's for {text:?}"
    );
    if let (Ok(a), Ok(b)) = (&line, &rule) {
        fn members<'a>(line: &InputLine<'a>) -> JsonValue<'a> {
            JsonValue::Object(line.record.fields().to_vec())
        }
        assert!(
            same_borrowing(&members(a), &members(b)),
            "strings borrowed otherwise than the whole line's for {text:?}"
        );
    }
});
