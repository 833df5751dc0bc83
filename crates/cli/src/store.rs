//! `nixl-telemetry store export|import`: move the service's metrics between stores,
//! as one JSON document in the format of TAO's migration scripts.

use std::fs;
use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use nixl_telemetry_service::{ImportMode, MetricsDocument, Store, StoreUrl};

/// Options of `nixl-telemetry store`.
#[derive(Debug, Args)]
pub struct StoreArgs {
    #[command(subcommand)]
    command: StoreCommand,
}

#[derive(Debug, Subcommand)]
enum StoreCommand {
    /// Write the store's metrics as one JSON document (sorted keys, with last_updated).
    Export {
        /// The store (as `serve --store`).
        #[arg(long, value_name = "URL", default_value_t = StoreUrl::default())]
        store: StoreUrl,
        /// Where to write the document (default: standard output).
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Read a metrics document (ours, or a TAO export) into the store.
    Import {
        /// The store (as `serve --store`).
        #[arg(long, value_name = "URL", default_value_t = StoreUrl::default())]
        store: StoreUrl,
        /// Where to read the document (default: standard input).
        #[arg(long, value_name = "FILE")]
        input: Option<PathBuf>,
        /// Keep the store's metrics; the document's values win where both have a key
        /// (the default).
        #[arg(long, conflicts_with = "replace")]
        merge: bool,
        /// Make the store hold exactly the document: metrics it lacks are removed.
        #[arg(long)]
        replace: bool,
        /// Say what would change, change nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// Runs the command.
pub fn run(args: StoreArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        StoreCommand::Export { store, output } => {
            // Opening a missing SQLite file would create it: an empty backup of a
            // mistyped path.
            if let StoreUrl::Sqlite { path, .. } = &store {
                if !path.exists() {
                    anyhow::bail!(
                        "no SQLite store at {}: check the path (export never creates a store; \
                         `serve` and `store import` do)",
                        path.display()
                    );
                }
            }
            let text = Store::open(&store)?.metrics()?.to_json_string();
            match output {
                Some(path) => fs::write(&path, text)
                    .with_context(|| format!("cannot write {}", path.display()))?,
                None => {
                    let mut out = io::stdout().lock();
                    out.write_all(text.as_bytes())
                        .and_then(|()| out.flush())
                        .context("cannot write to standard output")?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        StoreCommand::Import {
            store,
            input,
            merge: _,
            replace,
            dry_run,
        } => {
            let text = match &input {
                Some(path) => fs::read_to_string(path)
                    .with_context(|| format!("cannot read {}", path.display()))?,
                None => {
                    let mut text = String::new();
                    io::stdin()
                        .read_to_string(&mut text)
                        .context("cannot read the document from standard input")?;
                    text
                }
            };
            let document = MetricsDocument::parse(&text)?;
            let mode = if replace {
                ImportMode::Replace
            } else {
                ImportMode::Merge
            };
            let summary = Store::open(&store)?.import(&document, mode, dry_run)?;
            print!("{summary}");
            Ok(ExitCode::SUCCESS)
        }
    }
}
