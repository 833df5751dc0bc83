//! What the benchmarks share about the thread that runs them: pinning it to
//! a CPU, lowering or raising its scheduling, and reading the CPU time it has
//! used (which time-sharing with other threads and processes does not dilute,
//! unlike the wall clock on a small shared machine).
//!
//! A dev-dependency of the benchmark targets (`crates/*/benches`,
//! `crates/exporters/*/benches`); nothing shipped links it. Everything goes
//! through `rustix` but the real-time policy, which it does not offer: that
//! one `libc` call is in the private `sys` module.

#![deny(unsafe_code)]

mod sys;

use std::io;
use std::time::Duration;

use rustix::thread::CpuSet;

/// The CPU time the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Pins the calling thread to CPU `cpu` (no-op for `None`).
///
/// # Panics
///
/// If the system refuses (a CPU this process may not use, or none such).
pub fn pin(cpu: Option<usize>) {
    let Some(cpu) = cpu else { return };
    let mut set = CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set)
        .unwrap_or_else(|e| panic!("sched_setaffinity({cpu}) failed: {e}"));
}

/// Lets the calling thread run on every CPU of the machine again (undoes
/// [`pin`]).
///
/// # Panics
///
/// If the system refuses.
pub fn unpin() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut set = CpuSet::new();
    for cpu in 0..cpus.min(CpuSet::MAX_CPU) {
        set.set(cpu);
    }
    rustix::thread::sched_setaffinity(None, &set)
        .unwrap_or_else(|e| panic!("sched_setaffinity(0-{}) failed: {e}", cpus - 1));
}

/// Lowers the calling thread to nice 19 (Linux applies a nice value to one
/// thread when given its id), so that what it does stands in for load from
/// another machine.
///
/// # Panics
///
/// If the system refuses.
pub fn lower_priority() {
    rustix::process::setpriority_process(Some(rustix::thread::gettid()), 19)
        .unwrap_or_else(|e| panic!("setpriority(nice 19) failed: {e}"));
}

/// Runs the calling thread under the real-time round-robin policy
/// (`SCHED_RR`, priority 1), so other processes on a shared machine cannot
/// take its CPU. Needs root (or `CAP_SYS_NICE`).
pub fn real_time() -> io::Result<()> {
    sys::set_round_robin(1)
}
