//! A real Prometheus server (Debian's `prometheus` package; `bash
//! scripts/prometheus-test-env.sh` installs it, [`promtool::installed`] finds
//! it) scraping one test target, with its query API: the one harness of every
//! test that checks what a real server makes of our exposition text.
//!
//! [`promtool::installed`]: crate::promtool::installed

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// What the server scrapes, and which rule files it evaluates.
#[derive(Debug, Clone)]
pub struct Scrape<'a> {
    /// The `host:port` whose `/metrics` is scraped.
    pub target: SocketAddr,
    /// The `job` label of the scraped series.
    pub job: &'a str,
    /// The scrape interval (and timeout).
    pub interval: Duration,
    /// Rule files evaluated every second.
    pub rule_files: &'a [&'a Path],
}

impl<'a> Scrape<'a> {
    /// `target` as job `job`, every 200 ms, with no rule file.
    pub fn new(target: SocketAddr, job: &'a str) -> Scrape<'a> {
        Scrape {
            target,
            job,
            interval: Duration::from_millis(200),
            rule_files: &[],
        }
    }
}

/// A Prometheus server on a free loopback port, storing under a test's
/// directory; killed and reaped when dropped.
pub struct PrometheusServer {
    child: Child,
    log: PathBuf,
    /// Where its HTTP API listens.
    pub addr: SocketAddr,
}

impl PrometheusServer {
    /// Starts a server storing under `dir` (its configuration and log are
    /// written there too) and returns once it reports ready (up to a minute).
    ///
    /// # Panics
    ///
    /// When the server cannot start or does not become ready; the message
    /// carries its log.
    pub fn start(dir: &Path, scrape: Scrape<'_>) -> PrometheusServer {
        let addr = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free loopback port");
        let rules: String = scrape
            .rule_files
            .iter()
            .map(|path| format!("  - '{}'\n", path.display()))
            .collect();
        let interval = format!("{}ms", scrape.interval.as_millis().max(1));
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: {interval}\n  scrape_timeout: {interval}\n  \
                 evaluation_interval: 1s\n\
                 rule_files:\n{rules}\
                 scrape_configs:\n  - job_name: {job}\n    static_configs:\n      \
                 - targets: ['{target}']\n",
                job = scrape.job,
                target = scrape.target,
            ),
        )
        .expect("the Prometheus configuration is written");
        let log = dir.join("prometheus.log");
        let child = Command::new(crate::promtool::installed("prometheus"))
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("the Prometheus log is created"))
            .spawn()
            .unwrap_or_else(|e| panic!("prometheus does not start: {e}"));
        let mut server = PrometheusServer { child, log, addr };
        server.wait_for("prometheus to be ready", Duration::from_secs(60), |p| {
            matches!(http_get(p.addr, "/-/ready", None), Ok((200, _))).then_some(())
        });
        server
    }

    /// What it logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Fails the test, with its log, if it has exited.
    pub fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("prometheus exited ({status}):\n{}", self.log());
        }
    }

    /// Polls `probe` every 100 ms until it gives a value, failing the test
    /// (with the server's log) after `timeout` or when the server exits.
    pub fn wait_for<T>(
        &mut self,
        what: &str,
        timeout: Duration,
        mut probe: impl FnMut(&PrometheusServer) -> Option<T>,
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

    /// `GET path` on its API, as JSON (`None` when it does not answer JSON).
    pub fn api(&self, path: &str) -> Option<Value> {
        let (_, body) = http_get(self.addr, path, None).ok()?;
        serde_json::from_str(&body).ok()
    }

    /// An instant query: its `data.result` vector, or what went wrong (no
    /// answer, or Prometheus's own error answer).
    pub fn query(&self, promql: &str) -> Result<Vec<Value>, String> {
        let answer = self
            .api(&format!("/api/v1/query?query={}", percent_encode(promql)))
            .ok_or_else(|| format!("{promql}: prometheus gave no JSON answer"))?;
        if answer["status"] != "success" {
            return Err(format!("{promql}: {answer}"));
        }
        Ok(answer["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default())
    }

    /// An instant query that must succeed: its `data.result` vector.
    ///
    /// # Panics
    ///
    /// When the query fails; the message carries the server's log.
    pub fn expect_query(&self, promql: &str) -> Vec<Value> {
        self.query(promql).unwrap_or_else(|error| {
            panic!("query failed: {error}\nprometheus log:\n{}", self.log())
        })
    }

    /// The single value of `promql`, or `None` while it has no series (or the
    /// server does not answer).
    ///
    /// # Panics
    ///
    /// When `promql` gives several series.
    pub fn scalar(&self, promql: &str) -> Option<f64> {
        let result = self.query(promql).ok()?;
        assert!(result.len() <= 1, "{promql}: several series {result:?}");
        result.first()?["value"][1].as_str()?.parse().ok()
    }
}

impl Drop for PrometheusServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET path` on loopback as HTTP/1.0 (the body is never chunked and ends
/// with the connection), with an optional `Accept` header: status and body.
pub fn http_get(
    addr: SocketAddr,
    path: &str,
    accept: Option<&str>,
) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\n{accept}\r\n"
    )?;
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

/// `text` percent-encoded for a URL query (unreserved characters kept).
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

#[cfg(test)]
mod tests {
    use super::percent_encode;

    #[test]
    fn percent_encoding_keeps_only_unreserved_characters() {
        assert_eq!(
            percent_encode("rate(a_total{x=\"1\"}[1m])"),
            "rate%28a_total%7Bx%3D%221%22%7D%5B1m%5D%29"
        );
        assert_eq!(percent_encode("A-z_0.9~"), "A-z_0.9~");
    }
}
