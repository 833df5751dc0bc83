//! What the tests with a real Prometheus server share: child processes that
//! are killed when dropped, plug-ins built by cargo, loopback HTTP, the
//! Prometheus server itself and its query API.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A child process, killed and reaped when dropped, whose stderr goes to `log`.
pub struct Reaped {
    /// What it is, for messages.
    pub name: String,
    /// The process.
    pub child: Child,
    /// Where its stderr goes.
    pub log: PathBuf,
}

impl Reaped {
    /// Starts `cmd` (stdin and stdout closed, stderr to `log`).
    pub fn spawn(name: &str, cmd: &mut Command, log: PathBuf) -> Reaped {
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("{name} does not start: {e}"));
        Reaped {
            name: name.to_owned(),
            child,
            log,
        }
    }

    /// What it wrote to stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Whether it is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Fails the test, with its log, if it has exited.
    pub fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("{} exited early ({status}):\n{}", self.name, self.log());
        }
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[allow(unused_imports)]
pub use nixl_telemetry_testsupport::workspace_root;

/// Builds the plug-in crate `package` (in a target directory of its own, once
/// per test process) and returns its library.
pub fn build_plugin(package: &str) -> PathBuf {
    nixl_telemetry_testsupport::build_rust_plugin(package)
}

/// A directory under `tmp` holding only the plug-in `file` of crate `package`.
pub fn plugin_dir(tmp: &Path, package: &str, file: &str) -> PathBuf {
    let so = build_plugin(package);
    let dir = tmp.join("plugins");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&so, dir.join(file)).unwrap();
    dir
}

/// A directory under `tmp` holding only the `prometheus_mp` plug-in.
pub fn prometheus_mp_plugin_dir(tmp: &Path) -> PathBuf {
    plugin_dir(
        tmp,
        "nixl-telemetry-exporter-prometheus-mp",
        "libtelemetry_exporter_prometheus_mp.so",
    )
}

/// A loopback address with a port that was free a moment ago.
pub fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// `GET path` on loopback: (status, body). HTTP/1.0, so the body is never
/// chunked and ends with the connection.
pub fn http_get(
    addr: SocketAddr,
    path: &str,
    accept: Option<&str>,
) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n{accept}\r\n")?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Ok((status, body.to_owned()))
}

/// Waits (polling every 100 ms) until `probe` gives a value; fails the test
/// after `timeout`.
pub fn wait_for<T>(what: &str, timeout: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `nixl-telemetry` with no `NIXL_*` variable inherited.
pub fn cli_without_nixl_env() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nixl-telemetry"));
    without_nixl_env(&mut cmd);
    cmd
}

/// `cmd`, made not to inherit any `NIXL_*` variable.
pub fn without_nixl_env(cmd: &mut Command) -> &mut Command {
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("NIXL_") {
            cmd.env_remove(k);
        }
    }
    cmd
}

/// A Prometheus server on a free loopback port, scraping `target` every
/// 200 ms, storing under `tmp`; returns once it reports ready.
pub struct Prometheus {
    /// The server process.
    pub server: Reaped,
    /// Where its HTTP API listens.
    pub addr: SocketAddr,
}

impl Prometheus {
    /// Starts the server and waits (up to a minute) until it is ready.
    pub fn start(tmp: &Path, target: SocketAddr) -> Prometheus {
        let bin = nixl_telemetry_testsupport::promtool::installed("prometheus");
        let addr = free_addr();
        let config = tmp.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 200ms\n  scrape_timeout: 200ms\n  evaluation_interval: 1s\n\
                 scrape_configs:\n  - job_name: nixl\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let mut server = Reaped::spawn(
            "prometheus",
            Command::new(bin)
                .arg(format!("--config.file={}", config.display()))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    tmp.join("data").display()
                ))
                .arg(format!("--web.listen-address={addr}")),
            tmp.join("prometheus.log"),
        );
        wait_for("prometheus to be ready", Duration::from_secs(60), || {
            server.assert_running();
            matches!(http_get(addr, "/-/ready", None), Ok((200, _))).then_some(())
        });
        Prometheus { server, addr }
    }

    /// An instant query; the `data.result` vector, or `None` when the query
    /// does not answer with success.
    pub fn try_query(&self, promql: &str) -> Option<Vec<Value>> {
        let (_, body) = http_get(
            self.addr,
            &format!("/api/v1/query?query={}", percent_encode(promql)),
            None,
        )
        .ok()?;
        let json: Value = serde_json::from_str(&body).ok()?;
        (json["status"] == "success").then(|| {
            json["data"]["result"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
    }

    /// An instant query that must succeed; the `data.result` vector.
    pub fn query(&self, promql: &str) -> Vec<Value> {
        self.try_query(promql).unwrap_or_else(|| {
            panic!(
                "query {promql} failed\nprometheus log:\n{}",
                self.server.log()
            )
        })
    }

    /// The single value of `promql`, or `None` while it has no series (or the
    /// server does not answer).
    pub fn scalar(&self, promql: &str) -> Option<f64> {
        let result = self.try_query(promql)?;
        assert!(result.len() <= 1, "{promql}: several series {result:?}");
        result.first()?["value"][1].as_str()?.parse().ok()
    }
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
