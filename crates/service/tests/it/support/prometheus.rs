//! A real Prometheus server (Debian's `prometheus` package; `bash
//! scripts/prometheus-test-env.sh` installs it) scraping a test's service, and
//! its query API.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A Prometheus server on a free loopback port, killed when dropped.
pub struct Prometheus {
    child: Child,
    log: std::path::PathBuf,
    /// Where its HTTP API listens.
    pub addr: SocketAddr,
}

impl Prometheus {
    /// Starts a server storing under `dir` that scrapes `target`'s `/metrics`
    /// every 500 ms (a debug build on a loaded machine renders a large store slowly)
    /// as job `tao` and evaluates `rule_files` every second; returns
    /// once it is ready.
    pub fn start(dir: &Path, target: SocketAddr, rule_files: &[&Path]) -> Prometheus {
        let addr = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let rules: String = rule_files
            .iter()
            .map(|p| format!("  - '{}'\n", p.display()))
            .collect();
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 500ms\n  scrape_timeout: 500ms\n  evaluation_interval: 1s\n\
                 rule_files:\n{rules}\
                 scrape_configs:\n  - job_name: tao\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let log = dir.join("prometheus.log");
        let child = Command::new(nixl_telemetry_testsupport::promtool::installed(
            "prometheus",
        ))
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={addr}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("prometheus starts");
        let mut server = Prometheus { child, log, addr };
        server.wait_for("prometheus to be ready", Duration::from_secs(60), |p| {
            matches!(get_http10(p.addr, "/-/ready"), Ok((200, _))).then_some(())
        });
        server
    }

    /// What it logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Fails the test, with its log, if it has exited.
    pub fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("prometheus exited ({status}):\n{}", self.log());
        }
    }

    /// Polls `probe` every 100 ms until it gives a value; fails after `timeout`.
    pub fn wait_for<T>(
        &mut self,
        what: &str,
        timeout: Duration,
        mut probe: impl FnMut(&Prometheus) -> Option<T>,
    ) -> T {
        let deadline = Instant::now() + timeout;
        loop {
            self.assert_running();
            if let Some(value) = probe(self) {
                return value;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}\nprometheus log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `GET path` on its API, as JSON (`None` when it does not answer).
    pub fn api(&self, path: &str) -> Option<serde_json::Value> {
        let (_, body) = get_http10(self.addr, path).ok()?;
        serde_json::from_str(&body).ok()
    }

    /// An instant query: its result vector, or the error Prometheus gave.
    pub fn query(&self, promql: &str) -> Result<Vec<serde_json::Value>, String> {
        let answer = self
            .api(&format!("/api/v1/query?query={}", percent_encode(promql)))
            .ok_or_else(|| "no answer".to_owned())?;
        if answer["status"] != "success" {
            return Err(answer.to_string());
        }
        Ok(answer["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default())
    }

    /// The single value of `promql`, or `None` while it has none.
    pub fn scalar(&self, promql: &str) -> Option<f64> {
        let result = self.query(promql).ok()?;
        assert!(result.len() <= 1, "{promql}: several series {result:?}");
        result.first()?["value"][1].as_str()?.parse().ok()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET path` as HTTP/1.0 (never chunked; the body ends with the connection):
/// status and body.
fn get_http10(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Ok((status, body.to_owned()))
}

/// `text` percent-encoded for a URL query.
pub fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
