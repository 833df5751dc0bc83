//! The measuring loop: one body run by 1 or 2 threads at once, many repeats,
//! median and minimum of the per-operation cost.
//!
//! Every repeat starts all threads together (a blocking barrier, then a spin on
//! a shared counter so they leave within ~100 ns of each other), each thread
//! times its own loop with [`Instant`], and the repeat's value is the slowest
//! thread's time divided by its operations: the per-thread cost while all
//! threads record at once. Between repeats, thread 0 runs a `between` hook
//! (draining staging, running upkeep) while the others wait, so no repeat ever
//! overflows a bounded buffer and the hook's cost is never timed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

/// Repeats of a multi-thread measurement count only when the threads' timed
/// loops overlapped for at least this fraction of the longest one: on a shared
/// 2-core machine a thread is often descheduled, and two loops that ran one
/// after the other measure no contention at all.
pub const MIN_OVERLAP: f64 = 0.9;

/// Median and minimum of many repeats, in nanoseconds per operation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Median over the repeats.
    pub median: f64,
    /// Fastest repeat.
    pub min: f64,
    /// Number of repeats.
    pub repeats: usize,
    /// Operations each thread ran per repeat.
    pub ops_per_repeat: u64,
    /// Repeats measured in all (`repeats` of them overlapped enough to count).
    pub measured: usize,
}

/// A steady beat of one tick a millisecond for a producer thread: [`wait`]
/// sleeps until the next tick is due. A producer that fell more than 10 ms
/// behind (an overloaded machine) skips the ticks it missed, so that it stays
/// steady instead of catching up in a burst.
///
/// [`wait`]: MillisecondTicker::wait
pub struct MillisecondTicker {
    start: Instant,
    tick: u64,
}

impl MillisecondTicker {
    /// A ticker whose first tick is due 1 ms from now.
    pub fn start() -> MillisecondTicker {
        MillisecondTicker {
            start: Instant::now(),
            tick: 0,
        }
    }

    /// Waits for the next tick (at once when it is already due).
    pub fn wait(&mut self) {
        self.tick += 1;
        let due = self.start + Duration::from_millis(self.tick);
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        } else if now - due > Duration::from_millis(10) {
            self.tick = (now - self.start).as_millis() as u64;
        }
    }
}

/// The machine's load averages over 1, 5 and 15 minutes as `/proc/loadavg`
/// gives them (`"0.52 0.61 0.70"`), for a run log; empty where unreadable.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The median of `values` (sorted in place); NaN when empty.
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Summarises per-repeat values.
pub fn summarise(mut values: Vec<f64>, ops_per_repeat: u64) -> Sample {
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let repeats = values.len();
    Sample {
        median: median(&mut values),
        min,
        repeats,
        ops_per_repeat,
        measured: repeats,
    }
}

/// How much to measure.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Repeats of each measurement.
    pub repeats: usize,
    /// Repeats run and thrown away first (page faults, lazy registration).
    pub warmup: usize,
}

/// Runs `body(thread, ops)` on `threads` threads at once, `plan.repeats` times
/// after `plan.warmup` untimed rounds. `between()` runs on thread 0 after every
/// round while the other threads wait. `body` must do `ops` operations and keep
/// their results alive (`std::hint::black_box`).
pub fn run_concurrent<F, B>(threads: usize, ops: u64, plan: Plan, body: F, between: B) -> Sample
where
    F: Fn(usize, u64) + Sync,
    B: Fn() + Sync,
{
    assert!(threads >= 1 && ops >= 1);
    let rounds = plan.warmup + plan.repeats;
    let barrier = Barrier::new(threads);
    let arrived = AtomicUsize::new(0);
    let times: Vec<Mutex<Vec<(Instant, Instant)>>> = (0..threads)
        .map(|_| Mutex::new(Vec::with_capacity(rounds)))
        .collect();
    std::thread::scope(|scope| {
        for t in 0..threads {
            let (barrier, arrived, times, body, between) =
                (&barrier, &arrived, &times, &body, &between);
            scope.spawn(move || {
                let mut mine = Vec::with_capacity(rounds);
                for round in 0..rounds {
                    barrier.wait();
                    // Spin start: everyone leaves together.
                    arrived.fetch_add(1, Ordering::AcqRel);
                    let target = threads * (round + 1);
                    while arrived.load(Ordering::Acquire) < target {
                        std::hint::spin_loop();
                    }
                    let start = Instant::now();
                    body(t, ops);
                    mine.push((start, Instant::now()));
                    barrier.wait();
                    if t == 0 {
                        between();
                    }
                }
                *times[t].lock().unwrap() = mine;
            });
        }
    });
    let per_thread: Vec<Vec<(Instant, Instant)>> =
        times.into_iter().map(|m| m.into_inner().unwrap()).collect();
    let mut all = Vec::new();
    let mut overlapped = Vec::new();
    for round in plan.warmup..rounds {
        let spans: Vec<(Instant, Instant)> = per_thread.iter().map(|v| v[round]).collect();
        let slowest: Duration = spans.iter().map(|(a, b)| *b - *a).max().unwrap();
        let value = slowest.as_nanos() as f64 / ops as f64;
        all.push(value);
        if overlap(&spans) >= MIN_OVERLAP {
            overlapped.push(value);
        }
    }
    let measured = all.len();
    // Too few overlapping repeats (a very busy machine): keep them all; the
    // caller sees it from `repeats == measured` with threads > 1.
    let values = if overlapped.len() * 4 >= measured {
        overlapped
    } else {
        all
    };
    Sample {
        measured,
        ..summarise(values, ops)
    }
}

/// The fraction of the longest span during which every span was running.
pub fn overlap(spans: &[(Instant, Instant)]) -> f64 {
    let latest_start = spans.iter().map(|s| s.0).max().unwrap();
    let earliest_end = spans.iter().map(|s| s.1).min().unwrap();
    let longest = spans.iter().map(|(a, b)| *b - *a).max().unwrap();
    if longest.is_zero() {
        return 1.0;
    }
    earliest_end
        .saturating_duration_since(latest_start)
        .as_secs_f64()
        / longest.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&mut []).is_nan());
    }

    #[test]
    fn runs_every_round_on_every_thread() {
        let count = AtomicUsize::new(0);
        let betweens = AtomicUsize::new(0);
        let plan = Plan {
            repeats: 5,
            warmup: 2,
        };
        let s = run_concurrent(
            2,
            10,
            plan,
            |_, ops| {
                count.fetch_add(ops as usize, Ordering::Relaxed);
            },
            || {
                betweens.fetch_add(1, Ordering::Relaxed);
            },
        );
        assert_eq!(count.load(Ordering::Relaxed), 2 * 10 * 7);
        assert_eq!(betweens.load(Ordering::Relaxed), 7);
        assert_eq!(s.repeats, 5);
        assert!(s.min <= s.median);
    }
}
