//! Requests the endpoint refuses, over a real socket:
//! HTTP/0.9 requests and bytes that cannot begin a request are answered
//! `400 Bad Request` and the connection closed as soon as they arrive, not at
//! the request deadline; so are requests framed ambiguously (two different
//! `Content-Length` values, `Content-Length` with `Transfer-Encoding`, a length
//! that is not a number). A repeated equal `Content-Length` is one length, and
//! a request with a body is answered and then closed (bodies are never read).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use nixl_telemetry_prometheus::{PrometheusExporter, ServerLimits, Settings};

/// The request deadline of the endpoints here: far longer than any answer
/// below may take, so an answer cannot be the deadline's doing (at the
/// deadline the server closes without answering).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

fn endpoint(agent: &str) -> PrometheusExporter {
    let mut settings = Settings::new("127.0.0.1:0".parse().unwrap());
    settings.limits = ServerLimits {
        request_timeout: REQUEST_TIMEOUT,
        ..ServerLimits::default()
    };
    PrometheusExporter::with_settings(agent, &settings).expect("an endpoint on 127.0.0.1:0")
}

/// Sends `bytes` (without closing our side) and reads until the server
/// closes: everything it sent, and how long that took.
fn answer_then_close(addr: SocketAddr, bytes: &[u8]) -> (String, Duration) {
    let started = Instant::now();
    let mut s = TcpStream::connect(addr).expect("connect");
    // Far below the request deadline: a read that waits this long fails the test.
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(bytes).expect("send");
    let mut got = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!(
                "{:?}: no close after {:?} ({e}); got {:?}",
                String::from_utf8_lossy(bytes),
                started.elapsed(),
                String::from_utf8_lossy(&got)
            ),
        }
    }
    (
        String::from_utf8_lossy(&got).into_owned(),
        started.elapsed(),
    )
}

fn assert_refused(addr: SocketAddr, bytes: &[u8], status: &str) {
    let (answer, took) = answer_then_close(addr, bytes);
    assert!(
        answer.starts_with(&format!("HTTP/1.1 {status}\r\n")),
        "{:?} got {answer:?}",
        String::from_utf8_lossy(bytes)
    );
    assert!(answer.contains("\r\nConnection: close\r\n"), "{answer:?}");
    assert!(took < REQUEST_TIMEOUT, "{took:?}");
}

#[test]
fn http_0_9_and_garbage_get_400_and_a_close_at_once() {
    let e = endpoint("garbage-400");
    for bytes in [
        &b"GET /\r\n"[..],
        b"GET /metrics\n\n",
        b"GET /metrics\r\n",
        // A TLS ClientHello's start: record header, handshake header, version.
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\x8a\x1f",
        b"\x00\xff\xfe\x01",
        b"\x00",
        b"\x80\x81\x82\x83\x84\x85\x86\x87",
    ] {
        assert_refused(e.local_addr(), bytes, "400 Bad Request");
    }
}

#[test]
fn ambiguous_lengths_get_400_and_a_close() {
    let e = endpoint("lengths-400");
    for headers in [
        "Content-Length: 5\r\nContent-Length: 7",
        "Content-Length: 5, 7",
        "Content-Length: 5\r\nTransfer-Encoding: chunked",
        "Transfer-Encoding: chunked\r\nContent-Length: 5",
        "Content-Length: abc",
        "Content-Length: -1",
        "Content-Length: 99999999999999999999999",
    ] {
        let request = format!("GET /metrics HTTP/1.1\r\nHost: x\r\n{headers}\r\n\r\nhello");
        assert_refused(e.local_addr(), request.as_bytes(), "400 Bad Request");
    }
}

#[test]
fn other_versions_get_505() {
    let e = endpoint("version-505");
    assert_refused(
        e.local_addr(),
        b"GET /metrics HTTP/2.0\r\n\r\n",
        "505 HTTP Version Not Supported",
    );
}

#[test]
fn a_request_with_a_body_is_answered_then_closed() {
    let e = endpoint("body-close");
    for headers in [
        "Content-Length: 5",
        "Content-Length: 5\r\nContent-Length: 5",
        "Content-Length: 5, 5",
        "Transfer-Encoding: chunked",
    ] {
        let request = format!("GET /metrics HTTP/1.1\r\nHost: x\r\n{headers}\r\n\r\nhello");
        let (answer, _) = answer_then_close(e.local_addr(), request.as_bytes());
        assert!(
            answer.starts_with("HTTP/1.1 200 OK\r\n"),
            "{headers:?}: {answer:?}"
        );
        assert!(answer.contains("\r\nConnection: close\r\n"), "{answer:?}");
        // The body was not taken for a second request: one answer only.
        assert_eq!(answer.matches("HTTP/1.1 ").count(), 1, "{answer:?}");
    }
}
