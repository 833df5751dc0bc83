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
use nixl_telemetry::exporter::plugin::DeliveryReport;
use settings::Settings;
use sidecar::{Sidecar, Totals};
use watch::DirectoryWatch;

/// The program name in messages.
pub const PROGRAM: &str = "nixl-telemetry export";

/// Runs the sidecar until SIGINT or SIGTERM; then drains, flushes, exits 0.
pub fn run(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let settings = Settings::resolve(&args, |name| std::env::var(name).ok())?;
    // The exporter's own variables given with --set: into the environment
    // before any thread starts and before the plug-in reads them.
    for (name, value) in &settings.set {
        std::env::set_var(name, value);
    }
    install_log_subscriber();
    let log = Log::new(PROGRAM, settings.quiet);
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
    // Every exporter is dropped now: the plug-in was unloaded and said what
    // became of the events it accepted.
    let reports = nixl_telemetry::exporter::plugin::delivery_reports();
    let (line, complete) = exit_line(&sidecar.totals(), &settings.exporter_name, &reports);
    if complete {
        log.info(format_args!("{line}"));
    } else {
        log.warn(format_args!("{line}"));
    }
    Ok(ExitCode::SUCCESS)
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
