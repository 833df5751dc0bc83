//! What the tests with a real Prometheus server share: child processes that
//! are killed when dropped, plug-ins built by cargo, loopback HTTP; the server
//! itself is the workspace's one harness, `testsupport::prometheus_server`.

#![allow(dead_code)]

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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

pub use nixl_telemetry_testsupport::prometheus_server::{
    http_get, percent_encode, PrometheusServer, Scrape,
};

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
