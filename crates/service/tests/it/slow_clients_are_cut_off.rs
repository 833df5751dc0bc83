//! Slow or numerous clients never starve the service: headers that dribble in and
//! idle connections are closed after the header timeout, connections beyond the
//! cap wait until one closes (and are then served), and shutdown ends within its
//! grace period even while a client dribbles.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::support::http::{get, Connection};
use crate::support::log;
use crate::support::server::{config, sqlite_in, TestServer};
use nixl_telemetry_service::ServiceConfig;

fn server(dir: &tempfile::TempDir, change: impl FnOnce(&mut ServiceConfig)) -> TestServer {
    let mut config = config(sqlite_in(dir.path()));
    change(&mut config);
    TestServer::start(config)
}

/// Sends `head` one byte every `pause`, until the server closes the connection;
/// how long that took, or `None` when it did not within `limit`.
fn dribble(addr: SocketAddr, head: &[u8], pause: Duration, limit: Duration) -> Option<Duration> {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(pause)).unwrap();
    let started = Instant::now();
    let mut bytes = head.iter().cycle();
    while started.elapsed() < limit {
        if stream.write_all(&[*bytes.next().unwrap()]).is_err() {
            return Some(started.elapsed());
        }
        let mut buffer = [0u8; 256];
        match stream.read(&mut buffer) {
            // Closed (with or without a last answer).
            Ok(_) => return Some(started.elapsed()),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return Some(started.elapsed()),
        }
    }
    None
}

#[test]
fn dribbled_headers_and_idle_connections_are_closed() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(&dir, |c| c.header_timeout = Duration::from_millis(500));
    let head = b"GET /healthz HTTP/1.1\r\nHost: test\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let took = dribble(
        server.addr,
        head,
        Duration::from_millis(100),
        Duration::from_secs(5),
    )
    .expect("a dribbling client is cut off");
    assert!(took < Duration::from_secs(3), "{took:?}");
    // A connection that sends nothing, and one kept alive after an answer.
    let started = Instant::now();
    let mut idle = TcpStream::connect(server.addr).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(idle.read(&mut [0u8; 16]).unwrap(), 0, "closed");
    assert!(started.elapsed() < Duration::from_secs(3));
    let mut kept = Connection::open(server.addr).unwrap();
    assert_eq!(
        kept.request("GET", "/healthz", &[], b"").unwrap().status,
        200
    );
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        kept.request("GET", "/healthz", &[], b"").is_err(),
        "closed while idle"
    );
    // Meanwhile the service answers as ever.
    assert_eq!(get(server.addr, "/healthz").status, 200);
}

#[test]
fn connections_beyond_the_cap_wait_for_one_to_close() {
    log::capture();
    let dir = tempfile::tempdir().unwrap();
    let server = server(&dir, |c| c.max_connections = 4);
    let mut held: Vec<Connection> = (0..4)
        .map(|_| {
            let mut c = Connection::open(server.addr).unwrap();
            assert_eq!(c.request("GET", "/healthz", &[], b"").unwrap().status, 200);
            c
        })
        .collect();
    let mut waiting = Connection::open(server.addr).unwrap();
    waiting.set_read_timeout(Duration::from_millis(700));
    assert!(
        waiting.request("GET", "/healthz", &[], b"").is_err(),
        "a fifth connection is not served while four are open"
    );
    let line = log::line_containing(
        "4 connections open, the cap (--max-connections)",
        Duration::from_secs(5),
    );
    assert!(
        line.as_ref().is_some_and(|l| l.contains("WARN")),
        "the cap is logged: {line:?}"
    );
    held.pop();
    let mut next = Connection::open(server.addr).unwrap();
    next.set_read_timeout(Duration::from_secs(10));
    // The fifth (now served) used the slot; this one waits for the next.
    drop(waiting);
    assert_eq!(
        next.request("GET", "/healthz", &[], b"").unwrap().status,
        200
    );
}

#[test]
fn shutdown_ends_within_its_grace_while_a_client_dribbles() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(&dir, |c| {
        c.header_timeout = Duration::from_secs(60);
        c.shutdown_grace = Duration::from_millis(500);
    });
    let addr = server.addr;
    let client = std::thread::spawn(move || {
        let head =
            b"POST /api/v1/metrics HTTP/1.1\r\nHost: test\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaa";
        dribble(
            addr,
            head,
            Duration::from_millis(200),
            Duration::from_secs(20),
        )
    });
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    server.stop();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(
        client.join().unwrap().is_some(),
        "the dribbling client was cut off"
    );
}
