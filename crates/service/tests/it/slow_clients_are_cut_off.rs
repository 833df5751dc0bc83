//! Slow or numerous clients never starve the service: headers that dribble in are
//! closed after the header timeout, kept-alive connections after the (longer)
//! idle timeout, connections beyond the cap wait until one closes (and are then
//! served), kept-alive ones make room for them, and shutdown ends within its
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
    let server = server(&dir, |c| {
        c.header_timeout = Duration::from_millis(500);
        c.idle_timeout = Duration::from_millis(2500);
    });
    let head = b"GET /healthz HTTP/1.1\r\nHost: test\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let took = dribble(
        server.addr,
        head,
        Duration::from_millis(100),
        Duration::from_secs(5),
    )
    .expect("a dribbling client is cut off");
    assert!(took < Duration::from_secs(3), "{took:?}");
    // A connection that never sends its first request: the header timeout.
    let started = Instant::now();
    let mut silent = TcpStream::connect(server.addr).unwrap();
    silent
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    assert_eq!(silent.read(&mut [0u8; 16]).unwrap(), 0, "closed");
    assert!(started.elapsed() < Duration::from_millis(2000));
    // One kept alive after an answer: it may wait longer than a head may take,
    // but not longer than the idle timeout.
    let mut kept = Connection::open(server.addr).unwrap();
    assert_eq!(
        kept.request("GET", "/healthz", &[], b"").unwrap().status,
        200
    );
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(
        kept.request("GET", "/healthz", &[], b"")
            .expect("kept past the header timeout")
            .status,
        200
    );
    std::thread::sleep(Duration::from_millis(4000));
    assert!(
        kept.request("GET", "/healthz", &[], b"").is_err(),
        "closed after the idle timeout"
    );
    // After a wait, a request that dribbles gets the header timeout from its
    // first byte, not the idle timeout's rest.
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
        .unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut answer = [0u8; 1024];
    assert!(stream.read(&mut answer).unwrap() > 0, "answered");
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    stream.write_all(b"GET /healthz HTTP/1.1\r\n").unwrap();
    assert_eq!(stream.read(&mut answer).unwrap(), 0, "closed");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(400) && took < Duration::from_millis(2000),
        "{took:?}"
    );
    // Meanwhile the service answers as ever.
    assert_eq!(get(server.addr, "/healthz").status, 200);
}

#[test]
fn connections_beyond_the_cap_wait_for_one_to_close() {
    log::capture();
    let dir = tempfile::tempdir().unwrap();
    let server = server(&dir, |c| c.max_connections = 4);
    // Four connections each in the middle of a request's head: busy, not idle.
    let mut held: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut c = TcpStream::connect(server.addr).unwrap();
            c.write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\n")
                .unwrap();
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
fn kept_alive_connections_make_room_at_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(&dir, |c| c.max_connections = 4);
    let mut kept: Vec<Connection> = (0..4)
        .map(|_| {
            let mut c = Connection::open(server.addr).unwrap();
            assert_eq!(c.request("GET", "/healthz", &[], b"").unwrap().status, 200);
            c
        })
        .collect();
    // Four kept-alive connections wait for a request (for up to the default 90
    // s); a fifth client is served at once all the same.
    let started = Instant::now();
    let mut fifth = Connection::open(server.addr).unwrap();
    fifth.set_read_timeout(Duration::from_secs(5));
    assert_eq!(
        fifth.request("GET", "/healthz", &[], b"").unwrap().status,
        200
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let closed = kept
        .iter_mut()
        .map(|c| c.request("GET", "/healthz", &[], b"").is_err())
        .filter(|closed| *closed)
        .count();
    assert!(closed >= 1, "a waiting connection gave its place");
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
