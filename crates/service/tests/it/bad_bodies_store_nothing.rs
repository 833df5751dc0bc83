//! Hostile bodies are refused with the right status code and a reason, and leave
//! the stored metrics exactly as they were.

use crate::support::http::{self, get, post};
use crate::support::records::library_metrics;
use crate::support::server::{config, sqlite_in, TestServer};
use nixl_telemetry_service::record_rules::MAX_INTEGER_VALUE;

const GOOD: &str = r#"{"action": "train", "network": "ResNet-50", "success": true, "time_lapsed": 100, "gpu": ["NVIDIA A100", "NVIDIA H100"]}"#;

/// A time for the records that are stored, so that the library can compute the
/// same metrics.
const NOW: &str = "2025-01-13T10:00:00";

fn at_now(record: &str) -> String {
    format!(r#"{{"now": "{NOW}", "record": {record}}}"#)
}

/// Posts `body` (raw bytes) and checks the answer's status, kind and message.
fn refused(server: &TestServer, body: &[u8], status: u16, kind: &str, says: &str) {
    let response = http::request(server.addr, "POST", "/api/v1/metrics", &[], body);
    let shown = String::from_utf8_lossy(&body[..body.len().min(80)]).into_owned();
    assert_eq!(response.status, status, "{shown}: {}", response.text());
    let answer = response.json();
    assert_eq!(answer["error"], kind, "{shown}: {answer}");
    let message = answer["message"].as_str().unwrap();
    assert!(
        message.contains(says),
        "{shown}: {message:?} should say {says:?}"
    );
}

#[test]
fn bad_bodies_are_refused_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(config(sqlite_in(dir.path())));
    let good = at_now(GOOD);
    assert_eq!(post(server.addr, &good).status, 201);

    // Truncated JSON, at every length of a good record.
    for end in 0..GOOD.len() {
        refused(
            &server,
            &GOOD.as_bytes()[..end],
            400,
            "bad_record",
            "not valid JSON",
        );
    }
    // Not an object.
    for (body, found) in [
        ("[]", "an array"),
        ("\"train\"", "a string"),
        ("42", "an integer"),
        ("null", "null"),
    ] {
        refused(&server, body.as_bytes(), 400, "bad_record", found);
    }
    // Deep nesting (up to what fits in 64 KiB): the JSON reader stops at its depth
    // limit, long before the stack.
    for depth in [200, 9_000] {
        let body = format!("{{\"gpu\": {}{}}}", "[".repeat(depth), "]".repeat(depth));
        refused(
            &server,
            body.as_bytes(),
            400,
            "bad_record",
            "recursion limit",
        );
        let body = format!(
            "{{\"network\": {}1{}}}",
            "{\"a\": ".repeat(depth),
            "}".repeat(depth)
        );
        refused(
            &server,
            body.as_bytes(),
            400,
            "bad_record",
            "recursion limit",
        );
    }
    // Invalid UTF-8, in a string and as a whole.
    refused(
        &server,
        b"{\"network\": \"Res\xffNet\"}",
        400,
        "bad_record",
        "not UTF-8 text (invalid bytes at offset 16)",
    );
    refused(&server, b"\xfe\xff{}", 400, "bad_record", "not UTF-8");
    refused(
        &server,
        b"{\"network\": \"\xed\xa0\x80\"}",
        400,
        "bad_record",
        "not UTF-8",
    );
    // Huge numbers: beyond a double, beyond 64 bits, and sums that overflow.
    refused(
        &server,
        br#"{"time_lapsed": 1e400}"#,
        400,
        "bad_record",
        "number out of range",
    );
    refused(
        &server,
        br#"{"time_lapsed": 123456789012345678901234567890}"#,
        400,
        "bad_record",
        "key `time_lapsed` (attribute `time_lapsed`): expected a 64-bit integer",
    );
    // Values beyond the bound of an integer attribute are refused on their own,
    // whatever is stored: no record can take a sum near the 64-bit limit.
    for beyond in [i64::MAX, i64::MAX - 100, MAX_INTEGER_VALUE + 1] {
        refused(
            &server,
            format!(r#"{{"time_lapsed": {beyond}, "gpu": ["A100", "A100"]}}"#).as_bytes(),
            400,
            "value_out_of_bounds",
            &format!("at most {MAX_INTEGER_VALUE} in size"),
        );
    }
    let big = at_now(&format!(r#"{{"time_lapsed": {MAX_INTEGER_VALUE}}}"#));
    let response = post(server.addr, &big);
    assert_eq!(response.status, 201, "{}", response.text());
    let with_big = get(server.addr, "/api/v1/metrics").text().to_owned();
    // An unknown key inside an envelope, and an envelope that is not one.
    refused(
        &server,
        br#"{"now": "2025-01-13T00:00:00", "record": {"gpus": ["A100"]}}"#,
        400,
        "unknown_key",
        "`gpus`",
    );
    refused(
        &server,
        br#"{"now": 5, "record": {}}"#,
        400,
        "bad_record",
        "key `now`: expected an ISO 8601 string",
    );
    // A body that is far too long, with a lying Content-Length and a short one.
    let mut connection = http::Connection::open(server.addr).unwrap();
    let response = connection
        .raw(b"POST /api/v1/metrics HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999999\r\n\r\n{}")
        .unwrap();
    assert_eq!(response.status, 413, "{}", response.text());

    // After all that, the metrics are exactly those of the two good records.
    let after = get(server.addr, "/api/v1/metrics").text().to_owned();
    assert_eq!(after, with_big);
    assert_eq!(
        after,
        library_metrics([&good, &big]).to_json_string(),
        "the service's map is the library's for the two good records"
    );
    let got: serde_json::Value = serde_json::from_str(&after).unwrap();
    assert_eq!(got["time_lapsed_today"], MAX_INTEGER_VALUE + 100);
    assert_eq!(got["total_action_train_pass"], 1);
    assert_eq!(got["total_action_unknown_fail"], 1);
}
