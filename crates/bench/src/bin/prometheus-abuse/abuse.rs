//! Abusive clients of a Prometheus endpoint running in another process, the
//! well-formed scrape they must not disturb, and that process's resources.
//! Shared by the `prometheus-abuse` binary (which measures) and
//! `tests/http_under_abuse.rs` (which checks, without timing).
#![allow(dead_code)]

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The head a real Prometheus 2.42.0 sends (captured; see the Prometheus
/// exporter's tests/fixtures/README.md).
pub const SCRAPE_HEAD: &[u8] = include_bytes!(
    "../../../../exporters/prometheus/tests/fixtures/prometheus-2.42.0-scrape-head.http"
);

/// The server's limits, passed to `prometheus-abuse serve`.
#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    pub request_timeout_ms: u64,
    pub write_timeout_ms: u64,
    pub linger_ms: u64,
    pub max_connections: usize,
    /// Agents on the endpoint (each with 256 series names).
    pub agents: usize,
}

impl ServeOptions {
    pub fn args(&self) -> Vec<String> {
        vec![
            "serve".into(),
            format!("--request-timeout-ms={}", self.request_timeout_ms),
            format!("--write-timeout-ms={}", self.write_timeout_ms),
            format!("--linger-ms={}", self.linger_ms),
            format!("--max-connections={}", self.max_connections),
            format!("--agents={}", self.agents),
        ]
    }
}

/// An endpoint served by a child process (`prometheus-abuse serve`); killed
/// when dropped.
pub struct Server {
    child: Child,
    /// Closing it tells the child to exit.
    stdin: Option<ChildStdin>,
    pub addr: SocketAddr,
    pub pid: u32,
    /// Bytes of a plain (text format, not gzipped) scrape body, as the child
    /// rendered it at start.
    pub body_bytes: usize,
}

impl Server {
    /// Starts `exe serve …` and waits for its `listening <addr> <body bytes>` line.
    pub fn start(exe: &Path, options: &ServeOptions) -> Result<Server, String> {
        let mut child = Command::new(exe)
            .args(options.args())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| format!("reading the server's first line: {e}"))?;
        let mut parts = line.split_whitespace();
        let (Some("listening"), Some(addr), Some(bytes)) =
            (parts.next(), parts.next(), parts.next())
        else {
            let _ = child.kill();
            return Err(format!(
                "the server said {line:?}, not \"listening <addr> <bytes>\""
            ));
        };
        Ok(Server {
            stdin: child.stdin.take(),
            pid: child.id(),
            addr: addr.parse().map_err(|e| format!("{addr:?}: {e}"))?,
            body_bytes: bytes.parse().map_err(|e| format!("{bytes:?}: {e}"))?,
            child,
        })
    }

    /// The child's resident memory, KiB (`VmRSS` of `/proc/<pid>/status`).
    pub fn rss_kib(&self) -> u64 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.pid)).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    /// The child's open file descriptors (entries of `/proc/<pid>/fd`).
    pub fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    /// The child's CPU time so far (user + system), seconds.
    pub fn cpu_seconds(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).unwrap_or_default();
        // Fields after the command name (which is in parentheses).
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| {
            fields
                .get(i)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        // utime and stime are fields 14 and 15 of stat, 12 and 13 after the name.
        let hz = rustix::param::clock_ticks_per_second().max(1) as f64;
        (ticks(11) + ticks(12)) as f64 / hz
    }

    /// The child's descriptors once their count has not changed for a second.
    pub fn settled_fds(&self) -> usize {
        let mut last = self.fds();
        let mut stable_since = Instant::now();
        while stable_since.elapsed() < Duration::from_secs(1) {
            std::thread::sleep(Duration::from_millis(50));
            let n = self.fds();
            if n != last {
                last = n;
                stable_since = Instant::now();
            }
        }
        last
    }

    /// Waits until the child's descriptors are down to `baseline`; the count
    /// when they are, or the last count seen when `within` ran out.
    pub fn wait_for_fds(&self, baseline: usize, within: Duration) -> usize {
        let end = Instant::now() + within;
        loop {
            let n = self.fds();
            if n <= baseline || Instant::now() >= end {
                return n;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads until the response head is in, then the body of its
/// `Content-Length`; `(status, head, body)`. The stream has a read timeout.
fn read_answer(stream: &mut TcpStream) -> Result<(u16, String, Vec<u8>), String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match stream.read(&mut chunk) {
            Ok(0) => return Err(format!("closed after {} bytes of answer", buf.len())),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) => return Err(format!("reading the answer: {e}")),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let status = head
        .strip_prefix("HTTP/1.1 ")
        .and_then(|r| r.get(..3))
        .and_then(|c| c.parse::<u16>().ok())
        .ok_or_else(|| format!("not an HTTP/1.1 status line: {head:?}"))?;
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .ok_or_else(|| format!("no Content-Length in {head:?}"))?;
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        match stream.read(&mut chunk) {
            Ok(0) => {
                return Err(format!(
                    "closed after {} of {length} body bytes",
                    body.len()
                ))
            }
            Ok(n) => body.extend_from_slice(&chunk[..n]),
            Err(e) => return Err(format!("reading the body: {e}")),
        }
    }
    if body.len() != length {
        return Err(format!(
            "{} body bytes, Content-Length {length}",
            body.len()
        ));
    }
    Ok((status, head, body))
}

/// One well-formed scrape on a new connection, as Prometheus 2.42.0 sends it
/// (OpenMetrics, gzip): checks the answer (200, gzip, the agents' series, the
/// `# EOF` end) and returns how long it took from connecting to the last byte.
pub fn scrape(addr: SocketAddr) -> Result<Duration, String> {
    let started = Instant::now();
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(10))
        .map_err(|e| format!("connect: {e}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok();
    stream.set_write_timeout(Some(Duration::from_secs(10))).ok();
    stream.set_nodelay(true).ok();
    stream
        .write_all(SCRAPE_HEAD)
        .map_err(|e| format!("sending the scrape: {e}"))?;
    let (status, head, body) = read_answer(&mut stream)?;
    let elapsed = started.elapsed();
    if status != 200 {
        return Err(format!("status {status}: {head:?}"));
    }
    if !head.contains("\r\nContent-Encoding: gzip\r\n") {
        return Err(format!("not gzipped: {head:?}"));
    }
    let mut text = String::new();
    flate2::read::GzDecoder::new(&body[..])
        .read_to_string(&mut text)
        .map_err(|e| format!("the gzip body does not decode: {e}"))?;
    if !text.contains("abuse_series_255") || !text.ends_with("# EOF\n") {
        return Err(format!(
            "the body ({} bytes) lacks the agents' series or the # EOF end",
            text.len()
        ));
    }
    Ok(elapsed)
}

/// The abuses the endpoint is put through (docs/testing.md, "HTTP under abuse").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Connections opened and never written to.
    Idle,
    /// Connections sending a request head one byte a second, never ending it.
    SlowLoris,
    /// A request line of 1 MB (answered 431).
    LongLine,
    /// A head of 10 000 headers (answered 431).
    ManyHeaders,
    /// A TLS ClientHello, binary noise, HTTP/0.9 requests (answered 400).
    Garbage,
    /// Conflicting `Content-Length` values, `Content-Length` with
    /// `Transfer-Encoding`, lengths that are not numbers (answered 400).
    Smuggling,
    /// Clients that ask for the (large, plain) body and close or reset the
    /// connection after its first bytes.
    Vanishing,
}

impl Kind {
    pub const ALL: [Kind; 7] = [
        Kind::Idle,
        Kind::SlowLoris,
        Kind::LongLine,
        Kind::ManyHeaders,
        Kind::Garbage,
        Kind::Smuggling,
        Kind::Vanishing,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Idle => "idle connections",
            Kind::SlowLoris => "slow loris",
            Kind::LongLine => "1 MB request lines",
            Kind::ManyHeaders => "10 000 headers",
            Kind::Garbage => "garbage bytes",
            Kind::Smuggling => "conflicting CL/TE",
            Kind::Vanishing => "vanishing clients",
        }
    }
}

/// How hard to abuse.
#[derive(Debug, Clone, Copy)]
pub struct Intensity {
    pub idle: usize,
    pub slow_loris: usize,
    pub line_bytes: usize,
    pub headers: usize,
    /// Pause between two attempts of a repeating abuser (long line, headers,
    /// garbage, smuggling, vanishing).
    pub pause: Duration,
    /// Run the abusing threads at nice 19, standing in for clients on other
    /// machines (their CPU is not the endpoint host's).
    pub nice: bool,
}

impl Default for Intensity {
    fn default() -> Self {
        Intensity {
            idle: 1000,
            slow_loris: 200,
            line_bytes: 1 << 20,
            headers: 10_000,
            pause: Duration::from_millis(10),
            nice: true,
        }
    }
}

/// What one abuser did.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    /// Connections opened.
    pub connections: u64,
    /// Answers received with the expected status.
    pub expected: u64,
    /// Connections the server closed (idle and slow-loris abusers).
    pub closed_by_server: u64,
    /// Oversized requests (long line, many headers) whose connection was
    /// closed or reset before their client read the 431: the server answers
    /// once it has `max_request_bytes`, then drains the rest for the linger
    /// timeout and closes; a client still sending after that (starved of CPU
    /// on a loaded machine) gets a reset, which discards the unread answer.
    pub shed: u64,
    /// Answers that were not what the abuse must get (first 5 kept).
    pub unexpected: Vec<String>,
    pub unexpected_count: u64,
}

impl Tally {
    fn wrong(&mut self, what: String) {
        self.unexpected_count += 1;
        if self.unexpected.len() < 5 {
            self.unexpected.push(what);
        }
    }

    fn add(&mut self, other: Tally) {
        self.connections += other.connections;
        self.expected += other.expected;
        self.closed_by_server += other.closed_by_server;
        self.shed += other.shed;
        self.unexpected_count += other.unexpected_count;
        for u in other.unexpected {
            if self.unexpected.len() < 5 {
                self.unexpected.push(u);
            }
        }
    }
}

/// Running abusers; [`Abuse::stop`] ends them and closes their connections.
pub struct Abuse {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<Tally>>,
}

impl Abuse {
    /// Starts the abusers of `kinds` against `addr`.
    pub fn start(kinds: &[Kind], addr: SocketAddr, intensity: Intensity) -> Abuse {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = kinds
            .iter()
            .map(|&kind| {
                let stop = Arc::clone(&stop);
                std::thread::Builder::new()
                    .name(format!("abuse-{kind:?}"))
                    .spawn(move || {
                        if intensity.nice {
                            lower_priority();
                        }
                        run(kind, addr, intensity, &stop)
                    })
                    .expect("an abuser thread")
            })
            .collect();
        Abuse { stop, threads }
    }

    /// Stops every abuser and closes its connections; what they did.
    pub fn stop(self) -> Tally {
        self.stop.store(true, Ordering::Relaxed);
        let mut total = Tally::default();
        for t in self.threads {
            match t.join() {
                Ok(tally) => total.add(tally),
                Err(_) => total.wrong("an abuser thread panicked".into()),
            }
        }
        total
    }
}

fn lower_priority() {
    // With a thread id it changes that thread alone on Linux; best effort.
    let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), 19);
}

fn run(kind: Kind, addr: SocketAddr, intensity: Intensity, stop: &AtomicBool) -> Tally {
    match kind {
        Kind::Idle => idle(addr, intensity.idle, stop),
        Kind::SlowLoris => slow_loris(addr, intensity.slow_loris, stop),
        _ => {
            let mut tally = Tally::default();
            let mut round = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let (payload, expected) = payload(kind, round, intensity);
                round += 1;
                tally.connections += 1;
                let result = if kind == Kind::Vanishing {
                    vanish(addr, &payload, round)
                } else {
                    match exchange(addr, &payload, stop) {
                        Ok(status) if Some(status) == expected => Ok(()),
                        Ok(status) => Err(format!("status {status}, expected {expected:?}")),
                        // Interrupted by the end of the phase: not a verdict.
                        Err(e) if e.why == "stopped" => Err(e.why),
                        Err(NoAnswer { sent, .. })
                            if matches!(kind, Kind::LongLine | Kind::ManyHeaders)
                                && sent > OVERSIZED =>
                        {
                            tally.shed += 1;
                            Ok(())
                        }
                        Err(e) => Err(e.why),
                    }
                };
                match result {
                    Ok(()) => tally.expected += 1,
                    Err(e) if stop.load(Ordering::Relaxed) && e.contains("stopped") => {}
                    Err(e) => tally.wrong(format!("{}: {e}", kind.name())),
                }
                std::thread::sleep(intensity.pause);
            }
            tally
        }
    }
}

/// The bytes an abuser of `kind` sends in its `round`th attempt, and the
/// status it must get (`None`: no answer is checked).
fn payload(kind: Kind, round: u64, intensity: Intensity) -> (Vec<u8>, Option<u16>) {
    match kind {
        Kind::LongLine => {
            let mut p = b"GET /".to_vec();
            p.resize(5 + intensity.line_bytes, b'a');
            p.extend_from_slice(b" HTTP/1.1\r\n\r\n");
            (p, Some(431))
        }
        Kind::ManyHeaders => {
            let mut p = b"GET /metrics HTTP/1.1\r\n".to_vec();
            for i in 0..intensity.headers {
                p.extend_from_slice(format!("X-Header-{i}: value\r\n").as_bytes());
            }
            p.extend_from_slice(b"\r\n");
            (p, Some(431))
        }
        Kind::Garbage => {
            let p = match round % 5 {
                // A TLS 1.2/1.3 ClientHello's start (record and handshake headers).
                0 => b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\x8a\x1f\x00\x00\x20\x13\x01\x13\x02\x13\x03".to_vec(),
                1 => b"GET /\r\n".to_vec(),
                2 => b"GET /metrics\n\n".to_vec(),
                3 => b"\x00\xff\xfe\x01\x80\x7f".to_vec(),
                _ => {
                    // Noise from a xorshift generator seeded by the round.
                    let mut x = round.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                    (0..512)
                        .map(|_| {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            // Never a letter first: a method token could start.
                            (x as u8) | 0x80
                        })
                        .collect()
                }
            };
            (p, Some(400))
        }
        Kind::Smuggling => {
            let headers = match round % 6 {
                0 => "Content-Length: 5\r\nContent-Length: 7",
                1 => "Content-Length: 5, 7",
                2 => "Content-Length: 5\r\nTransfer-Encoding: chunked",
                3 => "Transfer-Encoding: chunked\r\nContent-Length: 0",
                4 => "Content-Length: -1",
                _ => "Content-Length: 99999999999999999999999",
            };
            (
                format!("GET /metrics HTTP/1.1\r\nHost: x\r\n{headers}\r\n\r\nhello").into_bytes(),
                Some(400),
            )
        }
        Kind::Vanishing => (b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(), None),
        Kind::Idle | Kind::SlowLoris => (Vec::new(), None),
    }
}

/// More than the server's `max_request_bytes` (8 KiB).
const OVERSIZED: usize = 8 * 1024;

/// An exchange that got no answer.
struct NoAnswer {
    why: String,
    /// Bytes of the request sent.
    sent: usize,
}

/// Sends `payload` while reading, as a client that writes everything it has
/// but stops once it is answered; the answer's status.
fn exchange(addr: SocketAddr, payload: &[u8], stop: &AtomicBool) -> Result<u16, NoAnswer> {
    let fail = |why: String, sent: usize| NoAnswer { why, sent };
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(10))
        .map_err(|e| fail(format!("connect: {e}"), 0))?;
    stream
        .set_nonblocking(true)
        .map_err(|e| fail(e.to_string(), 0))?;
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut sent = 0;
    let mut answer = Vec::new();
    let mut chunk = [0u8; 16384];
    let mut write_failed = None;
    loop {
        let mut progressed = false;
        if sent < payload.len() && write_failed.is_none() {
            match stream.write(&payload[sent..]) {
                Ok(n) => {
                    sent += n;
                    progressed = n > 0;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // The server may close once it has answered: read the answer.
                Err(e) => write_failed = Some(e),
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                answer.extend_from_slice(&chunk[..n]);
                progressed = true;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if answer.is_empty() => {
                return Err(fail(format!("no answer, the connection failed: {e}"), sent))
            }
            Err(_) => break,
        }
        if answer.windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
        if stop.load(Ordering::Relaxed) {
            return Err(fail("stopped".into(), sent));
        }
        if Instant::now() >= deadline {
            return Err(fail(
                format!(
                    "no answer within 20 s ({sent} of {} bytes sent)",
                    payload.len()
                ),
                sent,
            ));
        }
        if !progressed {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let head = String::from_utf8_lossy(&answer);
    head.strip_prefix("HTTP/1.1 ")
        .and_then(|r| r.get(..3))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| {
            fail(
                format!(
                    "closed without an answer ({sent} of {} bytes sent{})",
                    payload.len(),
                    write_failed.map_or(String::new(), |e| format!(", then {e}"))
                ),
                sent,
            )
        })
}

/// Asks for the body and goes away after its first bytes: a plain close on
/// odd rounds, a reset (`SO_LINGER` 0) on even ones.
fn vanish(addr: SocketAddr, request: &[u8], round: u64) -> Result<(), String> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(10))
        .map_err(|e| format!("connect: {e}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok();
    stream
        .write_all(request)
        .map_err(|e| format!("send: {e}"))?;
    let mut first = [0u8; 4096];
    let n = stream
        .read(&mut first)
        .map_err(|e| format!("no first bytes: {e}"))?;
    if !first[..n].starts_with(b"HTTP/1.1 200") {
        return Err(format!(
            "not a 200: {:?}",
            String::from_utf8_lossy(&first[..n.min(40)])
        ));
    }
    if round.is_multiple_of(2) {
        reset_on_close(&stream);
    }
    Ok(())
}

/// Makes closing `stream` send a reset rather than a FIN.
pub fn reset_on_close(stream: &TcpStream) {
    // Best effort: without it the close is an orderly one, still a vanishing client.
    let _ = rustix::net::sockopt::set_socket_linger(stream, Some(Duration::ZERO));
}

/// Whether the server has closed `stream` (non-blocking): EOF or an error.
fn closed(mut stream: &TcpStream) -> bool {
    let mut b = [0u8; 512];
    match stream.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != io::ErrorKind::WouldBlock,
    }
}

fn idle(addr: SocketAddr, count: usize, stop: &AtomicBool) -> Tally {
    let mut tally = Tally::default();
    let mut held = Vec::with_capacity(count);
    for _ in 0..count {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        match TcpStream::connect_timeout(&addr, Duration::from_secs(10)) {
            Ok(s) => {
                s.set_nonblocking(true).ok();
                tally.connections += 1;
                held.push(s);
            }
            Err(e) => tally.wrong(format!("idle connect: {e}")),
        }
    }
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
    }
    tally.closed_by_server = held.iter().filter(|s| closed(s)).count() as u64;
    tally
}

fn slow_loris(addr: SocketAddr, count: usize, stop: &AtomicBool) -> Tally {
    const HEAD: &[u8] = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    let mut tally = Tally::default();
    let connect = |tally: &mut Tally| -> Option<(TcpStream, usize)> {
        match TcpStream::connect_timeout(&addr, Duration::from_secs(10)) {
            Ok(s) => {
                s.set_nonblocking(true).ok();
                tally.connections += 1;
                Some((s, 0))
            }
            Err(e) => {
                tally.wrong(format!("slow loris connect: {e}"));
                None
            }
        }
    };
    let mut conns: Vec<Option<(TcpStream, usize)>> =
        (0..count).map(|_| connect(&mut tally)).collect();
    while !stop.load(Ordering::Relaxed) {
        let turn = Instant::now();
        for slot in conns.iter_mut() {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let alive = match slot {
                Some((s, sent)) => {
                    // One more byte of a head that never ends.
                    let byte = if *sent < HEAD.len() {
                        HEAD[*sent]
                    } else {
                        b'a'
                    };
                    let ok = !closed(s) && s.write(&[byte]).is_ok();
                    *sent += 1;
                    ok
                }
                None => false,
            };
            if !alive {
                if slot.is_some() {
                    tally.closed_by_server += 1;
                }
                *slot = connect(&mut tally);
            }
        }
        let rest = Duration::from_secs(1).saturating_sub(turn.elapsed());
        let end = Instant::now() + rest;
        while Instant::now() < end && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    tally
}

/// Percentile `p` (0–100) of `sorted` (ascending), nearest rank.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The 1-minute load average (/proc/loadavg).
pub fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(f64::NAN)
}
