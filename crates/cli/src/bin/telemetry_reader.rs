//! `telemetry_reader`: the Rust telemetry reader under NIXL's command name.
//!
//! `telemetry_reader <path>` or `telemetry_reader --telemetry_path <path>`;
//! the same options and output as `nixl-telemetry read` (see `docs/readers.md`).

#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;

use nixl_telemetry_views::read;

/// Read NIXL telemetry ring files (versions 1 to 4). Events go to stdout, everything else to stderr.
#[derive(Debug, Parser)]
#[command(
    name = "telemetry_reader",
    version = env!("NIXL_TELEMETRY_VERSION_LINE"),
    after_help = "Exit codes: 0 done (or stopped by SIGINT/SIGTERM), 1 stdout closed, \
                  2 usage error or a missing, broken or truncated file, 3 internal error."
)]
struct Cli {
    #[command(flatten)]
    args: read::ReadArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    read::run(&cli.args, "telemetry_reader")
}
