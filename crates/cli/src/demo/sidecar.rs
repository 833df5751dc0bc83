//! The demo's export sidecar: `nixl-telemetry export` run as a process of its
//! own on the demo's ring directory, serving every agent on one Prometheus
//! endpoint; and the live table read back from that endpoint.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::monitor::Row;

/// The plug-in file the sidecar serves Prometheus with.
pub const PLUGIN_FILE: &str = "libtelemetry_exporter_prometheus.so";
/// The cargo package that builds it.
pub const PLUGIN_PACKAGE: &str = "nixl-telemetry-exporter-prometheus";

/// Where the Prometheus plug-in is: the directories of
/// `NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR`, then the directory of this program
/// (a cargo build puts both there).
pub fn find_plugin() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var("NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR")
        .unwrap_or_default()
        .split(':')
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .collect();
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_owned))
    {
        dirs.push(dir);
    }
    dirs.into_iter().find(|d| d.join(PLUGIN_FILE).is_file())
}

/// Started by `cargo run` from a terminal with the plug-in missing: builds it
/// with the same profile as this program (the first run only).
pub fn build_plugin_with_cargo() -> Option<PathBuf> {
    use std::io::IsTerminal;
    let cargo = std::env::var_os("CARGO")?;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    let exe = std::env::current_exe().ok()?;
    let profile_dir = exe.parent()?;
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "-p", PLUGIN_PACKAGE, "--manifest-path"])
        .arg(&manifest);
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    eprintln!(
        "Building the Prometheus plug-in for the export sidecar (once): cargo build {}-p {PLUGIN_PACKAGE}",
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            "--release "
        } else {
            ""
        }
    );
    let ok = cmd.status().is_ok_and(|s| s.success());
    (ok && profile_dir.join(PLUGIN_FILE).is_file()).then(|| profile_dir.to_owned())
}

/// The sidecar process.
pub struct DemoSidecar {
    child: Child,
    /// Where it serves `/metrics`.
    pub addr: SocketAddr,
    /// The directory of the plug-in it loaded.
    pub plugin_dir: PathBuf,
}

impl DemoSidecar {
    /// Starts `nixl-telemetry export` on `rings` with the plug-in of
    /// `plugin_dir` on a free loopback port, and waits for its endpoint.
    pub fn start(rings: &Path, plugin_dir: &Path) -> anyhow::Result<DemoSidecar> {
        let addr = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .context("finding a free loopback port for the sidecar")?;
        let exe = std::env::current_exe().context("locating this program")?;
        let mut cmd = Command::new(exe);
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("NIXL_") {
                cmd.env_remove(name);
            }
        }
        // A process group of its own: Ctrl+C stops the demo, which then lets
        // the sidecar export the last events before it stops it.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = cmd
            .arg("export")
            .arg("--dir")
            .arg(rings)
            .args(["--exporter", "prometheus", "--plugin-dir"])
            .arg(plugin_dir)
            .arg("--output-path")
            .arg(addr.to_string())
            .args(["--interval", "20", "--grace", "3600", "--quiet"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .context("starting the export sidecar")?;
        let mut sidecar = DemoSidecar {
            child,
            addr,
            plugin_dir: plugin_dir.to_owned(),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while sidecar.scrape().is_err() {
            if let Ok(Some(status)) = sidecar.child.try_wait() {
                bail!("the export sidecar exited at start ({status})");
            }
            if Instant::now() > deadline {
                bail!("the export sidecar's endpoint {addr} did not answer within 10 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(sidecar)
    }

    /// `GET /metrics`.
    pub fn scrape(&self) -> std::io::Result<String> {
        let mut s = TcpStream::connect_timeout(&self.addr, Duration::from_secs(2))?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        write!(s, "GET /metrics HTTP/1.0\r\nHost: {}\r\n\r\n", self.addr)?;
        let mut raw = String::new();
        s.read_to_string(&mut raw)?;
        match raw.split_once("\r\n\r\n") {
            Some((head, body))
                if head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200") =>
            {
                Ok(body.to_owned())
            }
            _ => Err(std::io::Error::other("no 200 answer")),
        }
    }

    /// SIGTERM: it drains, flushes and exits; waits for it (5 s at most).
    pub fn stop(mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for DemoSidecar {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// What one agent's series said at one scrape.
#[derive(Debug, Default, Clone)]
pub struct AgentSample {
    /// Events the sidecar read from its rings (`export_events_read_total`).
    pub events: f64,
    /// Bytes moved: `agent_tx_bytes_total` + `agent_rx_bytes_total` +
    /// `memcpy_remote_bytes_total` (the target's).
    pub bytes: f64,
    /// `agent_xfer_time_us_bucket`: (upper bound, cumulative count).
    pub buckets: Vec<(f64, f64)>,
    /// `agent_errors_total`, every status.
    pub errors: f64,
    /// `agent_telemetry_events_dropped_total`.
    pub lost: f64,
}

/// Every agent's sample in an exposition.
pub fn parse(text: &str, agents: &[String]) -> BTreeMap<String, AgentSample> {
    let mut out: BTreeMap<String, AgentSample> = agents
        .iter()
        .map(|a| (a.clone(), AgentSample::default()))
        .collect();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((key, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        let (name, labels) = key.split_once('{').unwrap_or((key, ""));
        let label = |wanted: &str| -> Option<&str> {
            let at = labels.find(&format!("{wanted}=\""))? + wanted.len() + 2;
            labels[at..].split('"').next()
        };
        let Some(sample) = label("agent_name").and_then(|a| out.get_mut(a)) else {
            continue;
        };
        match name {
            "export_events_read_total" => sample.events += value,
            "agent_tx_bytes_total" | "agent_rx_bytes_total" | "memcpy_remote_bytes_total" => {
                sample.bytes += value
            }
            "agent_errors_total" => sample.errors += value,
            "agent_telemetry_events_dropped_total" => sample.lost += value,
            "agent_xfer_time_us_bucket" => {
                let bound = match label("le") {
                    Some("+Inf") => f64::INFINITY,
                    Some(b) => b.parse().unwrap_or(f64::INFINITY),
                    None => continue,
                };
                sample.buckets.push((bound, value));
            }
            _ => {}
        }
    }
    for sample in out.values_mut() {
        sample.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

/// The `q` quantile of the observations between two cumulative bucket lists,
/// as Prometheus's `histogram_quantile` computes it (linear within the
/// bucket); `None` without observations.
pub fn quantile(q: f64, now: &[(f64, f64)], before: &[(f64, f64)]) -> Option<u64> {
    let counts: Vec<(f64, f64)> = now
        .iter()
        .map(|&(le, n)| {
            let was = before.iter().find(|b| b.0 == le).map_or(0.0, |b| b.1);
            (le, n - was)
        })
        .collect();
    let total = counts.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let mut lower = (0.0, 0.0);
    for &(le, n) in &counts {
        if n >= rank {
            if le.is_infinite() {
                return Some(lower.0 as u64);
            }
            let within = if n > lower.1 {
                (rank - lower.1) / (n - lower.1)
            } else {
                1.0
            };
            return Some((lower.0 + (le - lower.0) * within).round() as u64);
        }
        lower = (le, n);
    }
    None
}

/// The live table from the sidecar's endpoint.
pub struct EndpointMonitor {
    agents: Vec<String>,
    first: BTreeMap<String, AgentSample>,
    last: BTreeMap<String, AgentSample>,
}

impl EndpointMonitor {
    /// Starts from what the endpoint shows now.
    pub fn new(sidecar: &DemoSidecar, agents: &[String]) -> EndpointMonitor {
        let now = parse(&sidecar.scrape().unwrap_or_default(), agents);
        EndpointMonitor {
            agents: agents.to_vec(),
            first: now.clone(),
            last: now,
        }
    }

    fn rows_between(
        &self,
        now: &BTreeMap<String, AgentSample>,
        before: &BTreeMap<String, AgentSample>,
        elapsed: Duration,
    ) -> Vec<Row> {
        let secs = elapsed.as_secs_f64().max(1e-3);
        self.agents
            .iter()
            .map(|agent| {
                let n = &now[agent];
                let b = &before[agent];
                Row {
                    agent: agent.clone(),
                    events_per_s: (n.events - b.events) / secs,
                    mb_per_s: (n.bytes - b.bytes) / secs / 1e6,
                    p50_us: quantile(0.5, &n.buckets, &b.buckets),
                    p99_us: quantile(0.99, &n.buckets, &b.buckets),
                    errors: n.errors as u64,
                    lost: n.lost as u64,
                }
            })
            .collect()
    }

    /// The rows since the last call.
    pub fn rows(&mut self, sidecar: &DemoSidecar, elapsed: Duration) -> Vec<Row> {
        let now = match sidecar.scrape() {
            Ok(text) => parse(&text, &self.agents),
            Err(_) => self.last.clone(),
        };
        let rows = self.rows_between(&now, &self.last, elapsed);
        self.last = now;
        rows
    }

    /// Once the producers closed: waits until the sidecar exported every
    /// event `written` says each agent wrote (10 s at most), and returns the
    /// whole run's rows and the events exported per agent.
    pub fn finish(
        &mut self,
        sidecar: &DemoSidecar,
        written: &BTreeMap<String, u64>,
        run: Duration,
    ) -> (Vec<Row>, Vec<(String, u64)>) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(text) = sidecar.scrape() {
                self.last = parse(&text, &self.agents);
            }
            let done = written
                .iter()
                .all(|(a, &n)| self.last.get(a).is_some_and(|s| s.events as u64 >= n));
            if done || Instant::now() > deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let rows = self.rows_between(&self.last, &self.first, run);
        let exported = self
            .agents
            .iter()
            .map(|a| (a.clone(), self.last[a].events as u64))
            .collect();
        (rows, exported)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_as_prometheus_computes_them() {
        let now = [
            (10.0, 0.0),
            (100.0, 50.0),
            (1000.0, 100.0),
            (f64::INFINITY, 100.0),
        ];
        assert_eq!(quantile(0.5, &now, &[]), Some(100));
        assert_eq!(quantile(0.99, &now, &[]), Some(982));
        assert_eq!(quantile(0.25, &now, &[]), Some(55));
        assert_eq!(quantile(0.5, &now, &now), None);
        let inf = [(10.0, 0.0), (f64::INFINITY, 3.0)];
        assert_eq!(quantile(0.5, &inf, &[]), Some(10));
    }

    #[test]
    fn an_exposition_per_agent() {
        let text = "# TYPE x counter\n\
            agent_tx_bytes_total{agent_name=\"initiator\",hostname=\"h\"} 4096\n\
            agent_rx_bytes_total{agent_name=\"initiator\",hostname=\"h\"} 10\n\
            memcpy_remote_bytes_total{agent_name=\"target\",hostname=\"h\",category=\"BACKEND\"} 7\n\
            agent_errors_total{agent_name=\"initiator\",hostname=\"h\",status=\"not_found\"} 2\n\
            agent_errors_total{agent_name=\"initiator\",hostname=\"h\",status=\"backend\"} 1\n\
            agent_xfer_time_us_bucket{agent_name=\"initiator\",hostname=\"h\",le=\"+Inf\"} 3\n\
            agent_xfer_time_us_bucket{agent_name=\"initiator\",hostname=\"h\",le=\"10\"} 1\n\
            export_events_read_total{agent_name=\"target\",hostname=\"h\",category=\"SYSTEM\"} 9\n\
            agent_tx_bytes_total{agent_name=\"other\",hostname=\"h\"} 1\n";
        let agents = vec!["initiator".to_owned(), "target".to_owned()];
        let got = parse(text, &agents);
        assert_eq!(got["initiator"].bytes, 4106.0);
        assert_eq!(got["initiator"].errors, 3.0);
        assert_eq!(
            got["initiator"].buckets,
            [(10.0, 1.0), (f64::INFINITY, 3.0)]
        );
        assert_eq!((got["target"].bytes, got["target"].events), (7.0, 9.0));
        assert_eq!(got.len(), 2);
    }
}
