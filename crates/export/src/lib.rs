//! `nixl-telemetry export`: the sidecar. It follows every ring file of a
//! directory (every NIXL release's layout, and this project's rings), reads
//! and consumes them as NIXL's own reader does, and feeds each agent's events
//! to its own exporter of one plug-in, loaded as a host loads it: with
//! Prometheus, one endpoint for every agent on the node. See `docs/export.md`.
//! Ring slots become plug-in events through the library's
//! [`SlotConverter`](nixl_telemetry::ring::SlotConverter).
//!
//! The `nixl-telemetry` command parses the arguments ([`ExportArgs`]), calls
//! [`prepare`], sets up its log and signal handling, and calls [`run`].
//!
//! * [`settings`]: the command line over the `NIXL_TELEMETRY_*` variables;
//! * [`ring`]: one followed ring file;
//! * [`agent`]: one agent's exporter, rings and liveness;
//! * [`own_series`]: the sidecar's own series, sent as events;
//! * [`schedule`]: adaptive draining;
//! * [`watch`]: inotify, or polling;
//! * [`sidecar`]: the loop.

pub mod agent;
pub mod own_series;
pub mod ring;
pub mod schedule;
pub mod settings;
pub mod sidecar;
pub mod watch;

use std::process::ExitCode;

pub use settings::{ExportArgs, Settings};

use sidecar::Sidecar;
use watch::DirectoryWatch;

/// The program name in messages.
pub const PROGRAM: &str = "nixl-telemetry export";

/// The sidecar's settings, from its command line over the environment; the
/// exporter's own variables given with `--set` are put into the
/// environment, where the plug-in reads them. Call it before any thread
/// starts (before a signal handler or a log writer), as the environment is
/// process-wide.
pub fn prepare(args: &ExportArgs) -> anyhow::Result<Settings> {
    let settings = Settings::resolve(args, |name| std::env::var(name).ok())?;
    for (name, value) in &settings.set {
        std::env::set_var(name, value);
    }
    Ok(settings)
}

/// Runs the sidecar until `stop` returns true (the caller's SIGINT or
/// SIGTERM); then drains, flushes and returns success. Informational lines
/// and warnings go to `tracing` (the caller's subscriber shows them).
pub fn run(settings: Settings, stop: impl Fn() -> bool) -> anyhow::Result<ExitCode> {
    let dir = settings.dir.clone();
    let mut sidecar = Sidecar::new(settings.clone())?;
    let (mut watch, unwatched) = if settings.poll {
        (DirectoryWatch::polling(), Some("--poll".to_owned()))
    } else {
        DirectoryWatch::new(&dir)
    };
    tracing::info!(
        "{PROGRAM}: following {} ({}), exporter {}, agent {} for the sidecar's own series",
        dir.display(),
        match &unwatched {
            None => "watched with inotify".to_owned(),
            Some(why) => format!(
                "polled every {} ms: cannot watch it ({why})",
                settings.interval.as_millis()
            ),
        },
        settings.exporter_name,
        settings.self_name
    );
    sidecar.run(&mut watch, stop);
    let totals = sidecar.totals();
    tracing::info!(
        "{PROGRAM}: stopped; {} events of {} agents exported",
        totals.events,
        totals.agents
    );
    Ok(ExitCode::SUCCESS)
}
