//! The record path against its floor, measured in pairs.
//!
//! `record_vs_floor_1t` divides two medians taken seconds apart; on a shared
//! virtual machine the clock's own cost moves between such moments (RDTSC reads
//! 10 ns in one stretch and 12 ns in the next), which alone moves that ratio by
//! ±20 % from run to run. Here each repeat times the floor and our record back
//! to back, on the same thread, in alternating order (floor first in even
//! repeats, ours first in odd ones, so a steady drift cancels), and the figure
//! is the median of the per-repeat ratios. Two pairs are measured:
//!
//! * `record_vs_floor_paired`: the handle's `record` (clock included) against
//!   the cheapest stamp plus a 56-byte write into a thread-local buffer;
//! * `record_at_vs_write_paired`: the handle's `record_at` (the caller's
//!   timestamp) against the 56-byte write alone: what our path adds, with the
//!   clock's cost and its noise left out.
//!
//! Both sides take their inputs alike: the floor its name, ours the handle,
//! each through one `black_box` per timed body, and the value through a
//! `black_box` per operation. That per-operation `black_box` clobbers memory,
//! so our side still loads the handle and checks it is enabled on every
//! record. Before 2026-11-29, ours took the handle through a `black_box` per
//! operation too, which put a store and a reload of the handle's address (a
//! store-forwarding delay) in front of every load of the record; the floor
//! paid no such thing for its name.

use std::hint::black_box;
use std::time::Instant;

use anyhow::{Context, Result};
use nixl_telemetry::Category;

use crate::harness::{median, Plan};
use crate::ops::{
    clock_and_write, nixl_telemetry_name, telemetry_with_ring, write_only, FloorPool, NAME, OPS,
};
use crate::report::{Row, Unit};

/// The nanoseconds per operation of `body(OPS)`.
fn timed(body: &mut dyn FnMut(u64)) -> f64 {
    let start = Instant::now();
    body(OPS);
    start.elapsed().as_nanos() as f64 / OPS as f64
}

/// One row: the median and the lowest of the per-repeat ratios `ours / floor`,
/// the two bodies timed back to back in alternating order.
fn pair(
    plan: Plan,
    id: &str,
    label: &str,
    floor: &mut dyn FnMut(u64),
    ours: &mut dyn FnMut(u64),
    between: &dyn Fn(),
) -> Row {
    let mut ratios = Vec::with_capacity(plan.repeats);
    let (mut floor_ns, mut ours_ns) = (Vec::new(), Vec::new());
    for round in 0..plan.warmup + plan.repeats {
        let (f, o) = if round % 2 == 0 {
            let f = timed(floor);
            let o = timed(ours);
            (f, o)
        } else {
            let o = timed(ours);
            let f = timed(floor);
            (f, o)
        };
        between();
        if round >= plan.warmup {
            ratios.push(o / f);
            floor_ns.push(f);
            ours_ns.push(o);
        }
    }
    let best = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let repeats = ratios.len();
    let (floor_median, ours_median) = (median(&mut floor_ns), median(&mut ours_ns));
    let mut extra = serde_json::Map::new();
    extra.insert("ops_per_repeat".into(), OPS.into());
    extra.insert("floor_median_ns".into(), floor_median.into());
    extra.insert("ours_median_ns".into(), ours_median.into());
    let note = format!(
        "median of per-repeat ratios; floor {floor_median:.2} ns, ours {ours_median:.2} ns (medians)"
    );
    Row {
        id: id.to_owned(),
        label: label.to_owned(),
        threads: 1,
        unit: Unit::Ratio,
        median: median(&mut ratios),
        best,
        repeats,
        note,
        extra,
    }
}

/// Measures both pairs on one thread and adds their rows.
pub fn run(plan: Plan, rows: &mut Vec<Row>) -> Result<()> {
    let dir = tempfile::tempdir().context("temporary ring directory")?;
    let telemetry = telemetry_with_ring(dir.path(), "bench-paired")?;
    let handle = telemetry.handle(Category::PERFORMANCE, NAME);
    let flush = || telemetry.flush();
    let pool = FloorPool::new(1);
    let name = nixl_telemetry_name(NAME);

    rows.push(pair(
        plan,
        "record_vs_floor_paired",
        "paired: fast-path record ÷ cheap clock + thread-local write",
        &mut |ops| clock_and_write(&pool, 0, &name.0, ops),
        &mut |ops| {
            let handle = black_box(&handle);
            for i in 0..ops {
                handle.record(black_box(i));
            }
        },
        &flush,
    ));

    rows.push(pair(
        plan,
        "record_at_vs_write_paired",
        "paired: handle record_at ÷ 56-byte thread-local write",
        &mut |ops| write_only(&pool, 0, &name.0, ops),
        &mut |ops| {
            let handle = black_box(&handle);
            for i in 0..ops {
                handle.record_at(black_box(i), i);
            }
        },
        &flush,
    ));
    Ok(())
}
