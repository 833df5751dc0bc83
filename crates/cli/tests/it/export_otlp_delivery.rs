//! The sidecar with the OTLP plug-in against a real local HTTP server that
//! answers 500 or 503, refuses connections, or never answers: the plug-in's
//! warnings reach the sidecar's stderr (through the log callback of the
//! plug-in ABI), at most a few per kind every 10 s, and the exit line counts
//! the events that were not delivered. A server answering 200 is the
//! control: everything delivered, and the exit line says so.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::export_support::*;
use nixl_telemetry::ring::layout;

/// What the server does with each request.
#[derive(Debug, Clone, Copy)]
enum Answer {
    Status(u16),
    Hang,
}

/// A loopback HTTP server answering every request the same way.
struct Server {
    addr: SocketAddr,
    requests: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Server {
    fn start(answer: Answer) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, s) = (Arc::clone(&requests), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut held = Vec::new();
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        stream.set_nonblocking(false).unwrap();
                        let r = Arc::clone(&r);
                        match answer {
                            Answer::Status(code) => {
                                std::thread::spawn(move || serve(stream, code, &r));
                            }
                            Answer::Hang => {
                                r.fetch_add(1, Ordering::Relaxed);
                                held.push(stream);
                            }
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Server {
            addr,
            requests,
            stop,
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Reads requests (head and `Content-Length` body) and answers each with
/// `code` and an empty body.
fn serve(mut stream: TcpStream, code: u16, requests: &AtomicU64) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map_or(0, |v| v.trim().parse().unwrap_or(0));
        while buf.len() < end + 4 + length {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        buf.drain(..end + 4 + length);
        requests.fetch_add(1, Ordering::Relaxed);
        let reason = if code == 200 { "OK" } else { "Failing" };
        let answer = format!(
            "HTTP/1.1 {code} {reason}\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n"
        );
        if stream.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// Runs the sidecar with the OTLP plug-in sending to `url` every 200 ms for
/// `run`, then stops it; returns its stderr.
fn run_sidecar(tmp: &Path, url: &str, run: Duration) -> String {
    let rings = tmp.join("rings");
    std::fs::create_dir_all(&rings).unwrap();
    let plugins = plugin_dir(
        tmp,
        "nixl-telemetry-exporter-otlp",
        "libtelemetry_exporter_otlp.so",
    );
    let _writer = ring(&rings, "initiator", &layout::V1, 1024, &workload_events(1));
    let mut cmd = export_command(&rings, "otlp");
    cmd.arg("--plugin-dir")
        .arg(&plugins)
        .arg("--interval")
        .arg("20")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", url)
        .env("OTEL_METRIC_EXPORT_INTERVAL", "200")
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "500");
    let mut sidecar = Sidecar::start(&mut cmd, &tmp.join("sidecar.log"));
    sidecar.wait_for_log("following", Duration::from_secs(20));
    std::thread::sleep(run);
    let (status, log) = sidecar.stop("TERM");
    assert!(status.success(), "{log}");
    log
}

/// The exit line's figures: (delivered, not delivered).
fn delivery_figures(log: &str) -> (u64, u64) {
    let line = log
        .lines()
        .find(|l| l.contains("stopped;") && l.contains("handed to exporter otlp"))
        .unwrap_or_else(|| panic!("no exit line:\n{log}"));
    let after = line
        .split("plug-in otlp: ")
        .nth(1)
        .unwrap_or_else(|| panic!("the exit line has no delivery figures: {line}"));
    let numbers: Vec<u64> = after
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .take(2)
        .map(|s| s.parse().unwrap())
        .collect();
    assert!(after.contains("NOT delivered"), "{line}");
    (numbers[0], numbers[1])
}

fn plugin_lines<'a>(log: &'a str, text: &str) -> Vec<&'a str> {
    log.lines()
        .filter(|l| l.contains("plug-in otlp:") && l.contains(text))
        .collect()
}

#[test]
fn a_collector_answering_500_is_visible_rate_limited_and_counted_at_exit() {
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start(Answer::Status(500));
    let log = run_sidecar(tmp.path(), &server.url(), Duration::from_millis(2500));
    assert!(
        server.requests.load(Ordering::Relaxed) >= 8,
        "the plug-in kept sending:\n{log}"
    );
    // One request given up every 200 ms: far more than the five of one kind
    // that pass in 10 s.
    let given_up = plugin_lines(&log, "OTLP request given up");
    assert_eq!(given_up.len(), 5, "rate-limited to 5 per 10 s:\n{log}");
    assert!(given_up[0].contains("answered 500"), "{log}");
    assert_eq!(
        plugin_lines(&log, "OTLP exporter stopped").len(),
        1,
        "{log}"
    );
    let (delivered, undelivered) = delivery_figures(&log);
    assert_eq!(delivered, 0, "{log}");
    assert!(
        undelivered >= workload_events(1).len() as u64,
        "every event read is undelivered: {log}"
    );
    assert!(
        log.lines()
            .any(|l| l.contains(" WARN nixl-telemetry export: stopped;")
                && l.contains("NOT delivered")),
        "the exit line is a warning: {log}"
    );
}

#[test]
fn a_collector_answering_503_is_retried_visibly_and_counted_at_exit() {
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start(Answer::Status(503));
    let log = run_sidecar(tmp.path(), &server.url(), Duration::from_millis(1500));
    assert!(server.requests.load(Ordering::Relaxed) >= 1, "{log}");
    let retried = plugin_lines(&log, "OTLP export failed; retrying with backoff");
    assert_eq!(retried.len(), 1, "{log}");
    assert!(retried[0].contains("503"), "{log}");
    let (delivered, undelivered) = delivery_figures(&log);
    assert_eq!(delivered, 0, "{log}");
    assert!(undelivered > 0, "{log}");
}

#[test]
fn a_refused_connection_is_visible_and_counted_at_exit() {
    let tmp = tempfile::tempdir().unwrap();
    // A port that was free a moment ago: nothing listens there.
    let url = format!("http://{}", free_addr());
    let log = run_sidecar(tmp.path(), &url, Duration::from_millis(1500));
    assert_eq!(
        plugin_lines(&log, "OTLP export failed; retrying with backoff").len(),
        1,
        "{log}"
    );
    let (delivered, undelivered) = delivery_figures(&log);
    assert_eq!(delivered, 0, "{log}");
    assert!(undelivered > 0, "{log}");
}

#[test]
fn a_collector_that_never_answers_is_visible_and_counted_at_exit() {
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start(Answer::Hang);
    let log = run_sidecar(tmp.path(), &server.url(), Duration::from_millis(2000));
    assert!(server.requests.load(Ordering::Relaxed) >= 1, "{log}");
    assert_eq!(
        plugin_lines(&log, "OTLP export failed; retrying with backoff").len(),
        1,
        "{log}"
    );
    let (delivered, undelivered) = delivery_figures(&log);
    assert_eq!(delivered, 0, "{log}");
    assert!(undelivered > 0, "{log}");
}

#[test]
fn a_working_collector_gets_everything_and_the_exit_line_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start(Answer::Status(200));
    let log = run_sidecar(tmp.path(), &server.url(), Duration::from_millis(1000));
    assert!(server.requests.load(Ordering::Relaxed) >= 1, "{log}");
    assert!(plugin_lines(&log, "OTLP export failed").is_empty(), "{log}");
    let (delivered, undelivered) = delivery_figures(&log);
    assert!(delivered >= workload_events(1).len() as u64, "{log}");
    assert_eq!(undelivered, 0, "{log}");
    assert!(!log.contains(" WARN "), "{log}");
}
