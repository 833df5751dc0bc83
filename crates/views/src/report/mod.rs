//! `nixl-telemetry report`: a picture of a run to attach to a bug report.
//!
//! Reads the events of a ring, a directory of rings (consumed, as NIXL's
//! reader does, unless `--peek`), or a JSON-lines capture made with
//! `telemetry_reader --json`, and writes one self-contained HTML page:
//! throughput per agent over time, the transfer-time distribution with p50,
//! p90 and p99 marked, errors over time, and a summary table. `--png DIR`
//! writes the same charts as PNG images.
//!
//! The data ([`model::ReportModel`]) is computed first and drawn after
//! ([`chart`] with plotters, [`html`] for the page), so the page and the
//! images show the same thing.

pub mod chart;
pub mod html;
pub mod input;
pub mod kind;
pub mod model;

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use nixl_telemetry::ring::ReadMode;

use crate::local_date::local_date_time;
use chart::Chart;
use input::Input;
use model::ReportModel;

/// Options of `nixl-telemetry report`.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportArgs {
    /// A ring file, a directory of ring files, or a JSON-lines capture made
    /// with `telemetry_reader --json` (`-`: a capture on standard input).
    #[arg(long, value_name = "RING|DIR|CAPTURE")]
    pub input: PathBuf,
    /// The HTML file to write (self-contained: opens without a network).
    #[arg(long, value_name = "FILE")]
    pub output: PathBuf,
    /// Also write the charts as PNG images into this directory (created if needed).
    #[arg(long, value_name = "DIR")]
    pub png: Option<PathBuf>,
    /// Read rings without consuming them (by default the events read are
    /// taken out of the rings, as NIXL's reader does).
    #[arg(long)]
    pub peek: bool,
}

/// A file written in place only when whole: a temporary file beside the
/// target, made before anything is read, so that a target that cannot be
/// written fails before the rings are consumed.
struct PendingFile {
    target: PathBuf,
    file: tempfile::NamedTempFile,
}

impl PendingFile {
    fn new(target: &Path, option: &str) -> anyhow::Result<PendingFile> {
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        // The target's extension too: plotters picks the image format by it.
        let suffix = target
            .extension()
            .map(|e| format!(".{}", e.to_string_lossy()))
            .unwrap_or_default();
        let file = tempfile::Builder::new()
            .prefix(".nixl-report.")
            .suffix(&suffix)
            // As any new file (less the umask), not the temporary file's 0600.
            .permissions(std::fs::Permissions::from_mode(0o666))
            .tempfile_in(dir)
            .with_context(|| {
                format!(
                    "{option} {}: cannot write in {} (nothing was read)",
                    target.display(),
                    dir.display()
                )
            })?;
        Ok(PendingFile {
            target: target.to_owned(),
            file,
        })
    }

    fn finish(mut self, bytes: &[u8]) -> anyhow::Result<()> {
        let target = self.target.display().to_string();
        self.file
            .write_all(bytes)
            .with_context(|| format!("writing {target}"))?;
        self.file
            .persist(&self.target)
            .with_context(|| format!("writing {target}"))?;
        Ok(())
    }
}

/// Runs `nixl-telemetry report`.
pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    // Everything that could fail to be written is checked before the rings
    // are consumed.
    let html_file = PendingFile::new(&args.output, "--output")?;
    let png_files = match &args.png {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("--png {}: cannot create the directory", dir.display()))?;
            Chart::ALL
                .iter()
                .map(|c| Ok((*c, PendingFile::new(&dir.join(c.file_name()), "--png")?)))
                .collect::<anyhow::Result<Vec<_>>>()?
        }
        None => Vec::new(),
    };
    let mode = if args.peek {
        ReadMode::Peek
    } else {
        ReadMode::Consume
    };
    let input = Input::read(&args.input, mode)?;
    for warning in &input.warnings {
        eprintln!("nixl-telemetry report: warning: {warning}");
    }
    let description = args.input.display().to_string();
    let model = ReportModel::build(&input, &description);
    let generated = local_date_time(nixl_telemetry::clock::system_now_us() / 1_000_000);
    let page = html::page(&model, &generated).map_err(anyhow::Error::msg)?;
    html_file.finish(page.as_bytes())?;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "Wrote {} ({} agents, {} events{})",
        args.output.display(),
        model.agents.len(),
        model.total.events,
        if input.from_capture {
            ", from a capture"
        } else if mode == ReadMode::Consume {
            ", consumed from the rings"
        } else {
            ", peeked at in the rings"
        }
    );
    for (chart, file) in png_files {
        let target = file.target.clone();
        // plotters writes the image to a path: draw into the temporary
        // file's, then move it into place.
        chart
            .png(&model, file.file.path())
            .map_err(anyhow::Error::msg)?;
        file.file
            .persist(&target)
            .with_context(|| format!("writing {}", target.display()))?;
        let _ = writeln!(
            out,
            "Wrote {} ({} x {} pixels)",
            target.display(),
            chart::WIDTH,
            chart::HEIGHT
        );
    }
    for note in &model.notes {
        let _ = writeln!(out, "Note: {note}");
    }
    Ok(ExitCode::SUCCESS)
}
