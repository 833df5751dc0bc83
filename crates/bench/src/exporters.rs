//! The flush path into each exporter: events per second a `Telemetry::flush`
//! moves from staging into the exporter, built-in and loaded plug-ins alike.
//!
//! Default sizes: `buffer_size` 4096 (the staging queue and the ring). Each
//! round one thread records 4095 events (untimed; the ring holds capacity − 1),
//! then one `flush()` is timed: drain, `export` (for a plug-in `export_batch`
//! through the C ABI), `report_drops`, the exporter's `flush`. The ring is
//! consumed between rounds (untimed) so it never fills. Every event must be
//! delivered.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use nixl_telemetry::ring::{ReadMode, RingReader};
use nixl_telemetry::{Category, ExporterChoice, Telemetry, TelemetryConfig};

use crate::ops::NAME;
use crate::pipeline::rate_row;
use crate::report::Row;

const BUFFER: usize = 4096;
const EVENTS_PER_ROUND: u64 = BUFFER as u64 - 1;

/// Where the plug-ins are looked for: `NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR`'s
/// entries, then the directory of this executable (`target/release`, where
/// `cargo build --release` puts `libtelemetry_exporter_*.so`).
pub fn plugin_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os(nixl_telemetry_abi::env::EXPORTER_PLUGIN_DIR)
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default();
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_owned))
    {
        dirs.push(dir);
    }
    dirs
}

/// Whether `libtelemetry_exporter_<name>.so` is in one of `dirs`.
pub fn plugin_available(dirs: &[PathBuf], name: &str) -> bool {
    dirs.iter()
        .any(|d| d.join(format!("libtelemetry_exporter_{name}.so")).is_file())
}

/// Compiles the no-op C plug-in of the plug-in tests
/// (`crates/telemetry/tests/c/noop.c`) into `dir` with the system C compiler.
pub fn build_noop_plugin(dir: &Path) -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let source = root.join("crates/telemetry/tests/c/noop.c");
    ensure!(source.is_file(), "{} is missing", source.display());
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let out = dir.join("libtelemetry_exporter_noop.so");
    let status = Command::new(&cc)
        .args(["-O2", "-shared", "-fPIC", "-I"])
        .arg(root.join("include"))
        .arg(&source)
        .arg("-o")
        .arg(&out)
        .status()
        .with_context(|| format!("run {cc}"))?;
    if !status.success() {
        bail!("{cc} failed to build {}", source.display());
    }
    Ok(())
}

/// A configuration for `exporter`, default sizes, a flush interval of an hour
/// (every flush measured is the benchmark's own).
pub fn config(
    exporter: ExporterChoice,
    dirs: &[PathBuf],
    output: Option<String>,
) -> TelemetryConfig {
    TelemetryConfig {
        buffer_size: BUFFER,
        run_interval: Duration::from_secs(3600),
        exporter,
        output_path: output,
        plugin_dirs: dirs.to_vec(),
        ..TelemetryConfig::default()
    }
}

fn flush_rate(
    agent: &str,
    config: TelemetryConfig,
    ring: Option<&Path>,
    rounds: usize,
) -> Result<Vec<f64>> {
    let telemetry =
        Telemetry::new(agent, config).with_context(|| format!("create the exporter of {agent}"))?;
    let mut reader = match ring {
        Some(dir) => Some(RingReader::open(&dir.join(agent), ReadMode::Consume)?),
        None => None,
    };
    let handle = telemetry.handle(Category::PERFORMANCE, NAME);
    let mut out = Vec::with_capacity(BUFFER);
    let mut rates = Vec::with_capacity(rounds);
    // Let the flush thread make its first pass now; it then sleeps for the
    // whole (hour-long) interval and every flush below is ours.
    std::thread::sleep(Duration::from_millis(100));
    telemetry.flush();
    for round in 0..=rounds {
        for i in 0..EVENTS_PER_ROUND {
            handle.record(black_box(i));
        }
        let before = telemetry.stats().delivered;
        let start = Instant::now();
        telemetry.flush();
        let elapsed = start.elapsed();
        let delivered = telemetry.stats().delivered - before;
        ensure!(
            delivered == EVENTS_PER_ROUND,
            "{agent}: {delivered} of {EVENTS_PER_ROUND} events delivered: {:?}",
            telemetry.stats()
        );
        if let Some(reader) = reader.as_mut() {
            while reader.read_batch(&mut out, BUFFER)? > 0 {
                out.clear();
            }
        }
        if round > 0 {
            rates.push(delivered as f64 / elapsed.as_secs_f64());
        }
    }
    let stats = telemetry.stats();
    ensure!(stats.dropped.total() == 0, "{agent}: drops {stats:?}");
    Ok(rates)
}

/// Measures the flush path into every exporter available.
pub fn run(rounds: usize, rows: &mut Vec<Row>, notes: &mut Vec<String>) -> Result<()> {
    let shape = "buffer_size 4096, 4095 events per timed flush";
    let dirs = plugin_dirs();
    let rates = flush_rate(
        "flush-nop",
        config(ExporterChoice::Nop, &dirs, None),
        None,
        rounds,
    )?;
    rows.push(rate_row(
        "flush_nop",
        "flush path → built-in nop",
        1,
        &rates,
        shape,
    ));

    let ring_dir = tempfile::tempdir()?;
    let rates = flush_rate(
        "flush-buffer",
        config(
            ExporterChoice::Buffer {
                dir: ring_dir.path().to_owned(),
            },
            &dirs,
            None,
        ),
        Some(ring_dir.path()),
        rounds,
    )?;
    rows.push(rate_row(
        "flush_buffer",
        "flush path → built-in ring (buffer)",
        1,
        &rates,
        "ring consumed between flushes (untimed)",
    ));

    let noop_dir = tempfile::tempdir()?;
    match build_noop_plugin(noop_dir.path()) {
        Ok(()) => {
            let mut with_noop = vec![noop_dir.path().to_owned()];
            with_noop.extend(dirs.iter().cloned());
            let choice = ExporterChoice::Plugin {
                name: "noop".into(),
            };
            let rates = flush_rate("flush-noop", config(choice, &with_noop, None), None, rounds)?;
            rows.push(rate_row(
                "flush_plugin_nop",
                "flush path → no-op C plug-in (export_batch)",
                1,
                &rates,
                "crates/telemetry/tests/c/noop.c",
            ));
        }
        Err(e) => notes.push(format!("no-op plug-in not measured: {e:#}")),
    }

    if plugin_available(&dirs, "csv") {
        let csv_dir = tempfile::tempdir()?;
        let file = csv_dir.path().join("events.csv");
        let choice = ExporterChoice::Plugin { name: "csv".into() };
        let output = Some(file.to_string_lossy().into_owned());
        let rates = flush_rate("flush-csv", config(choice, &dirs, output), None, rounds)?;
        rows.push(rate_row(
            "flush_plugin_csv",
            "flush path → CSV plug-in (file in /tmp)",
            1,
            &rates,
            "one line per event, written at each flush",
        ));
    } else {
        notes.push(
            "CSV plug-in not measured: libtelemetry_exporter_csv.so not found (cargo build --release -p nixl-telemetry-exporter-csv)".into(),
        );
    }

    if plugin_available(&dirs, "prometheus") {
        let choice = ExporterChoice::Plugin {
            name: "prometheus".into(),
        };
        let output = Some("127.0.0.1:0".to_owned());
        let rates = flush_rate(
            "flush-prometheus",
            config(choice, &dirs, output),
            None,
            rounds,
        )?;
        rows.push(rate_row(
            "flush_plugin_prometheus",
            "flush path → Prometheus plug-in (no scraper)",
            1,
            &rates,
            "listening on 127.0.0.1, any free port",
        ));
    } else {
        notes.push(
            "Prometheus plug-in not measured: libtelemetry_exporter_prometheus.so not found (cargo build --release -p nixl-telemetry-exporter-prometheus)".into(),
        );
    }
    Ok(())
}
