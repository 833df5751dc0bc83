//! Which connection makes room when every slot is taken: one still waiting for
//! its request (the one waiting longest) before one that was answered and is
//! closing, whose answer a reset would throw away before its client read it.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use nixl_telemetry_prometheus::{PrometheusExporter, ServerLimits, Settings};

/// Reads until the server closes `s`: what it sent, and whether it ended in a
/// reset.
fn read_to_close(s: &mut TcpStream) -> (Vec<u8>, bool) {
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut got = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        match s.read(&mut chunk) {
            Ok(0) => return (got, false),
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return (got, true),
            Err(e) => panic!("no close within 20 s: {e}"),
        }
    }
}

#[test]
fn a_waiting_connection_makes_room_before_an_answered_one() {
    let mut settings = Settings::new("127.0.0.1:0".parse().unwrap());
    settings.limits = ServerLimits {
        max_connections: 2,
        request_timeout: Duration::from_secs(30),
        linger_timeout: Duration::from_secs(30),
        ..ServerLimits::default()
    };
    let e = PrometheusExporter::with_settings("slots", &settings).unwrap();
    let addr = e.local_addr();
    // Answered, and closing: its answer waits unread in its receive queue.
    let mut answered = TcpStream::connect(addr).unwrap();
    answered
        .write_all(b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // Newer, still waiting for its request.
    let mut waiting = TcpStream::connect(addr).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // A third connection takes a slot: the waiting one gives it up.
    let mut third = TcpStream::connect(addr).unwrap();
    let (got, _) = read_to_close(&mut waiting);
    assert!(got.is_empty(), "the waiting connection got {got:?}");
    // The answered client still reads its whole answer.
    let (got, reset) = read_to_close(&mut answered);
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text:?}");
    assert!(!reset, "the answered connection was reset");
    assert!(text.contains("exposer_transferred_bytes"), "{text:?}");
    third
        .write_all(b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let (got, _) = read_to_close(&mut third);
    assert!(got.starts_with(b"HTTP/1.1 200 OK\r\n"));
}
