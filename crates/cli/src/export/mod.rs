//! `nixl-telemetry export`: the sidecar. It follows every ring file of a
//! directory (every NIXL release's layout, and this project's rings), reads
//! and consumes them as NIXL's own reader does, and feeds each agent's events
//! to its own exporter of one plug-in, loaded as a host loads it: with
//! Prometheus, one endpoint for every agent on the node. See `docs/export.md`.
//!
//! * [`settings`]: the command line over the `NIXL_TELEMETRY_*` variables;
//! * [`convert`]: ring slots of every layout as plug-in events;
//! * [`ring`]: one followed ring file;
//! * [`agent`]: one agent's exporter, rings and liveness;
//! * [`own_series`]: the sidecar's own series, sent as events;
//! * [`schedule`]: adaptive draining;
//! * [`watch`]: inotify, or polling;
//! * [`sidecar`]: the loop.

pub mod agent;
pub mod convert;
pub mod own_series;
pub mod ring;
pub mod schedule;
pub mod settings;
pub mod sidecar;
pub mod watch;

use std::process::ExitCode;

pub use settings::ExportArgs;

use crate::read::Log;
use crate::signal::StopFlag;
use settings::Settings;
use sidecar::Sidecar;
use watch::DirectoryWatch;

/// The program name in messages.
pub const PROGRAM: &str = "nixl-telemetry export";

/// Runs the sidecar until SIGINT or SIGTERM; then drains, flushes, exits 0.
pub fn run(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let mut settings = Settings::resolve(&args, |name| std::env::var(name).ok())?;
    let lowered = settings.fit_descriptor_limit();
    // The exporter's own variables given with --set: into the environment
    // before any thread starts and before the plug-in reads them.
    for (name, value) in &settings.set {
        std::env::set_var(name, value);
    }
    install_log_subscriber();
    let log = Log::new(PROGRAM, settings.quiet);
    if let Some(warning) = lowered {
        log.warn(format_args!("{warning}"));
    }
    let stop = StopFlag::install().map_err(anyhow::Error::msg)?;
    let dir = settings.dir.clone();
    let mut sidecar = Sidecar::new(settings.clone(), Log::new(PROGRAM, settings.quiet))?;
    let (mut watch, unwatched) = if settings.poll {
        (DirectoryWatch::polling(), Some("--poll".to_owned()))
    } else {
        DirectoryWatch::new(&dir)
    };
    log.info(format_args!(
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
    ));
    sidecar.run(&mut watch, || stop.is_set());
    let totals = sidecar.totals();
    log.info(format_args!(
        "{PROGRAM}: stopped; {} events of {} agents exported",
        totals.events, totals.agents
    ));
    Ok(ExitCode::SUCCESS)
}

/// Shows the warnings the exporter loader and host log (a plug-in that
/// fails, its reasons) on stderr.
fn install_log_subscriber() {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing::Level::WARN)
        .with_target(false)
        .without_time()
        .try_init();
}
