//! `nixl-telemetry-adapters`: makes nixl-telemetry's exporters visible to a
//! NIXL installation (docs/nixl-adapters.md).
//!
//! ```text
//! nixl-telemetry-adapters detect  [--python PY | --nixl-lib DIR] [--generation G]
//! nixl-telemetry-adapters link    [--python PY | --nixl-lib DIR] [--generation G] [--adapters DIR]
//! nixl-telemetry-adapters unlink  [--python PY | --nixl-lib DIR]
//! nixl-telemetry-adapters overlay [--python PY | --nixl-lib DIR] [--generation G] [--adapters DIR] [--dir DIR]
//! nixl-telemetry-adapters stage DIR EXPORTER...     (scripts/install.sh)
//! ```

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};

use nixl_telemetry_nixl_adapters::nixl_install::Installation;
use nixl_telemetry_nixl_adapters::placement::{self, adapter_files};
use nixl_telemetry_nixl_adapters::{build_dir, generations, Generation};

/// Makes nixl-telemetry's exporters (OTLP, CSV, Prometheus as
/// nixl_telemetry_prometheus, ...) loadable by a NIXL installation, through
/// the adapter of that installation's plug-in interface.
#[derive(Parser)]
#[command(
    name = "nixl-telemetry-adapters",
    version = env!("NIXL_TELEMETRY_VERSION_LINE")
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Shows the NIXL installation, its release and the generation of its
    /// exporter interface, and which exporters an adapter gives it.
    Detect(Target),
    /// Links the adapters of the installation's generation into NIXL's own
    /// plug-in directory: a job then sets only NIXL_TELEMETRY_EXPORTER=NAME.
    Link(Placing),
    /// Removes the links `link` made.
    Unlink(Target),
    /// Makes a directory for NIXL_PLUGIN_DIR beside NIXL's plug-in directory,
    /// with NIXL's plug-ins and the adapters: only jobs that set it see ours.
    Overlay {
        #[command(flatten)]
        placing: Placing,
        /// The directory (default: `plugins-nixl-telemetry` beside NIXL's `plugins`).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Copies the adapters this build made under every exporter's name into
    /// DIR/GENERATION/ (what scripts/install.sh runs).
    Stage {
        /// The adapters' directory, e.g. PREFIX/lib/nixl/nixl_adapters.
        dir: PathBuf,
        /// Our plug-ins to give NIXL (csv, otlp, prometheus, ...).
        #[arg(required = true)]
        exporters: Vec<String>,
    },
}

#[derive(Args)]
struct Target {
    /// The Python whose NIXL package (nixl-cu12) to use [default: the Python
    /// beside this program, as in the virtual environment the wheel installed it
    /// into, else python3].
    #[arg(long, conflicts_with = "nixl_lib")]
    python: Option<PathBuf>,
    /// NIXL's library directory (holding libnixl.so and plugins/), for a
    /// NIXL not installed with pip.
    #[arg(long)]
    nixl_lib: Option<PathBuf>,
    /// The generation, when the files cannot say (named events without a
    /// release number: nixl-0.9-1.0 or nixl-1.1).
    #[arg(long)]
    generation: Option<String>,
}

#[derive(Args)]
struct Placing {
    #[command(flatten)]
    target: Target,
    /// Where the adapters are [default: ../lib/nixl/nixl_adapters from this program's directory].
    #[arg(long)]
    adapters: Option<PathBuf>,
}

impl Target {
    fn installation(&self) -> Result<Installation> {
        Ok(match &self.nixl_lib {
            Some(dir) => Installation::from_lib_dir(dir)?,
            None => match &self.python {
                Some(python) => Installation::from_python(python)?,
                None => Installation::from_python(&own_environment_python())?,
            },
        })
    }

    fn generation(&self, installation: &Installation) -> Result<&'static Generation> {
        if let Some(id) = &self.generation {
            if generations::generation(id).is_none() {
                bail!(
                    "--generation {id}: no such generation; accepted: {}",
                    generations::GENERATIONS.map(|g| g.id).join(", ")
                );
            }
        }
        Ok(installation.generation(self.generation.as_deref())?)
    }
}

impl Placing {
    fn adapters_root(&self) -> Result<PathBuf> {
        if let Some(dir) = &self.adapters {
            return Ok(dir.clone());
        }
        let exe = std::env::current_exe().context("cannot find this program's own path")?;
        let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
        let root = exe
            .parent()
            .and_then(Path::parent)
            .map(|prefix| prefix.join("lib/nixl/nixl_adapters"))
            .context("this program is not in <prefix>/bin")?;
        if !root.is_dir() {
            bail!(
                "{} does not exist: install the adapters with scripts/install.sh --prefix <prefix> \
                 and run <prefix>/bin/nixl-telemetry-adapters, or give --adapters DIR",
                root.display()
            );
        }
        Ok(root)
    }
}

/// The Python of the environment this program is installed in: `python3`
/// beside it (a virtual environment's or conda's `bin/`, where pip puts the
/// wheel's commands), else `python3` from PATH.
fn own_environment_python() -> PathBuf {
    std::env::current_exe()
        .ok()
        .map(|exe| std::fs::canonicalize(&exe).unwrap_or(exe))
        .and_then(|exe| Some(exe.parent()?.join("python3")))
        .filter(|python| python.is_file())
        .unwrap_or_else(|| PathBuf::from("python3"))
}

fn describe(installation: &Installation, generation: &Generation) -> String {
    let release = installation
        .package
        .as_ref()
        .map(|(package, version)| format!("{package} {version}"))
        .unwrap_or_else(|| "release unknown (not a pip package)".to_owned());
    format!(
        "NIXL in {} ({release}): exporter interface {} (API version {}, {}-byte events, {} exporter functions)",
        installation.lib_dir.display(),
        generation.id,
        generation.api_version,
        generation.events.size(),
        generation.exporter_functions
    )
}

fn exporter_names(files: &[PathBuf]) -> String {
    files
        .iter()
        .filter_map(|f| f.file_name()?.to_str())
        .filter_map(|n| {
            n.strip_prefix("libtelemetry_exporter_")?
                .strip_suffix(".so")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Detect(target) => {
            let installation = target.installation()?;
            let generation = target.generation(&installation)?;
            println!("{}", describe(&installation, generation));
            println!("plug-in directory: {}", installation.plugin_dir.display());
            println!("adapter: {}", generation.id);
        }
        Command::Link(placing) => {
            let installation = placing.target.installation()?;
            let generation = placing.target.generation(&installation)?;
            let files = adapter_files(&placing.adapters_root()?, generation)?;
            let linked = placement::link(&installation.plugin_dir, &files)?;
            println!("{}", describe(&installation, generation));
            for place in &linked {
                println!("linked {}", place.display());
            }
            println!(
                "NIXL_TELEMETRY_EXPORTER=<name> now selects ours, for <name> in: {}",
                exporter_names(&files)
            );
        }
        Command::Unlink(target) => {
            let installation = target.installation()?;
            for place in placement::unlink(&installation.plugin_dir)? {
                println!("removed {}", place.display());
            }
        }
        Command::Overlay { placing, dir } => {
            let installation = placing.target.installation()?;
            let generation = placing.target.generation(&installation)?;
            let files = adapter_files(&placing.adapters_root()?, generation)?;
            let dir = dir.unwrap_or_else(|| installation.lib_dir.join("plugins-nixl-telemetry"));
            placement::overlay(&dir, &installation.plugin_dir, &files)?;
            println!("{}", describe(&installation, generation));
            println!("export NIXL_PLUGIN_DIR={}", dir.display());
            println!(
                "then NIXL_TELEMETRY_EXPORTER=<name> selects ours, for <name> in: {}",
                exporter_names(&files)
            );
        }
        Command::Stage { dir, exporters } => {
            for name in &exporters {
                if name.is_empty()
                    || !name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                {
                    bail!("exporter name {name:?}: accepted are letters, digits, '_' and '-'");
                }
            }
            for file in placement::stage(&build_dir(), &dir, &exporters)? {
                println!("{}", file.display());
            }
        }
    }
    Ok(())
}

fn main() {
    if let Err(e) = run(Cli::parse()) {
        eprintln!("nixl-telemetry-adapters: {e:#}");
        std::process::exit(1);
    }
}
