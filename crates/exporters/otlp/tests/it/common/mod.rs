//! The loopback OTLP receiver (`tests/receiver/otlp_receiver.py`, run with
//! the virtual environment `scripts/test-otlp.sh` prepares) and helpers to
//! read what it decoded.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The variable `scripts/test-otlp.sh` sets to the virtual environment's python.
pub const PYTHON_VAR: &str = "NIXL_OTLP_TEST_PYTHON";

/// The python with `opentelemetry-proto` and `protobuf`; fails the test when
/// the script did not say where it is.
pub fn python() -> PathBuf {
    match std::env::var_os(PYTHON_VAR) {
        Some(p) => PathBuf::from(p),
        None => panic!(
            "{PYTHON_VAR} is not set: these tests need the receiver's virtual environment; run scripts/test-otlp.sh"
        ),
    }
}

/// A free loopback port (bound, then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running receiver.
pub struct Receiver {
    child: Child,
    pub port: u16,
    pub out: PathBuf,
    _dir: Option<tempfile::TempDir>,
    tls: Option<(PathBuf, PathBuf)>,
}

impl Receiver {
    /// Starts a receiver on a free port.
    pub fn start() -> Receiver {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("requests.jsonl");
        let mut r = Receiver::spawn(0, &out, None);
        r._dir = Some(dir);
        r
    }

    /// Starts a receiver on `port`, appending to `out`.
    pub fn start_on(port: u16, out: &Path) -> Receiver {
        Receiver::spawn(port, out, None)
    }

    /// Starts an https receiver with this certificate and key.
    pub fn start_tls(cert: &Path, key: &Path) -> Receiver {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("requests.jsonl");
        let mut r = Receiver::spawn(0, &out, Some((cert.to_owned(), key.to_owned())));
        r._dir = Some(dir);
        r
    }

    fn spawn(port: u16, out: &Path, tls: Option<(PathBuf, PathBuf)>) -> Receiver {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/receiver/otlp_receiver.py");
        let mut command = Command::new(python());
        command
            .arg(&script)
            .arg("--port")
            .arg(port.to_string())
            .arg("--out")
            .arg(out)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some((cert, key)) = &tls {
            command
                .arg("--tls-cert")
                .arg(cert)
                .arg("--tls-key")
                .arg(key);
        }
        // Binding a port just released by a killed receiver may take a moment.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let mut child = command.spawn().expect("start the receiver");
            let mut line = String::new();
            let stdout = child.stdout.take().unwrap();
            let _ = BufReader::new(stdout).read_line(&mut line);
            if let Some(p) = line.trim().strip_prefix("PORT ") {
                return Receiver {
                    child,
                    port: p.parse().unwrap(),
                    out: out.to_owned(),
                    _dir: None,
                    tls,
                };
            }
            let _ = child.kill();
            let _ = child.wait();
            assert!(
                Instant::now() < deadline,
                "the receiver did not start on port {port}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Kills the receiver (the collector goes down).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sets how the receiver answers (see the script's doc).
    pub fn control(&self, json: &str) {
        assert!(self.tls.is_none(), "control an http receiver only");
        let addr: SocketAddr = ([127, 0, 0, 1], self.port).into();
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(
            s,
            "POST /control HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{json}",
            json.len()
        )
        .unwrap();
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 204"), "{answer}");
    }

    /// Every request recorded so far.
    pub fn requests(&self) -> Vec<Value> {
        read_requests(&self.out)
    }

    /// Waits (up to `limit`) until `ok` holds for the recorded requests.
    pub fn wait_for(
        &self,
        limit: Duration,
        what: &str,
        ok: impl Fn(&[Value]) -> bool,
    ) -> Vec<Value> {
        let deadline = Instant::now() + limit;
        loop {
            let reqs = self.requests();
            if ok(&reqs) {
                return reqs;
            }
            assert!(
                Instant::now() < deadline,
                "waited {limit:?} for {what}; got {} requests",
                reqs.len()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The complete JSON lines of `path` (none if it does not exist yet). The receiver
/// may be writing a line while this reads: a last line without its newline is left
/// for the next read.
pub fn read_requests(path: &Path) -> Vec<Value> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let complete = &text[..text.rfind('\n').map_or(0, |end| end + 1)];
    complete
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// Accepted (200) requests to `path`.
pub fn accepted<'a>(reqs: &'a [Value], path: &str) -> Vec<&'a Value> {
    reqs.iter()
        .filter(|r| r["path"] == path && r["status"] == 200)
        .collect()
}

/// The data points of `metric` in a metrics request whose attributes include
/// every pair of `attrs`.
pub fn points<'a>(request: &'a Value, metric: &str, attrs: &[(&str, &str)]) -> Vec<&'a Value> {
    request["points"]
        .as_array()
        .expect("points")
        .iter()
        .filter(|p| p["metric"] == metric)
        .filter(|p| attrs.iter().all(|(k, v)| p["attributes"][*k] == *v))
        .collect()
}

/// The one data point of `metric` for `agent` (and `attrs`), its value.
pub fn value(request: &Value, metric: &str, agent: &str, attrs: &[(&str, &str)]) -> i64 {
    let mut all = vec![("agent_name", agent)];
    all.extend_from_slice(attrs);
    let found = points(request, metric, &all);
    assert_eq!(found.len(), 1, "{metric} {all:?}: {found:?}");
    found[0]["value"].as_i64().expect("an int value")
}

/// The last accepted metrics request.
pub fn last_metrics(reqs: &[Value]) -> Value {
    accepted(reqs, "/v1/metrics")
        .last()
        .map(|v| (*v).clone())
        .expect("an accepted metrics request")
}

/// Whether the last accepted metrics request shows `metric` of `agent` at `want`.
pub fn last_value_is(reqs: &[Value], metric: &str, agent: &str, want: i64) -> bool {
    let Some(last) = accepted(reqs, "/v1/metrics").last().copied() else {
        return false;
    };
    let found = points(last, metric, &[("agent_name", agent)]);
    found.len() == 1 && found[0]["value"].as_i64() == Some(want)
}

/// Self-metric `metric` (with `attrs`) in `request`.
pub fn self_value(request: &Value, metric: &str, attrs: &[(&str, &str)]) -> i64 {
    let found = points(request, metric, attrs);
    assert_eq!(found.len(), 1, "{metric} {attrs:?}");
    found[0]["value"].as_i64().unwrap()
}
