//! What the `export` tests share: rings written in any layout, the sidecar
//! as a child process stopped with a signal, the CSV files it writes, the
//! Prometheus endpoint it serves.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nixl_telemetry::ring::{layout, RingWriter};
use nixl_telemetry::{Category, Event};

#[allow(unused_imports)]
pub use crate::prometheus_support::{free_addr, http_get, plugin_dir, wait_for, without_nixl_env};

/// A ring of `layout` for `agent` in `dir` holding `events`; the writer is
/// returned (its producer counts as running until it is dropped).
pub fn ring(
    dir: &Path,
    agent: &str,
    ring_layout: &'static layout::RingLayout,
    capacity: usize,
    events: &[Event],
) -> RingWriter {
    let mut writer = RingWriter::create_with_layout(dir, agent, capacity, ring_layout)
        .unwrap_or_else(|e| panic!("ring {agent}: {e}"));
    let outcome = writer.push(events);
    assert_eq!(outcome.written, events.len(), "{agent}: every event fits");
    writer
}

/// The events of the workload's initiator, as an agent records them.
pub fn workload_events(scale: u64) -> Vec<Event> {
    let mut events = vec![Event::new(
        1,
        Category::MEMORY,
        "agent_memory_registered",
        65536,
    )];
    for i in 0..3 {
        events.push(Event::new(
            10 + i,
            Category::PERFORMANCE,
            "agent_xfer_post_time",
            5,
        ));
        events.push(Event::new(
            11 + i,
            Category::PERFORMANCE,
            "agent_xfer_time",
            120,
        ));
        events.push(Event::new(
            12 + i,
            Category::TRANSFER,
            "agent_tx_bytes",
            4096 * scale,
        ));
        events.push(Event::new(
            13 + i,
            Category::TRANSFER,
            "agent_tx_requests_num",
            1,
        ));
    }
    events.push(Event::new(20, Category::ERROR, "NIXL_ERR_NOT_FOUND", 1));
    events.push(Event::new(
        30,
        Category::MEMORY,
        "agent_memory_deregistered",
        65536,
    ));
    events
}

/// `nixl-telemetry export` with no `NIXL_*` variable inherited.
pub fn export_command(dir: &Path, exporter: &str) -> Command {
    let mut cmd = crate::prometheus_support::cli_without_nixl_env();
    cmd.arg("export")
        .arg("--dir")
        .arg(dir)
        .arg("--exporter")
        .arg(exporter);
    cmd
}

/// The sidecar as a child process; killed if still running when dropped.
pub struct Sidecar {
    child: std::process::Child,
    log: PathBuf,
}

impl Sidecar {
    /// Starts `cmd` with stderr into `log`.
    pub fn start(cmd: &mut Command, log: &Path) -> Sidecar {
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .expect("nixl-telemetry export starts");
        Sidecar {
            child,
            log: log.to_owned(),
        }
    }

    /// What it wrote to stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until its log holds `text`.
    pub fn wait_for_log(&mut self, text: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !self.log().contains(text) {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "the sidecar exited ({status}) before logging {text:?}:\n{}",
                    self.log()
                );
            }
            assert!(
                Instant::now() < deadline,
                "the sidecar did not log {text:?}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends `signal` (`TERM`, `INT`) and waits for the exit (10 s at most).
    pub fn stop(mut self, signal: &str) -> (ExitStatus, String) {
        let sent = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(sent.success());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return (status, self.log());
            }
            assert!(
                Instant::now() < deadline,
                "the sidecar did not stop within 10 s of SIG{signal}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the process to exit by itself.
    pub fn wait(mut self) -> (ExitStatus, String) {
        let status = self.child.wait().unwrap();
        (status, self.log())
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One line of a CSV file the CSV plug-in wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvEvent {
    pub timestamp_us: u64,
    pub category: i32,
    pub name: String,
    pub value: u64,
}

/// The events of a CSV file (header skipped; names without quotes).
pub fn read_csv(path: &Path) -> Vec<CsvEvent> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .skip(1)
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            CsvEvent {
                timestamp_us: f[0].parse().unwrap(),
                category: f[1].parse().unwrap(),
                name: f[2].trim_matches('"').to_owned(),
                value: f[3].parse().unwrap(),
            }
        })
        .collect()
}

/// The CSV plug-in in a directory of its own under `tmp`.
pub fn csv_plugins(tmp: &Path) -> PathBuf {
    plugin_dir(
        tmp,
        "nixl-telemetry-exporter-csv",
        "libtelemetry_exporter_csv.so",
    )
}

/// The sidecar with the CSV plug-in of `plugins` writing one file per agent
/// into `<tmp>/csv`, reading the rings every 20 ms at most; `extra` options
/// too. Returns it and the CSV directory.
pub fn csv_sidecar(tmp: &Path, rings: &Path, plugins: &Path, extra: &[&str]) -> (Sidecar, PathBuf) {
    let csv = tmp.join("csv");
    std::fs::create_dir_all(&csv).unwrap();
    let sidecar = Sidecar::start(
        export_command(rings, "csv")
            .arg("--plugin-dir")
            .arg(plugins)
            .arg("--output-path")
            .arg(csv.join("{agent}.csv"))
            .args(["--interval", "20"])
            .args(extra),
        &tmp.join("export.log"),
    );
    (sidecar, csv)
}

/// The Prometheus plug-in in a directory of its own under `tmp`.
pub fn prometheus_plugins(tmp: &Path) -> PathBuf {
    plugin_dir(
        tmp,
        "nixl-telemetry-exporter-prometheus",
        "libtelemetry_exporter_prometheus.so",
    )
}

/// The samples of an exposition: `name{labels}` → value, comments skipped.
pub fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let (key, value) = l.rsplit_once(' ')?;
            Some((key.to_owned(), value.parse().ok()?))
        })
        .collect()
}

/// The value of the sample of `family` for `agent` (labels `agent_name`
/// and, when given, `extra`), if exposed.
pub fn agent_value(text: &str, family: &str, agent: &str, extra: Option<&str>) -> Option<f64> {
    samples(text).into_iter().find_map(|(key, value)| {
        let (name, labels) = key.split_once('{')?;
        (name == family
            && labels.contains(&format!("agent_name=\"{agent}\""))
            && extra.is_none_or(|e| labels.contains(e)))
        .then_some(value)
    })
}

/// Scrapes `addr` until `check` accepts the body; returns it.
pub fn scrape_until(
    addr: std::net::SocketAddr,
    what: &str,
    timeout: Duration,
    check: impl Fn(&str) -> bool,
) -> String {
    wait_for(what, timeout, || {
        let (status, body) = http_get(addr, "/metrics", None).ok()?;
        (status == 200 && check(&body)).then_some(body)
    })
}

/// A file's header positions: (write_pos, read_pos).
pub fn positions(path: &Path) -> (u64, u64) {
    let bytes = std::fs::read(path).unwrap();
    (
        u64::from_le_bytes(bytes[0..8].try_into().unwrap()),
        u64::from_le_bytes(bytes[8..16].try_into().unwrap()),
    )
}

/// The workspace's `tests/data`.
pub fn test_data() -> PathBuf {
    nixl_telemetry_testsupport::workspace_root().join("tests/data")
}
