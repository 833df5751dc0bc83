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

use nixl_telemetry::exporter::plugin::DeliveryReport;
use sidecar::{Sidecar, Totals};
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

/// How the caller's signal handling reaches the sidecar: `is_set` says
/// whether a stop was asked for (the first SIGINT or SIGTERM), and
/// `on_second_signal` is given what a second signal must do (end at once).
pub trait StopRequest: Clone + Send + 'static {
    /// Whether a stop was asked for.
    fn is_set(&self) -> bool;
    /// Registers what a second stop request does.
    fn on_second_signal(&self, action: Box<dyn Fn() + Send + Sync>);
}

/// Runs the sidecar until `stop` is set (the caller's SIGINT or SIGTERM);
/// then drains, flushes and returns success. The stop is bounded by the
/// settings' shutdown timeout, and a second signal ends it at once (exit 1,
/// naming what was abandoned). Informational lines and warnings go to
/// `tracing` (the caller's subscriber shows them).
pub fn run(mut settings: Settings, stop: impl StopRequest) -> anyhow::Result<ExitCode> {
    if let Some(warning) = settings.fit_descriptor_limit() {
        tracing::warn!("{PROGRAM}: {warning}");
    }
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
    let bound_stop = bound_the_stop(&settings, &sidecar, &stop);
    let stop_begun = std::sync::Once::new();
    sidecar.run(&mut watch, || {
        let set = stop.is_set();
        if set {
            stop_begun.call_once(&bound_stop);
        }
        set
    });
    let totals = sidecar.totals();
    drop(sidecar);
    // Every exporter is dropped now: the plug-in was unloaded and said what
    // became of the events it accepted.
    let reports = nixl_telemetry::exporter::plugin::delivery_reports();
    let (line, complete) = exit_line(&totals, &settings.exporter_name, &reports);
    if complete {
        tracing::info!("{line}");
    } else {
        tracing::warn!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Bounds a stop: a second signal ends the process at once, and the returned
/// function, called when the stop begins, starts a watchdog that ends it once
/// the stop has taken `NIXL_TELEMETRY_SHUTDOWN_TIMEOUT_MS`. Either says on
/// stderr what was abandoned (an exporter's flush that waits on a collector
/// that never answers) and exits 1. Nothing runs before the stop begins.
fn bound_the_stop(settings: &Settings, sidecar: &Sidecar, stop: &impl StopRequest) -> impl Fn() {
    fn abandon(stopping: &std::sync::Mutex<String>, after: &str) -> ! {
        let what = stopping.lock().unwrap_or_else(|e| e.into_inner()).clone();
        tracing::warn!(
            "{PROGRAM}: stopping at once after {after}; abandoned: {what} (what they had not \
             delivered is lost)"
        );
        std::process::exit(1)
    }
    let stopping = sidecar.stopping();
    let on_signal = std::sync::Arc::clone(&stopping);
    stop.on_second_signal(Box::new(move || abandon(&on_signal, "a second signal")));
    let timeout = settings.shutdown_timeout;
    move || {
        let stopping = std::sync::Arc::clone(&stopping);
        let watchdog = std::thread::Builder::new()
            .name("export-stop-bound".to_owned())
            .spawn(move || {
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
            tracing::warn!(
                "{PROGRAM}: cannot start the thread that bounds a stop ({e}); the stop waits for \
                 every exporter"
            );
        }
    }
}

/// The line the sidecar ends with: what it read, what the exporter refused,
/// and what the plug-in says it delivered and did not. `false` when some
/// events were refused or not delivered (the line is then a warning).
pub fn exit_line(totals: &Totals, exporter: &str, reports: &[DeliveryReport]) -> (String, bool) {
    let mut line = format!(
        "{PROGRAM}: stopped; {} events of {} agents read and handed to exporter {exporter}",
        totals.events, totals.agents
    );
    let mut complete = true;
    if totals.refused > 0 {
        line.push_str(&format!("; it refused {} of them (lost)", totals.refused));
        complete = false;
    }
    if reports.is_empty() {
        line.push_str("; it does not report delivery");
    }
    for report in reports {
        let d = report.delivery;
        let on_the_way = d
            .events_accepted
            .saturating_sub(d.events_delivered + d.events_undelivered);
        line.push_str(&format!(
            "; plug-in {}: {} events delivered, {} NOT delivered",
            report.plugin, d.events_delivered, d.events_undelivered
        ));
        if on_the_way > 0 {
            line.push_str(&format!(", {on_the_way} of unknown fate"));
        }
        line.push_str(&format!(
            " (of {} it accepted, the sidecar's own series included)",
            d.events_accepted
        ));
        if d.events_undelivered > 0 || on_the_way > 0 {
            complete = false;
        }
    }
    (line, complete)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nixl_telemetry_abi::rust_plugin::PluginDelivery;

    fn report(accepted: u64, delivered: u64, undelivered: u64) -> DeliveryReport {
        DeliveryReport {
            plugin: "otlp".to_owned(),
            path: "/p/libtelemetry_exporter_otlp.so".into(),
            delivery: PluginDelivery {
                events_accepted: accepted,
                events_delivered: delivered,
                events_undelivered: undelivered,
            },
        }
    }

    #[test]
    fn the_exit_line_counts_what_was_not_delivered() {
        let totals = Totals {
            events: 26,
            refused: 0,
            agents: 1,
        };
        let (line, complete) = exit_line(&totals, "otlp", &[report(32, 32, 0)]);
        assert!(complete);
        assert!(
            line.ends_with("plug-in otlp: 32 events delivered, 0 NOT delivered (of 32 it accepted, the sidecar's own series included)"),
            "{line}"
        );
        let (line, complete) = exit_line(&totals, "otlp", &[report(32, 0, 32)]);
        assert!(!complete);
        assert!(
            line.contains("0 events delivered, 32 NOT delivered"),
            "{line}"
        );
        let (line, complete) = exit_line(&totals, "otlp", &[report(32, 20, 2)]);
        assert!(!complete);
        assert!(line.contains("10 of unknown fate"), "{line}");
        let refused = Totals {
            refused: 4,
            ..totals
        };
        let (line, complete) = exit_line(&refused, "csv", &[]);
        assert!(!complete);
        assert!(
            line.contains("it refused 4 of them (lost); it does not report delivery"),
            "{line}"
        );
    }
}
