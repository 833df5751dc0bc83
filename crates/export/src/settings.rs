//! The sidecar's command line and settings: the exporter chosen exactly as a
//! host chooses it (`NIXL_TELEMETRY_EXPORTER`,
//! `NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR`, `NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH`,
//! the exporter's own variables), each flag overriding its variable.

use nixl_telemetry_abi::env::{
    DIR, EXPORTER, EXPORTER_OUTPUT_PATH, EXPORTER_PLUGIN_DIR, RUN_INTERVAL,
};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use nixl_telemetry::config;
use nixl_telemetry::{ExporterChoice, TelemetryConfig};
use nixl_telemetry_abi::env::{DEFAULT_SHUTDOWN_TIMEOUT_MS, SHUTDOWN_TIMEOUT_MS};

/// The placeholder an output path may hold: each agent's name.
pub const AGENT_PLACEHOLDER: &str = "{agent}";
/// Descriptors kept free of rings: the endpoint and its connections, the
/// directory and its watch, the plug-in's own files, stdio.
pub const DESCRIPTOR_RESERVE: u64 = 64;
/// The default name of the sidecar's own agent.
pub const DEFAULT_SELF_NAME: &str = "nixl-telemetry-export";

/// `nixl-telemetry export`: follow every ring of a directory and feed an exporter plug-in.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The ring directory to follow [default: NIXL_TELEMETRY_DIR].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// The exporter plug-in (libtelemetry_exporter_NAME.so), or `nop`
    /// [default: NIXL_TELEMETRY_EXPORTER].
    #[arg(long, value_name = "NAME")]
    pub exporter: Option<String>,
    /// A directory searched for plug-ins before NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR (repeatable).
    #[arg(long = "plugin-dir", value_name = "DIR")]
    pub plugin_dirs: Vec<PathBuf>,
    /// The exporter's output path [default: NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH];
    /// `{agent}` in it is replaced by each agent's name (one CSV file per agent).
    #[arg(long, value_name = "PATH")]
    pub output_path: Option<String>,
    /// Sets a variable for the exporter over the environment, e.g.
    /// NIXL_TELEMETRY_PROMETHEUS_PORT=9464 (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// The longest wait between two reads of the rings, in milliseconds
    /// [default: NIXL_TELEMETRY_RUN_INTERVAL, else 100].
    #[arg(long, value_name = "MS")]
    pub interval: Option<String>,
    /// Seconds an agent's series are kept after its producer exited or its
    /// ring file was removed; then they are dropped.
    #[arg(long, value_name = "SECONDS", default_value = "60")]
    pub grace: String,
    /// The most ring files followed at once; more are refused with a warning.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub max_rings: usize,
    /// How long the final drain and flush at a stop may take, in
    /// milliseconds; then what is left is abandoned, said on stderr, and the
    /// sidecar exits 1. A second signal ends it at once
    /// [default: NIXL_TELEMETRY_SHUTDOWN_TIMEOUT_MS, else 3000].
    #[arg(long, value_name = "MS")]
    pub shutdown_timeout: Option<String>,
    /// The agent name the sidecar's own series are exported under.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_SELF_NAME)]
    pub self_name: String,
    /// List the directory every interval instead of watching it with inotify
    /// (for file systems without inotify).
    #[arg(long)]
    pub poll: bool,
    /// No informational lines on stderr (warnings stay).
    #[arg(short, long)]
    pub quiet: bool,
}

/// Everything the sidecar runs with.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The ring directory.
    pub dir: PathBuf,
    /// What the exporter loader needs (exporter, plug-in directories, output
    /// path, batch size).
    pub config: TelemetryConfig,
    /// The exporter's name, for messages.
    pub exporter_name: String,
    /// The longest wait between two passes.
    pub interval: Duration,
    /// How long the series of a gone agent are kept.
    pub grace: Duration,
    /// The most rings followed.
    pub max_rings: usize,
    /// The sidecar's own agent name.
    pub self_name: String,
    /// Poll the directory instead of watching it.
    pub poll: bool,
    /// Informational lines off.
    pub quiet: bool,
    /// Variables set with `--set`, to put into the environment before any
    /// exporter is created.
    pub set: Vec<(String, String)>,
    /// How long the final drain and flush at a stop may take
    /// (`NIXL_TELEMETRY_SHUTDOWN_TIMEOUT_MS`); then the rest is abandoned.
    pub shutdown_timeout: Duration,
}

impl Settings {
    /// Resolves `args` over the environment `lookup` reads.
    pub fn resolve(
        args: &ExportArgs,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> anyhow::Result<Settings> {
        let mut set = Vec::new();
        for pair in &args.set {
            let Some((name, value)) = pair.split_once('=') else {
                bail!("--set {pair:?} is invalid; accepted: NAME=VALUE, e.g. --set NIXL_TELEMETRY_PROMETHEUS_PORT=9464");
            };
            if name.is_empty() || name.contains('\0') || value.contains('\0') {
                bail!("--set {pair:?} is invalid; accepted: NAME=VALUE with a non-empty NAME and no NUL");
            }
            set.push((name.to_owned(), value.to_owned()));
        }
        // Flags over --set over the environment.
        let mut overlay: HashMap<String, String> = set.iter().cloned().collect();
        if let Some(dir) = &args.dir {
            overlay.insert(DIR.into(), dir.to_string_lossy().into_owned());
        }
        if let Some(exporter) = &args.exporter {
            overlay.insert(EXPORTER.into(), exporter.clone());
        }
        if let Some(out) = &args.output_path {
            overlay.insert(EXPORTER_OUTPUT_PATH.into(), out.clone());
        }
        // The sidecar's own bound only: a plug-in reads its variable.
        if let Some(ms) = &args.shutdown_timeout {
            overlay.insert(SHUTDOWN_TIMEOUT_MS.into(), ms.clone());
        }
        if let Some(ms) = &args.interval {
            overlay.insert(RUN_INTERVAL.into(), ms.clone());
        }
        if !args.plugin_dirs.is_empty() {
            let mut dirs: Vec<String> = args
                .plugin_dirs
                .iter()
                .map(|d| d.to_string_lossy().into_owned())
                .collect();
            if let Some(env_dirs) = overlay
                .get(EXPORTER_PLUGIN_DIR)
                .cloned()
                .or_else(|| lookup(EXPORTER_PLUGIN_DIR))
            {
                dirs.push(env_dirs);
            }
            overlay.insert(EXPORTER_PLUGIN_DIR.into(), dirs.join(":"));
        }
        let read = |name: &str| overlay.get(name).cloned().or_else(|| lookup(name));

        let dir = match read(DIR).filter(|d| !d.trim().is_empty()) {
            Some(dir) => PathBuf::from(dir),
            None => bail!(
                "no ring directory: give --dir DIR or set {DIR}; accepted: the directory NIXL's \
                 agents write their rings to (their {DIR})"
            ),
        };
        let mut config = TelemetryConfig::from_lookup(read).context("invalid setting")?;
        let exporter_name = match &config.exporter {
            ExporterChoice::Plugin { name } => name.clone(),
            ExporterChoice::Nop => "nop".to_owned(),
            // Asked for by name (not the default a ring directory brings).
            ExporterChoice::Buffer { .. } if read(EXPORTER).is_some() => bail!(
                "exporter buffer (--exporter or {EXPORTER}) cannot be used by the sidecar: \
                 it writes the ring files the sidecar reads; accepted: an exporter plug-in name \
                 (prometheus, otlp, csv, ... for libtelemetry_exporter_<name>.so) or nop"
            ),
            ExporterChoice::Buffer { .. } | ExporterChoice::None => bail!(
                "no exporter: give --exporter NAME or set {EXPORTER}; accepted: an exporter \
                 plug-in name (prometheus, otlp, csv, ... for libtelemetry_exporter_<name>.so) or nop"
            ),
        };
        config.enabled = true;
        let interval = config.run_interval;
        let grace: f64 = args
            .grace
            .trim()
            .parse()
            .ok()
            .filter(|g: &f64| g.is_finite() && *g >= 0.0 && *g <= 1e9)
            .with_context(|| {
                format!(
                    "--grace {:?} is invalid; accepted: a number of seconds, 0 or more (fractions allowed)",
                    args.grace
                )
            })?;
        if args.max_rings == 0 {
            bail!("--max-rings 0 is invalid; accepted: 1 or more");
        }
        let shutdown_timeout = match read(SHUTDOWN_TIMEOUT_MS) {
            None => Duration::from_millis(DEFAULT_SHUTDOWN_TIMEOUT_MS),
            Some(ms) => ms
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|ms| (1..=86_400_000).contains(ms))
                .map(Duration::from_millis)
                .with_context(|| {
                    format!(
                        "{SHUTDOWN_TIMEOUT_MS}={ms:?} is invalid; accepted: a whole number of \
                         milliseconds from 1 to 86400000"
                    )
                })?,
        };
        config::check_agent_name(&args.self_name)
            .with_context(|| format!("--self-name {:?} is invalid", args.self_name))?;
        Ok(Settings {
            dir,
            config,
            exporter_name,
            interval,
            grace: Duration::from_secs_f64(grace),
            max_rings: args.max_rings,
            self_name: args.self_name.clone(),
            poll: args.poll,
            quiet: args.quiet,
            set,
            shutdown_timeout,
        })
    }

    /// Raises the soft descriptor limit (RLIMIT_NOFILE) to the hard one and
    /// lowers `max_rings` to what the limit allows with
    /// [`DESCRIPTOR_RESERVE`] kept for the endpoint, the directory and the
    /// plug-in: each followed ring holds a descriptor, and one more when
    /// each agent has a file of its own (`{agent}` in the output path).
    /// Returns a warning naming the limit when `max_rings` was lowered.
    pub fn fit_descriptor_limit(&mut self) -> Option<String> {
        use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
        let limit = getrlimit(Resource::Nofile);
        if limit.current < limit.maximum {
            let raised = Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            };
            // Refused (a hard limit beyond the kernel's nr_open): the soft
            // limit stays and the rings are bounded by it.
            let _ = setrlimit(Resource::Nofile, raised);
        }
        let soft = getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX);
        let per_ring = if self.output_path_per_agent() { 2 } else { 1 };
        let fit = usize::try_from(soft.saturating_sub(DESCRIPTOR_RESERVE) / per_ring)
            .unwrap_or(usize::MAX)
            .max(1);
        (self.max_rings > fit).then(|| {
            let asked = std::mem::replace(&mut self.max_rings, fit);
            format!(
                "--max-rings {asked} lowered to {fit}: the descriptor limit (RLIMIT_NOFILE) is \
                 {soft}, {DESCRIPTOR_RESERVE} are kept for the endpoint, the directory and the \
                 exporter, and each ring takes {per_ring}; raise the limit (LimitNOFILE= in a \
                 systemd unit, ulimit -n) to follow more"
            )
        })
    }

    fn output_path_per_agent(&self) -> bool {
        self.config
            .output_path
            .as_deref()
            .is_some_and(|out| out.contains(AGENT_PLACEHOLDER))
    }

    /// The loader's configuration for `agent`: `{agent}` in the output path
    /// replaced by its name.
    pub fn config_for(&self, agent: &str) -> TelemetryConfig {
        let mut config = self.config.clone();
        if let Some(out) = &mut config.output_path {
            if out.contains(AGENT_PLACEHOLDER) {
                *out = out.replace(AGENT_PLACEHOLDER, agent);
            }
        }
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ExportArgs,
    }

    fn resolve(argv: &[&str], env: &[(&str, &str)]) -> anyhow::Result<Settings> {
        let cli = Cli::try_parse_from(std::iter::once("export").chain(argv.iter().copied()))?;
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::resolve(&cli.args, |name| env.get(name).cloned())
    }

    #[test]
    fn the_environment_chooses_as_for_a_host_and_flags_override_it() {
        let env = [
            ("NIXL_TELEMETRY_DIR", "/rings"),
            ("NIXL_TELEMETRY_EXPORTER", "prometheus"),
            ("NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR", "/env/plugins"),
            ("NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH", "127.0.0.1:9464"),
            ("NIXL_TELEMETRY_RUN_INTERVAL", "50"),
        ];
        let s = resolve(&[], &env).unwrap();
        assert_eq!(s.dir, PathBuf::from("/rings"));
        assert_eq!(s.exporter_name, "prometheus");
        assert_eq!(s.config.plugin_dirs, [PathBuf::from("/env/plugins")]);
        assert_eq!(s.config.output_path.as_deref(), Some("127.0.0.1:9464"));
        assert_eq!(s.interval, Duration::from_millis(50));
        assert_eq!(s.grace, Duration::from_secs(60));

        let s = resolve(
            &[
                "--dir",
                "/other",
                "--exporter",
                "csv",
                "--plugin-dir",
                "/flag/plugins",
                "--output-path",
                "/log/{agent}.csv",
                "--interval",
                "20",
                "--grace",
                "1.5",
                "--set",
                "NIXL_TELEMETRY_CSV_FILE=/x.csv",
            ],
            &env,
        )
        .unwrap();
        assert_eq!(s.dir, PathBuf::from("/other"));
        assert_eq!(s.exporter_name, "csv");
        assert_eq!(
            s.config.plugin_dirs,
            [
                PathBuf::from("/flag/plugins"),
                PathBuf::from("/env/plugins")
            ]
        );
        assert_eq!(s.config_for("a").output_path.as_deref(), Some("/log/a.csv"));
        assert_eq!(s.interval, Duration::from_millis(20));
        assert_eq!(s.grace, Duration::from_millis(1500));
        assert_eq!(
            s.set,
            [("NIXL_TELEMETRY_CSV_FILE".to_owned(), "/x.csv".to_owned())]
        );
    }

    #[test]
    fn missing_or_invalid_settings_name_what_is_accepted() {
        let no_dir = resolve(&["--exporter", "nop"], &[])
            .unwrap_err()
            .to_string();
        assert!(
            no_dir.contains("--dir") && no_dir.contains("NIXL_TELEMETRY_DIR"),
            "{no_dir}"
        );
        let no_exporter = resolve(&["--dir", "/r"], &[]).unwrap_err().to_string();
        assert!(
            no_exporter.contains("NIXL_TELEMETRY_EXPORTER"),
            "{no_exporter}"
        );
        for buffer in [
            resolve(&["--dir", "/r", "--exporter", "buffer"], &[]).unwrap_err(),
            resolve(&["--dir", "/r"], &[("NIXL_TELEMETRY_EXPORTER", "BUFFER")]).unwrap_err(),
        ] {
            let text = buffer.to_string();
            assert!(
                text.contains("exporter buffer") && text.contains("writes the ring files"),
                "{text}"
            );
            assert!(!text.contains("no exporter"), "{text}");
        }
        let bad_name = resolve(&["--dir", "/r", "--exporter", "../x"], &[]).unwrap_err();
        assert!(
            format!("{bad_name:#}").contains("NIXL_TELEMETRY_EXPORTER"),
            "{bad_name:#}"
        );
        let interval = resolve(
            &["--dir", "/r", "--exporter", "nop", "--interval", "0"],
            &[],
        );
        assert!(format!("{:#}", interval.unwrap_err()).contains("NIXL_TELEMETRY_RUN_INTERVAL"));
        let grace = resolve(&["--dir", "/r", "--exporter", "nop", "--grace=-1"], &[]);
        assert!(grace.unwrap_err().to_string().contains("--grace"));
        let shutdown = resolve(
            &["--dir", "/r", "--exporter", "nop"],
            &[("NIXL_TELEMETRY_SHUTDOWN_TIMEOUT_MS", "0")],
        );
        assert!(format!("{:#}", shutdown.unwrap_err()).contains("milliseconds from 1"));
        let s = resolve(&["--dir", "/r", "--exporter", "nop"], &[]).unwrap();
        assert_eq!(s.shutdown_timeout, Duration::from_secs(3));
        let set = resolve(&["--dir", "/r", "--exporter", "nop", "--set", "X"], &[]);
        assert!(set.unwrap_err().to_string().contains("NAME=VALUE"));
        let name = resolve(
            &["--dir", "/r", "--exporter", "nop", "--self-name", "a/b"],
            &[],
        );
        assert!(format!("{:#}", name.unwrap_err()).contains("--self-name"));
    }
}
