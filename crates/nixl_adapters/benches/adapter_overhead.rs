//! The adapter's cost per event against our exporter's own, in one run:
//!
//! ```text
//! cargo bench -p nixl-telemetry-nixl-adapters --bench adapter_overhead [-- --events N --rounds R]
//! ```
//!
//! For each of our exporters (CSV, OTLP, Prometheus, release builds) and both
//! delivery modes of the adapters (NIXL 1.5: batch hooks; NIXL 1.3/1.4: the
//! adapter's ring), the driver `cpp/bench/adapter_bench.cpp` alternates rounds
//! of events handed to the exporter directly (our C ABI's `export_batch` of up
//! to 4096, then `flush`, as our host does), rounds of the same events through
//! the adapter's `exportEvent` as NIXL calls it, and rounds of the floor: NIXL's
//! virtual call into an exporter that only writes our 56-byte event into a
//! buffer, what any adapter must do. The table gives medians of process CPU
//! time (every thread) per event; the target is adapted/direct <= 1.2, and
//! (direct + floor)/direct is the best any adapter could reach.

use std::path::{Path, PathBuf};
use std::process::Command;

use nixl_telemetry_nixl_adapters::{build_dir, placement};

const EXPORTERS: [(&str, &str); 3] = [
    ("csv", "nixl-telemetry-exporter-csv"),
    ("otlp", "nixl-telemetry-exporter-otlp"),
    ("prometheus", "nixl-telemetry-exporter-prometheus"),
];
const TARGET_RATIO: f64 = 1.2;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Builds `package` in release, in a target directory of its own (the outer
/// `cargo bench` holds the workspace's lock), and returns its cdylib.
fn release_plugin(package: &str) -> PathBuf {
    let target = workspace().join("target/tmp/bench-plugins");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo)
        .current_dir(workspace())
        .args([
            "build",
            "--quiet",
            "--release",
            "-p",
            package,
            "--target-dir",
        ])
        .arg(&target)
        .status()
        .expect("cargo runs");
    assert!(status.success(), "cargo build --release -p {package}");
    let lib = package.replace("nixl-telemetry-exporter-", "telemetry_exporter_");
    target.join("release").join(format!("lib{lib}.so"))
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let events = arg("--events", 400_000);
    let rounds = arg("--rounds", 9);
    let work = tempfile::tempdir().expect("a temporary directory");
    let plugins = work.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let names: Vec<String> = EXPORTERS.iter().map(|(n, _)| (*n).to_owned()).collect();
    let adapters = work.path().join("adapters");
    placement::stage(&build_dir(), &adapters, &names).expect("stage the adapters");
    let bench_dir = PathBuf::from(env!("NIXL_ADAPTERS_BENCH_DIR"));

    println!(
        "{events} events per round, {rounds} rounds each way; medians of CPU time (every \
         thread of the process), ns per event"
    );
    println!(
        "| exporter | NIXL | direct | adapted | ratio | floor | best possible ratio | beyond the floor |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    let mut worst: f64 = 0.0;
    for (name, package) in EXPORTERS {
        let built = release_plugin(package);
        let plugin = plugins.join(placement::plugin_file_name(name));
        std::fs::copy(&built, &plugin).expect("copy the plug-in");
        for (functions, generation, nixl) in
            [(5, "nixl-1.5", "1.5"), (3, "nixl-1.3-1.4", "1.3/1.4")]
        {
            let adapter = adapters.join(generation).join(placement::plugin_file_name(
                &nixl_telemetry_nixl_adapters::generations::nixl_name(name),
            ));
            let mut command = Command::new(bench_dir.join(format!("adapter_bench_{functions}")));
            command
                .arg(&adapter)
                .arg(&plugin)
                .arg(events.to_string())
                .arg(rounds.to_string())
                .env("NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR", &plugins)
                .env("NIXL_LOG_LEVEL", "WARN")
                // The flush thread's ticks cost per interval, not per event: kept
                // out of the per-event figures (the ring is delivered by the
                // calling thread every half ring).
                .env("NIXL_TELEMETRY_RUN_INTERVAL", "1000")
                // No collector: the exporter's thread never exports within a round.
                .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
                .env("OTEL_METRIC_EXPORT_INTERVAL", "600000")
                .env("NIXL_TELEMETRY_PROMETHEUS_PORT", "0")
                .env("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "y");
            if name == "csv" {
                command.env(
                    "NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH",
                    work.path().join(format!("{name}-{functions}.csv")),
                );
            } else {
                command.env_remove("NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH");
            }
            let out = command.output().expect("the driver runs");
            assert!(
                out.status.success(),
                "adapter_bench {name} {generation}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let text = String::from_utf8_lossy(&out.stdout);
            let series = |path: &str, column: usize| -> Vec<f64> {
                text.lines()
                    .filter(|l| l.starts_with(path))
                    .filter_map(|l| l.split_whitespace().nth(column)?.parse().ok())
                    .collect()
            };
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                !stderr.contains("lost"),
                "adapter_bench {name} {generation} lost events:\n{stderr}"
            );
            let direct = median(series("direct ", 3));
            let adapted = median(series("adapted ", 3));
            let floor = median(series("floor ", 3));
            let ratio = adapted / direct;
            worst = worst.max(ratio);
            println!(
                "| {name} | {nixl} | {direct:.1} | {adapted:.1} | {ratio:.2} | {floor:.1} | {:.2} | {:.1} |",
                (direct + floor) / direct,
                adapted - direct - floor
            );
        }
        // Remove the files of the run as they go (CSV grows by rounds × events lines).
        for entry in std::fs::read_dir(work.path()).unwrap().flatten() {
            if entry.path().extension().is_some_and(|e| e == "csv") {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    println!(
        "worst ratio {worst:.2} (target <= {TARGET_RATIO}): {}",
        if worst <= TARGET_RATIO {
            "met"
        } else {
            "not met where the floor alone exceeds it"
        }
    );
}
