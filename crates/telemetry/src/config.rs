//! Configuration: from `NIXL_TELEMETRY_*` environment variables or from code.
//!
//! Every invalid value is a [`ConfigError`] naming the variable (or input), the
//! value and what is accepted. Nothing here touches the file system; the ring
//! directory is checked when the exporter is created.

use nixl_telemetry_abi::env::{
    self, BUFFER_SIZE, DIR, ENABLE, ENABLED_METRICS, EXPORTER, EXPORTER_OUTPUT_PATH,
    EXPORTER_PLUGIN_DIR, NIXL_PLUGIN_DIR, RING_VERSION, RUN_INTERVAL,
};
use std::path::PathBuf;
use std::time::Duration;

use nixl_telemetry_abi::ring::RingLayout;

use crate::filter::MetricFilter;

/// The ring layout written when `NIXL_TELEMETRY_RING_VERSION` is unset:
/// version 1 keeps timestamps, categories and free-form names.
pub const DEFAULT_RING_LAYOUT: &RingLayout = &nixl_telemetry_abi::ring::V1;

/// Default events per ring and per staging buffer.
pub const DEFAULT_BUFFER_SIZE: usize = 4096;
/// Default flush interval.
pub const DEFAULT_RUN_INTERVAL: Duration = Duration::from_millis(100);
/// Largest accepted buffer size (2^26 events: 3.5 GiB of ring).
pub const MAX_BUFFER_SIZE: usize = 1 << 26;

const BUFFER_SIZE_ACCEPTED: &str = "a power of two from 2 to 67108864 (events)";
const RUN_INTERVAL_ACCEPTED: &str = "a whole number of milliseconds, at least 1";
const RING_VERSION_ACCEPTED: &str = "1 (NIXL 1.0), 2 or 2-named (NIXL 1.1), 2-typed (NIXL 1.2), \
     3 (NIXL 1.3), 4 (NIXL 1.4, 1.5)";
const EXPORTER_ACCEPTED: &str =
    "buffer, nop, or a plug-in name (letters, digits, '_', '-', '.') for libtelemetry_exporter_<name>.so";

/// An invalid setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A variable (or builder input) holds a value that is not accepted.
    #[error("{variable}={value:?} is invalid; accepted: {accepted}")]
    InvalidValue {
        /// The variable or input.
        variable: &'static str,
        /// The value found.
        value: String,
        /// What is accepted.
        accepted: String,
    },
    /// The `buffer` exporter was chosen without a directory.
    #[error(
        "{EXPORTER}=buffer needs a ring directory; accepted: set {DIR} or {EXPORTER_OUTPUT_PATH} to a directory"
    )]
    MissingRingDirectory,
    /// The agent name cannot name a ring file.
    #[error("agent name {name:?} is invalid: {reason}; accepted: a non-empty name of at most 255 bytes without '/' or NUL, other than '.' and '..' and not of the form '.<anything>.tmp'")]
    InvalidAgentName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

impl ConfigError {
    fn invalid(variable: &'static str, value: &str, accepted: &str) -> ConfigError {
        ConfigError::InvalidValue {
            variable,
            value: value.to_owned(),
            accepted: accepted.to_owned(),
        }
    }
}

/// Which exporter receives the flushed events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExporterChoice {
    /// Collect only: events stay in staging for [`crate::Telemetry::drain`]; nothing is written.
    None,
    /// The built-in shared-memory ring, one file per agent in `dir`.
    Buffer {
        /// The ring directory.
        dir: PathBuf,
    },
    /// The built-in exporter that accepts and discards everything.
    Nop,
    /// A plug-in `libtelemetry_exporter_<name>.so`.
    Plugin {
        /// The plug-in's name.
        name: String,
    },
}

/// All settings of one telemetry instance.
#[derive(Debug, Clone)]
pub struct TelemetryConfig {
    /// Whether telemetry records anything.
    pub enabled: bool,
    /// Events per ring and per staging buffer; a power of two ≥ 2.
    pub buffer_size: usize,
    /// Flush interval.
    pub run_interval: Duration,
    /// The exporter.
    pub exporter: ExporterChoice,
    /// `NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH`, handed to the exporter.
    pub output_path: Option<String>,
    /// Directories searched for plug-ins before `NIXL_PLUGIN_DIR` and the install directory.
    pub plugin_dirs: Vec<PathBuf>,
    /// `NIXL_PLUGIN_DIR`.
    pub nixl_plugin_dir: Option<PathBuf>,
    /// The `lib` directory of the environment the host runs in, when the
    /// executable's own does not say it: a Python host sets its
    /// `<sys.prefix>/lib`, since a virtual environment's `bin/python` is a
    /// link to an interpreter elsewhere. Searched after the executable's.
    pub environment_libdir: Option<PathBuf>,
    /// The allowlist; `None` = every event.
    pub enabled_metrics: Option<MetricFilter>,
    /// The ring layout the `buffer` exporter writes (`NIXL_TELEMETRY_RING_VERSION`).
    pub ring_layout: &'static RingLayout,
}

impl Default for TelemetryConfig {
    /// Enabled, default sizes, collect only.
    fn default() -> Self {
        TelemetryConfig {
            enabled: true,
            buffer_size: DEFAULT_BUFFER_SIZE,
            run_interval: DEFAULT_RUN_INTERVAL,
            exporter: ExporterChoice::None,
            output_path: None,
            plugin_dirs: Vec::new(),
            nixl_plugin_dir: None,
            environment_libdir: None,
            enabled_metrics: None,
            ring_layout: DEFAULT_RING_LAYOUT,
        }
    }
}

/// Parses `NIXL_TELEMETRY_ENABLE`'s spellings ([`env::parse_switch`]).
pub fn parse_enable(value: &str) -> Result<bool, ConfigError> {
    env::parse_switch(value)
        .ok_or_else(|| ConfigError::invalid(ENABLE, value, env::SWITCH_ACCEPTED))
}

/// Checks a buffer size: a power of two from 2 to [`MAX_BUFFER_SIZE`].
pub fn check_buffer_size(variable: &'static str, size: usize) -> Result<usize, ConfigError> {
    if (2..=MAX_BUFFER_SIZE).contains(&size) && size.is_power_of_two() {
        Ok(size)
    } else {
        Err(ConfigError::invalid(
            variable,
            &size.to_string(),
            BUFFER_SIZE_ACCEPTED,
        ))
    }
}

fn parse_buffer_size(value: &str) -> Result<usize, ConfigError> {
    let n: usize = value
        .trim()
        .parse()
        .map_err(|_| ConfigError::invalid(BUFFER_SIZE, value, BUFFER_SIZE_ACCEPTED))?;
    check_buffer_size(BUFFER_SIZE, n)
        .map_err(|_| ConfigError::invalid(BUFFER_SIZE, value, BUFFER_SIZE_ACCEPTED))
}

/// Checks a flush interval: at least 1 ms.
pub fn check_run_interval(
    variable: &'static str,
    interval: Duration,
) -> Result<Duration, ConfigError> {
    if interval >= Duration::from_millis(1) {
        Ok(interval)
    } else {
        Err(ConfigError::invalid(
            variable,
            &format!("{}ms", interval.as_secs_f64() * 1e3),
            RUN_INTERVAL_ACCEPTED,
        ))
    }
}

/// Parses `NIXL_TELEMETRY_RING_VERSION`: `1`–`4` or a layout name such as
/// `2-typed` ([`RingLayout::from_selector`]).
pub fn parse_ring_version(value: &str) -> Result<&'static RingLayout, ConfigError> {
    RingLayout::from_selector(value)
        .ok_or_else(|| ConfigError::invalid(RING_VERSION, value, RING_VERSION_ACCEPTED))
}

fn parse_run_interval(value: &str) -> Result<Duration, ConfigError> {
    let ms: u64 = value
        .trim()
        .parse()
        .map_err(|_| ConfigError::invalid(RUN_INTERVAL, value, RUN_INTERVAL_ACCEPTED))?;
    if ms == 0 {
        return Err(ConfigError::invalid(
            RUN_INTERVAL,
            value,
            RUN_INTERVAL_ACCEPTED,
        ));
    }
    Ok(Duration::from_millis(ms))
}

/// Checks a plug-in name: letters, digits, `_`, `-`, `.`, not starting with `.`.
pub fn check_plugin_name(variable: &'static str, name: &str) -> Result<(), ConfigError> {
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if ok {
        Ok(())
    } else {
        Err(ConfigError::invalid(variable, name, EXPORTER_ACCEPTED))
    }
}

/// Checks that an agent name can name a ring file.
pub fn check_agent_name(name: &str) -> Result<(), ConfigError> {
    let reason = if name.is_empty() {
        "it is empty"
    } else if name.contains('/') {
        "it contains '/'"
    } else if name.contains('\0') {
        "it contains NUL"
    } else if name == "." || name == ".." {
        "it is a directory reference"
    } else if name.len() > 255 {
        "it is longer than 255 bytes"
    } else if name.starts_with('.') && name.ends_with(".tmp") {
        // Ring writers create `.nixl-ring.<pid>.<µs>.<n>.tmp` first; readers
        // skip every such name in a directory, so this ring would go unread.
        "it has the form of a ring writer's temporary file ('.' ... '.tmp'), which readers skip"
    } else {
        return Ok(());
    };
    Err(ConfigError::InvalidAgentName {
        name: name.to_owned(),
        reason,
    })
}

/// Every variable [`TelemetryConfig::from_env`] reads.
const VARIABLES: [&str; 10] = [
    ENABLE,
    BUFFER_SIZE,
    RUN_INTERVAL,
    DIR,
    EXPORTER,
    EXPORTER_OUTPUT_PATH,
    EXPORTER_PLUGIN_DIR,
    NIXL_PLUGIN_DIR,
    ENABLED_METRICS,
    RING_VERSION,
];

fn non_empty(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.trim().is_empty())
}

impl TelemetryConfig {
    /// Reads the configuration from the process environment. A variable
    /// whose value is not UTF-8 is an error naming it (read as unset, it
    /// would silently turn telemetry off or move its files).
    pub fn from_env() -> Result<TelemetryConfig, ConfigError> {
        for variable in VARIABLES {
            env::var(variable).map_err(|e| {
                ConfigError::invalid(e.variable, &e.value_lossy, env::UTF8_ACCEPTED)
            })?;
        }
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the configuration through `lookup` (a variable name → its value), so
    /// tests and embedders need not touch the process environment.
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<TelemetryConfig, ConfigError> {
        let enabled = match non_empty(lookup(ENABLE)) {
            Some(v) => parse_enable(&v)?,
            None => false,
        };
        let buffer_size = match non_empty(lookup(BUFFER_SIZE)) {
            Some(v) => parse_buffer_size(&v)?,
            None => DEFAULT_BUFFER_SIZE,
        };
        let run_interval = match non_empty(lookup(RUN_INTERVAL)) {
            Some(v) => parse_run_interval(&v)?,
            None => DEFAULT_RUN_INTERVAL,
        };
        let dir = non_empty(lookup(DIR)).map(PathBuf::from);
        let output_path = non_empty(lookup(EXPORTER_OUTPUT_PATH));
        let exporter = match non_empty(lookup(EXPORTER)).map(|v| v.trim().to_owned()) {
            None => match dir {
                Some(dir) => ExporterChoice::Buffer {
                    dir: output_path.clone().map(PathBuf::from).unwrap_or(dir),
                },
                None => ExporterChoice::None,
            },
            // NIXL spells its built-ins `BUFFER` and `NOP`; ours were `buffer`
            // and `nop`: both spellings name the built-in exporters.
            Some(name) if name == "buffer" || name == "BUFFER" => match (&output_path, dir) {
                (Some(out), _) => ExporterChoice::Buffer {
                    dir: PathBuf::from(out),
                },
                (None, Some(dir)) => ExporterChoice::Buffer { dir },
                (None, None) => return Err(ConfigError::MissingRingDirectory),
            },
            Some(name) if name == "nop" || name == "NOP" => ExporterChoice::Nop,
            Some(name) => {
                check_plugin_name(EXPORTER, &name)?;
                ExporterChoice::Plugin { name }
            }
        };
        let plugin_dirs = non_empty(lookup(EXPORTER_PLUGIN_DIR))
            .map(|v| {
                v.split(':')
                    .filter(|p| !p.is_empty())
                    .map(PathBuf::from)
                    .collect()
            })
            .unwrap_or_default();
        let nixl_plugin_dir = non_empty(lookup(NIXL_PLUGIN_DIR)).map(PathBuf::from);
        let enabled_metrics = lookup(ENABLED_METRICS).and_then(|v| MetricFilter::parse(&v));
        let ring_layout = match non_empty(lookup(RING_VERSION)) {
            Some(v) => parse_ring_version(&v)?,
            None => DEFAULT_RING_LAYOUT,
        };
        Ok(TelemetryConfig {
            enabled,
            buffer_size,
            run_interval,
            exporter,
            output_path,
            plugin_dirs,
            nixl_plugin_dir,
            environment_libdir: None,
            enabled_metrics,
            ring_layout,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(vars: &[(&str, &str)]) -> Result<TelemetryConfig, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        TelemetryConfig::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn enable_spellings() {
        for v in [
            "y", "YES", "On", "1", "true", "TRUE", "enable", "Enable", " yes ",
        ] {
            assert!(cfg(&[(ENABLE, v)]).unwrap().enabled, "{v}");
        }
        for v in ["n", "No", "OFF", "0", "false", "DISABLE", ""] {
            assert!(!cfg(&[(ENABLE, v)]).unwrap().enabled, "{v}");
        }
        assert!(!cfg(&[]).unwrap().enabled);
        for v in ["maybe", "2", "yess", "enabled"] {
            let err = cfg(&[(ENABLE, v)]).unwrap_err().to_string();
            assert!(
                err.contains(ENABLE) && err.contains(v) && err.contains("accepted"),
                "{err}"
            );
        }
    }

    #[test]
    fn buffer_sizes() {
        assert_eq!(cfg(&[]).unwrap().buffer_size, 4096);
        for (v, want) in [("2", 2), ("1024", 1024), (" 65536 ", 65536)] {
            assert_eq!(cfg(&[(BUFFER_SIZE, v)]).unwrap().buffer_size, want);
        }
        for v in ["0", "1", "1000", "abc", "-4", "3", "134217728", "4096.0"] {
            let err = cfg(&[(BUFFER_SIZE, v)]).unwrap_err().to_string();
            assert!(
                err.contains(BUFFER_SIZE) && err.contains(v.trim()) && err.contains("power of two"),
                "{err}"
            );
        }
    }

    #[test]
    fn run_intervals() {
        assert_eq!(cfg(&[]).unwrap().run_interval, Duration::from_millis(100));
        assert_eq!(
            cfg(&[(RUN_INTERVAL, "5")]).unwrap().run_interval,
            Duration::from_millis(5)
        );
        for v in ["0", "-5", "1.5", "fast"] {
            let err = cfg(&[(RUN_INTERVAL, v)]).unwrap_err().to_string();
            assert!(
                err.contains(RUN_INTERVAL) && err.contains(v) && err.contains("at least 1"),
                "{err}"
            );
        }
    }

    #[test]
    fn exporter_selection() {
        assert_eq!(cfg(&[]).unwrap().exporter, ExporterChoice::None);
        assert_eq!(
            cfg(&[(DIR, "/tmp/r")]).unwrap().exporter,
            ExporterChoice::Buffer {
                dir: "/tmp/r".into()
            }
        );
        assert_eq!(
            cfg(&[(DIR, "/tmp/r"), (EXPORTER_OUTPUT_PATH, "/tmp/o")])
                .unwrap()
                .exporter,
            ExporterChoice::Buffer {
                dir: "/tmp/o".into()
            }
        );
        assert_eq!(
            cfg(&[(EXPORTER, "buffer"), (EXPORTER_OUTPUT_PATH, "/tmp/o")])
                .unwrap()
                .exporter,
            ExporterChoice::Buffer {
                dir: "/tmp/o".into()
            }
        );
        assert_eq!(
            cfg(&[(EXPORTER, "buffer")]).unwrap_err(),
            ConfigError::MissingRingDirectory
        );
        assert_eq!(
            cfg(&[(EXPORTER, "nop"), (DIR, "/x")]).unwrap().exporter,
            ExporterChoice::Nop
        );
        // NIXL's own spellings of the built-ins.
        assert_eq!(
            cfg(&[(EXPORTER, "NOP"), (DIR, "/x")]).unwrap().exporter,
            ExporterChoice::Nop
        );
        assert_eq!(
            cfg(&[(EXPORTER, "BUFFER"), (DIR, "/x")]).unwrap().exporter,
            ExporterChoice::Buffer { dir: "/x".into() }
        );
        // Any other case is a plug-in name, as in NIXL.
        assert_eq!(
            cfg(&[(EXPORTER, "Nop")]).unwrap().exporter,
            ExporterChoice::Plugin { name: "Nop".into() }
        );
        assert_eq!(
            cfg(&[(EXPORTER, "prometheus")]).unwrap().exporter,
            ExporterChoice::Plugin {
                name: "prometheus".into()
            }
        );
        for bad in ["../evil", "a/b", ".hidden", "sp ace"] {
            let err = cfg(&[(EXPORTER, bad)]).unwrap_err().to_string();
            assert!(
                err.contains(EXPORTER) && err.contains("buffer, nop"),
                "{err}"
            );
        }
    }

    #[test]
    fn plugin_dirs_and_filter() {
        let c = cfg(&[
            (EXPORTER_PLUGIN_DIR, "/a::/b"),
            (NIXL_PLUGIN_DIR, "/n"),
            (ENABLED_METRICS, "agent_*,NIXL_ERR_*"),
        ])
        .unwrap();
        assert_eq!(
            c.plugin_dirs,
            vec![PathBuf::from("/a"), PathBuf::from("/b")]
        );
        assert_eq!(c.nixl_plugin_dir, Some(PathBuf::from("/n")));
        assert!(c.enabled_metrics.unwrap().allows("agent_tx_bytes"));
        assert!(cfg(&[(ENABLED_METRICS, "")])
            .unwrap()
            .enabled_metrics
            .is_none());
    }

    #[test]
    fn ring_versions() {
        use nixl_telemetry_abi::ring::{V1, V2_NAMED, V2_TYPED, V3, V4};
        assert_eq!(cfg(&[]).unwrap().ring_layout, &V1);
        for (v, want) in [
            ("1", &V1),
            ("2", &V2_NAMED),
            ("2-typed", &V2_TYPED),
            (" 3 ", &V3),
            ("4", &V4),
        ] {
            assert_eq!(cfg(&[(RING_VERSION, v)]).unwrap().ring_layout, want);
        }
        for bad in ["0", "5", "2-", "-1", "1.5", "four"] {
            let err = cfg(&[(RING_VERSION, bad)]).unwrap_err().to_string();
            assert!(err.contains("NIXL_TELEMETRY_RING_VERSION"), "{err}");
            assert!(err.contains("2-typed (NIXL 1.2)"), "{err}");
        }
    }

    #[test]
    fn agent_names() {
        assert!(check_agent_name("initiator-0").is_ok());
        for (bad, why) in [
            ("", "empty"),
            ("a/b", "'/'"),
            ("a\0b", "NUL"),
            (".", "directory"),
            ("..", "directory"),
            (".nixl-ring.1.2.3.tmp", "temporary file"),
            (".agent.tmp", "temporary file"),
        ] {
            let err = check_agent_name(bad).unwrap_err().to_string();
            assert!(err.contains(why) && err.contains("accepted"), "{err}");
        }
        assert!(check_agent_name(&"x".repeat(256)).is_err());
        for fine in [".hidden", "agent.tmp", ".tmp.agent"] {
            assert!(check_agent_name(fine).is_ok(), "{fine}");
        }
    }
}
