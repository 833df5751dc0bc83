//! The CPU `nixl-telemetry top` spends on rings nothing writes to.
//!
//! ```text
//! cargo build --release -p nixl-telemetry-bench --bin top_idle_bench
//! target/release/top_idle_bench [--rings 299] [--seconds 10] [--capacity 4096] > /dev/null
//! ```
//!
//! Creates `--rings` rings of `--capacity` slots (version 4, NIXL 1.5's
//! layout, this project's writer; 100 events each, then nothing), their
//! writers kept open (idle producers, not exited ones), and runs `top
//! --plain --interval 1` on the directory for `--seconds` refreshes in this
//! process. Reports on stderr (stdout is top's tables) the CPU time of the
//! process (`CLOCK_PROCESS_CPUTIME_ID`, every thread, user and system) over
//! top's run, per second and per ring per second.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use nixl_telemetry::ring::{layout, RingWriter};
use nixl_telemetry::{Category, Event};
use nixl_telemetry_bench::flag_values::flag_values;
use nixl_telemetry_views::top::{self, TopArgs};

fn process_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn main() -> anyhow::Result<()> {
    let mut rings = 299usize;
    let mut seconds = 10u64;
    let mut capacity = 4096usize;
    for (flag, value) in flag_values(std::env::args().skip(1))? {
        match flag.as_str() {
            "--rings" => rings = value.parse().context("--rings: a number of rings")?,
            "--seconds" => seconds = value.parse().context("--seconds: whole seconds")?,
            "--capacity" => capacity = value.parse().context("--capacity: slots")?,
            _ => bail!("unknown option {flag}; accepted: --rings N, --seconds S, --capacity SLOTS"),
        }
    }
    let dir = tempfile::tempdir()?;
    let events: Vec<Event> = (0..100)
        .map(|i| Event::new(i, Category::TRANSFER, "agent_tx_bytes", 4096))
        .collect();
    let mut writers = Vec::with_capacity(rings);
    for i in 0..rings {
        let mut w = RingWriter::create_with_layout(
            dir.path(),
            &format!("agent-{i:04}"),
            capacity,
            &layout::V4,
        )?;
        w.push_batch(&events);
        writers.push(w);
    }
    let args = TopArgs {
        paths: vec![PathBuf::from(dir.path())],
        consume: false,
        plain: true,
        interval: Duration::from_secs(1),
        iterations: Some(seconds),
    };
    let cpu0 = process_cpu();
    let wall0 = Instant::now();
    top::run(args)?;
    let cpu = (process_cpu() - cpu0).as_secs_f64();
    let wall = wall0.elapsed().as_secs_f64();
    eprintln!(
        "top --plain --interval 1 on {rings} idle rings of {capacity} slots (version 4), \
         {seconds} refreshes: {wall:.2} s wall, {cpu:.3} s CPU = {:.2} % of a core, \
         {:.1} µs CPU per idle ring per second",
        cpu / wall * 100.0,
        cpu / wall / rings as f64 * 1e6
    );
    drop(writers);
    Ok(())
}
