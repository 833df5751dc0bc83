//! Helpers shared by the exporter's tests and benchmarks: a minimal HTTP/1.1
//! client over loopback, and events.
#![allow(dead_code)]

pub mod c_entry;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use nixl_telemetry_abi::{Category, Event};
use nixl_telemetry_prometheus::{PrometheusExporter, ServerLimits, Settings};

/// A parsed HTTP response.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).expect("a UTF-8 body")
    }
}

/// Connects with generous timeouts.
pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// Reads one response from `stream`; `head_only` for answers to `HEAD`. No
/// bytes may follow it (use [`read_pipelined`] when more responses are due).
pub fn read_response(stream: &mut TcpStream, head_only: bool) -> Response {
    let mut pending = Vec::new();
    let r = read_pipelined(stream, &mut pending, head_only);
    assert!(
        pending.is_empty(),
        "{} bytes beyond the response",
        pending.len()
    );
    r
}

/// Reads one response from `stream`, starting with the bytes in `pending`
/// and leaving there what follows the response.
pub fn read_pipelined(stream: &mut TcpStream, pending: &mut Vec<u8>, head_only: bool) -> Response {
    let mut buf = std::mem::take(pending);
    let mut chunk = [0u8; 16384];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = stream.read(&mut chunk).expect("read a response head");
        assert!(n > 0, "connection closed before a response head: {buf:?}");
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buf[..head_end].to_vec()).expect("an ASCII head");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let mut parts = status_line.splitn(3, ' ');
    assert_eq!(parts.next(), Some("HTTP/1.1"), "{status_line}");
    let status: u16 = parts.next().unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (n, v) = l.split_once(':').expect("a header line");
            (n.trim().to_owned(), v.trim().to_owned())
        })
        .collect();
    let len: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map(|(_, v)| v.parse().unwrap())
        .expect("every response has Content-Length");
    let want = head_end + if head_only { 0 } else { len };
    while buf.len() < want {
        let n = stream.read(&mut chunk).expect("read a response body");
        assert!(n > 0, "connection closed in the body");
        buf.extend_from_slice(&chunk[..n]);
    }
    *pending = buf.split_off(want);
    Response {
        status,
        headers,
        body: buf[head_end..].to_vec(),
    }
}

/// Sends `request` on a new connection and reads one response.
pub fn exchange(addr: SocketAddr, request: &str) -> Response {
    let mut s = connect(addr);
    s.write_all(request.as_bytes()).unwrap();
    read_response(&mut s, request.starts_with("HEAD "))
}

/// `GET /metrics` with an optional `Accept`.
pub fn scrape(addr: SocketAddr, accept: Option<&str>) -> Response {
    let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
    exchange(
        addr,
        &format!("GET /metrics HTTP/1.1\r\nHost: test\r\n{accept}Connection: close\r\n\r\n"),
    )
}

/// An exporter on a fresh loopback port.
pub fn exporter(agent: &str) -> PrometheusExporter {
    PrometheusExporter::with_settings(agent, &Settings::new("127.0.0.1:0".parse().unwrap()))
        .expect("an exporter on 127.0.0.1:0")
}

/// An exporter on a fresh loopback port with these server limits.
pub fn exporter_with_limits(agent: &str, limits: ServerLimits) -> PrometheusExporter {
    let mut settings = Settings::new("127.0.0.1:0".parse().unwrap());
    settings.limits = limits;
    PrometheusExporter::with_settings(agent, &settings).expect("an exporter on 127.0.0.1:0")
}

pub fn ev(category: Category, name: &str, value: u64) -> Event {
    Event::new(1, category, name, value)
}

/// The value of the sample line that starts with `prefix` (name and labels).
pub fn value_of(body: &str, prefix: &str) -> Option<String> {
    body.lines()
        .find(|l| l.starts_with(prefix) && l[prefix.len()..].starts_with(' '))
        .map(|l| l[prefix.len() + 1..].to_owned())
}

/// A scrape body split into the HTTP server's own `exposer_*` families (which
/// come first) and the agents' families (what `PrometheusExporter::render`
/// gives).
pub fn split_exposer(body: &[u8]) -> (&[u8], &[u8]) {
    let text = std::str::from_utf8(body).expect("a UTF-8 body");
    let at = text
        .find("# HELP agent_")
        .expect("the agents' families follow the exposer's");
    assert!(
        text.starts_with("# HELP exposer_transferred_bytes"),
        "the exposer's families come first:\n{text}"
    );
    body.split_at(at)
}

/// The value of the unlabelled sample `name` in `body`.
pub fn unlabelled(body: &str, name: &str) -> Option<String> {
    body.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .map(str::to_owned)
}
