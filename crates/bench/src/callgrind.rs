//! Loops for instruction counting under `valgrind --tool=callgrind`
//! (scripts/callgrind-fastpath.sh). Each loop is a separate, never-inlined
//! function, so `callgrind_annotate --inclusive=yes` gives its instructions;
//! divided by the loop count, that is the instructions of one call.

use std::hint::black_box;

use anyhow::Result;
use nixl_telemetry::{clock, Category, Direction, Event, EventHandle, ExporterChoice, Telemetry};

use crate::ops;

/// Records `n` events through a pre-resolved handle (timestamp included).
#[inline(never)]
pub fn callgrind_record_loop(handle: &EventHandle, n: u64) {
    for i in 0..n {
        black_box(handle).record(black_box(i));
    }
}

/// Records `n` events through a handle with the caller's timestamp.
#[inline(never)]
pub fn callgrind_record_at_loop(handle: &EventHandle, n: u64) {
    for i in 0..n {
        black_box(handle).record_at(black_box(i), black_box(i));
    }
}

/// `n` generic records.
#[inline(never)]
pub fn callgrind_generic_loop(telemetry: &Telemetry, n: u64) {
    for i in 0..n {
        black_box(telemetry).record(Category::BACKEND, black_box("ucx_rdma_writes"), i);
    }
}

/// `n` completed transfers (three events each).
#[inline(never)]
pub fn callgrind_transfer_loop(telemetry: &Telemetry, n: u64) {
    for i in 0..n {
        black_box(telemetry).transfer_completed(black_box(i), Direction::Write, 4096);
    }
}

/// `n` times the record's floor: the cheapest stamp and a 56-byte event
/// written into a thread-local buffer (`floor` of the timed benchmark).
#[inline(never)]
pub fn callgrind_floor_loop(name: &[u8; 32], n: u64) {
    for i in 0..n {
        ops::floor_write(Event::with_encoded_name(
            ops::cheapest_stamp(),
            Category::PERFORMANCE,
            *black_box(name),
            black_box(i),
        ));
    }
}

/// The encoded name the loops record.
fn handle_name() -> [u8; 32] {
    Event::new(0, Category::PERFORMANCE, "agent_xfer_time", 0).event_name
}

/// `n` reads of the cheap clock.
#[inline(never)]
pub fn callgrind_clock_loop(n: u64) {
    for _ in 0..n {
        black_box(clock::now_us());
    }
}

/// `n` records alternating between two telemetry instances (two agents
/// recorded from one thread), `n / 2` through each.
#[inline(never)]
pub fn callgrind_two_agents_loop(a: &EventHandle, b: &EventHandle, n: u64) {
    for i in 0..n / 2 {
        black_box(a).record(black_box(i));
        black_box(b).record(black_box(i));
    }
}

/// `n` records through a disabled handle. (Its body differs from
/// [`callgrind_record_loop`]'s on purpose: identical functions get merged.)
#[inline(never)]
pub fn callgrind_disabled_loop(handle: &EventHandle, n: u64) {
    for i in 0..n {
        black_box(handle).record(black_box(i ^ 0x5a5a));
    }
}

/// Runs every loop `n` times (the staging holds them all: no drop path).
/// Prints what ran, for the script's report.
pub fn run(n: u64) -> Result<()> {
    let capacity = (4 * n as usize).next_power_of_two();
    let telemetry = Telemetry::builder("callgrind")
        .buffer_size(capacity)?
        .run_interval(std::time::Duration::from_secs(3600))?
        .exporter(ExporterChoice::Nop)
        .build()?;
    let handle = telemetry.handle(Category::PERFORMANCE, "agent_xfer_time");
    // Warm: the first record registers this thread's queue (slow path).
    handle.record(0);
    telemetry.transfer_completed(0, Direction::Write, 0);
    telemetry.record(Category::BACKEND, "ucx_rdma_writes", 0);
    telemetry.flush();
    callgrind_record_loop(&handle, n);
    telemetry.flush();
    callgrind_record_at_loop(&handle, n);
    telemetry.flush();
    callgrind_generic_loop(&telemetry, n);
    telemetry.flush();
    callgrind_transfer_loop(&telemetry, n);
    telemetry.flush();
    callgrind_clock_loop(n);
    let floor = ops::FloorPool::new(1);
    floor.attach(0);
    callgrind_floor_loop(&handle_name(), n);
    let other = Telemetry::builder("callgrind-other")
        .buffer_size(capacity)?
        .run_interval(std::time::Duration::from_secs(3600))?
        .exporter(ExporterChoice::Nop)
        .build()?;
    let other_handle = other.handle(Category::PERFORMANCE, "agent_xfer_time");
    other_handle.record(0);
    callgrind_two_agents_loop(&handle, &other_handle, n);
    telemetry.flush();
    other.flush();
    let off = Telemetry::disabled().handle(Category::PERFORMANCE, "agent_xfer_time");
    callgrind_disabled_loop(&off, n);
    let stats = telemetry.stats();
    anyhow::ensure!(
        stats.dropped.staging_full == 0 && stats.dropped.late == 0,
        "the callgrind loops dropped events: {stats:?}"
    );
    println!(
        "callgrind loops: n={n} tsc_clock={} recorded={}",
        clock::uses_tsc(),
        stats.recorded
    );
    Ok(())
}
