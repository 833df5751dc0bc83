//! Test fixture, not for production: a Rust exporter plug-in built with
//! [`export_plugin!`](nixl_telemetry_abi::export_plugin) whose behaviour the
//! host's tests choose through `output_path`, written `<mode>[:<log file>]`.
//!
//! | mode | behaviour |
//! | --- | --- |
//! | `ok` | accepts every event |
//! | `panic-create` | panics in `create` |
//! | `panic-export` | panics in `export_batch` when a batch holds an event of value 13 |
//! | `panic-flush` | panics in `flush` |
//! | `fail` | `export_batch` and `flush` return errors (`testkit export fails as asked`, `testkit flush fails as asked`) |
//! | `block` | `export_batch` waits until the file `<log file>.release` exists (a log file is required) |
//! | `fail-cycling` | `export_batch` returns errors whose reasons cycle through three texts (`failure 0`, `failure 1`, `failure 2`) |
//!
//! With a log file, every call appends a line to it: `create <agent>`,
//! `batch <n> <sum of values>`, `flush`, `drop <agent>`, so a test can see what
//! reached the plug-in and that the exporter was dropped.

#![forbid(unsafe_code)]

use std::io::Write;

use nixl_telemetry_abi::rust_plugin::{RustPluginExporter, RustPluginParams};
use nixl_telemetry_abi::Event;

/// What the exporter does, from `output_path`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Accept everything.
    Ok,
    /// Panic in `create`.
    PanicCreate,
    /// Panic on an event of value 13.
    PanicExport,
    /// Panic in `flush`.
    PanicFlush,
    /// Fail every export and flush.
    Fail,
    /// Fail every export, the reason cycling through three texts.
    FailCycling,
    /// Block in every export until `<log>.release` exists.
    Block,
}

/// The fixture exporter.
#[derive(Debug)]
pub struct TestkitExporter {
    mode: Mode,
    agent: String,
    log: Option<std::fs::File>,
    /// `<log>.release`, for [`Mode::Block`].
    release: Option<std::path::PathBuf>,
    batches: u64,
}

impl TestkitExporter {
    fn log(&mut self, line: &str) {
        if let Some(log) = &mut self.log {
            let _ = writeln!(log, "{line}");
        }
    }
}

impl RustPluginExporter for TestkitExporter {
    fn create(params: &RustPluginParams<'_>) -> Result<Self, String> {
        let spec = params.output_path.unwrap_or("ok");
        let (mode, log) = match spec.split_once(':') {
            Some((mode, log)) => (mode, Some(log)),
            None => (spec, None),
        };
        let mode = match mode {
            "ok" => Mode::Ok,
            "panic-create" => Mode::PanicCreate,
            "panic-export" => Mode::PanicExport,
            "panic-flush" => Mode::PanicFlush,
            "fail" => Mode::Fail,
            "fail-cycling" => Mode::FailCycling,
            "block" if log.is_some() => Mode::Block,
            "block" => return Err("testkit mode block needs a log file: block:<log>".to_owned()),
            other => return Err(format!("unknown testkit mode {other:?}")),
        };
        if mode == Mode::PanicCreate {
            panic!("testkit panics in create as asked");
        }
        let log_path = log;
        let log = match log {
            Some(path) => Some(
                std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(path)
                    .map_err(|e| format!("cannot open {path}: {e}"))?,
            ),
            None => None,
        };
        let mut exporter = TestkitExporter {
            mode,
            agent: params.agent_name.to_owned(),
            log,
            release: log_path.map(|p| std::path::PathBuf::from(format!("{p}.release"))),
            batches: 0,
        };
        let line = format!("create {}", exporter.agent);
        exporter.log(&line);
        Ok(exporter)
    }

    fn export_batch(&mut self, events: &[Event]) -> Result<(), String> {
        let sum: u64 = events.iter().map(|e| e.value).sum();
        self.log(&format!("batch {} {sum}", events.len()));
        self.batches += 1;
        match self.mode {
            Mode::PanicExport if events.iter().any(|e| e.value == 13) => {
                panic!("testkit panics on value 13 as asked")
            }
            Mode::Fail => Err("testkit export fails as asked".to_owned()),
            Mode::FailCycling => Err(format!("failure {}", self.batches % 3)),
            Mode::Block => {
                if let Some(release) = &self.release {
                    while !release.exists() {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn flush(&mut self) -> Result<(), String> {
        self.log("flush");
        match self.mode {
            Mode::PanicFlush => panic!("testkit panics in flush as asked"),
            Mode::Fail => Err("testkit flush fails as asked".to_owned()),
            _ => Ok(()),
        }
    }
}

impl Drop for TestkitExporter {
    fn drop(&mut self) {
        let line = format!("drop {}", self.agent);
        self.log(&line);
    }
}

nixl_telemetry_abi::export_plugin!(TestkitExporter, name = "testkit", version = "0.0.0");
