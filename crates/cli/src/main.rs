//! `nixl-telemetry`: the project's command-line front door.
//!
//! Each subcommand lives in its own module; this file only dispatches.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use nixl_telemetry_cli::{emit, process};
use nixl_telemetry_export as export;
use nixl_telemetry_views::signal::StopFlag;
use nixl_telemetry_views::{read, report, top};

mod demo;
mod error_line;
mod logging;
mod serve;
mod store;

/// NIXL telemetry: record, export, read and process telemetry events.
#[derive(Debug, Parser)]
#[command(name = "nixl-telemetry", version = env!("NIXL_TELEMETRY_VERSION_LINE"), about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Record events from JSON lines into telemetry built from the environment.
    Emit(emit::EmitArgs),
    /// Print the events of a ring file or of a directory of rings (as telemetry_reader).
    Read(read::ReadArgs),
    /// Two agents moving real bytes between registered memory, with a live telemetry table.
    Demo(demo::DemoArgs),
    /// Turn usage records (JSON lines) into metrics, as sorted JSON or Prometheus text.
    Process(process::ProcessArgs),
    /// The sidecar: follow every ring of a directory and feed an exporter plug-in.
    Export(export::ExportArgs),
    /// A live view of every agent: rates, transfer times, errors, losses (full screen or --plain).
    Top(top::TopArgs),
    /// Charts of a run (rings or a `telemetry_reader --json` capture) as one HTML page, and PNGs.
    Report(report::ReportArgs),
    /// Serve the metric processor over HTTP, with the metrics in SQLite or PostgreSQL.
    Serve(serve::ServeArgs),
    /// Export or import the service's metrics (TAO's migration document format).
    Store(store::StoreArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result: anyhow::Result<ExitCode> = match cli.command {
        Command::Emit(args) => emit::run(args),
        Command::Read(args) => Ok(read::run(&args, "nixl-telemetry read")),
        Command::Demo(args) => demo::run(args),
        Command::Process(args) => process::run(args),
        Command::Export(args) => run_export(&args),
        Command::Top(args) => top::run(args),
        Command::Report(args) => report::run(args),
        Command::Serve(args) => {
            logging::init("info");
            serve::run(args)
        }
        Command::Store(args) => store::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("nixl-telemetry: error: {}", error_line::error_line(&err));
            ExitCode::from(2)
        }
    }
}

/// `export`: the settings (and the exporter's variables) before any thread
/// starts, then the log, the signal handler, and the sidecar.
fn run_export(args: &export::ExportArgs) -> anyhow::Result<ExitCode> {
    let settings = export::prepare(args)?;
    logging::init(if settings.quiet {
        "warn"
    } else {
        "warn,nixl_telemetry_export=info"
    });
    let stop = StopFlag::install().map_err(anyhow::Error::msg)?;
    export::run(settings, SignalStop(stop))
}

/// SIGINT and SIGTERM as the sidecar's stop request.
#[derive(Clone)]
struct SignalStop(StopFlag);

impl export::StopRequest for SignalStop {
    fn is_set(&self) -> bool {
        self.0.is_set()
    }

    fn on_second_signal(&self, action: Box<dyn Fn() + Send + Sync>) {
        StopFlag::on_second_signal(action);
    }
}
