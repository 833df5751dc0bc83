//! The demo's export sidecar: `nixl-telemetry export` run as a process of its
//! own on the demo's ring directory, serving every agent on one Prometheus
//! endpoint. The demo's table does not read the endpoint: it shows what
//! `top --plain` shows of the same rings.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use nixl_telemetry::exporter::plugin::search;
use nixl_telemetry::TelemetryConfig;

/// The plug-in file the sidecar serves Prometheus with.
pub const PLUGIN_FILE: &str = "libtelemetry_exporter_prometheus.so";
/// The cargo package that builds it.
pub const PLUGIN_PACKAGE: &str = "nixl-telemetry-exporter-prometheus";

/// The plug-in's name, as `--exporter` takes it.
const PLUGIN_NAME: &str = "prometheus";

/// The directory of the Prometheus plug-in: where a host would find it (the
/// library's plug-in search, `NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR` first),
/// else the directory of this program (a cargo build puts both there).
pub fn find_plugin() -> Option<PathBuf> {
    let config = TelemetryConfig::from_env().unwrap_or_default();
    let found = search::locate(PLUGIN_NAME, &config, &[]).found;
    if let Some(dir) = found.as_deref().and_then(Path::parent) {
        return Some(dir.to_owned());
    }
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_owned))
        .filter(|d| d.join(PLUGIN_FILE).is_file())
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
            .args(["--exporter", PLUGIN_NAME, "--plugin-dir"])
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

    /// `GET /metrics`: the body of a 200 answer.
    fn scrape(&self) -> std::io::Result<String> {
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
