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
    bound_the_stop(&settings, &sidecar, &stop);
    sidecar.run(&mut watch, || stop.is_set());
    let totals = sidecar.totals();
    log.info(format_args!(
        "{PROGRAM}: stopped; {} events of {} agents exported",
        totals.events, totals.agents
    ));
    Ok(ExitCode::SUCCESS)
}

/// Bounds a stop: a watchdog ends the process once the stop has taken
/// `NIXL_TELEMETRY_SHUTDOWN_TIMEOUT_MS`, and a second signal ends it at
/// once; either says on stderr what was abandoned (an exporter's flush that
/// waits on a collector that never answers) and exits 1.
fn bound_the_stop(settings: &Settings, sidecar: &Sidecar, stop: &StopFlag) {
    fn abandon(stopping: &std::sync::Mutex<String>, after: &str) -> ! {
        let what = stopping.lock().unwrap_or_else(|e| e.into_inner()).clone();
        Log::new(PROGRAM, false).warn(format_args!(
            "stopping at once after {after}; abandoned: {what} (what they had not delivered \
             is lost)"
        ));
        std::process::exit(1)
    }
    let stopping = sidecar.stopping();
    let on_signal = std::sync::Arc::clone(&stopping);
    StopFlag::on_second_signal(move || abandon(&on_signal, "a second signal"));
    let (stop, timeout) = (stop.clone(), settings.shutdown_timeout);
    let watchdog = std::thread::Builder::new()
        .name("export-stop-bound".to_owned())
        .spawn(move || {
            while !stop.sleep(std::time::Duration::from_secs(3600)) {}
            std::thread::sleep(timeout);
            abandon(
                &stopping,
                &format!(
                    "{} ms of stopping ({})",
                    timeout.as_millis(),
                    nixl_telemetry_abi::env::SHUTDOWN_TIMEOUT_MS
                ),
            );
        });
    if let Err(e) = watchdog {
        Log::new(PROGRAM, false).warn(format_args!(
            "cannot start the thread that bounds a stop ({e}); a stop waits for every exporter"
        ));
    }
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
