//! When to read the rings again: adaptive draining.
//!
//! NIXL's writers drop the newest event when the ring is full, and count
//! nothing. So the sidecar reads each ring before it can fill:
//!
//! * a ring found more than half full is read again at once;
//! * otherwise the next pass comes when the fastest ring, at the rate it was
//!   filling, would be a quarter full again — never later than the interval
//!   (the idle case), never sooner than [`MIN_DELAY`].
//!
//! A ring's rate is remembered across passes and fades with a half-life of
//! [`RATE_HALF_LIFE`] ([`remembered_rate`]): a pass that comes while every
//! busy writer happens to be between bursts must not take the rings for idle
//! and wait a whole interval, longer than a busy ring takes to fill.

use std::time::Duration;

/// The shortest wait between two passes when no ring is more than half full.
pub const MIN_DELAY: Duration = Duration::from_micros(500);

/// How fast a ring's remembered rate fades when nothing new is written.
pub const RATE_HALF_LIFE: Duration = Duration::from_secs(1);

/// The rate to plan the next pass with: the rate seen since the last pass
/// (`seen`, events/s over `elapsed`), or the remembered one (`previous`)
/// faded by its half-life over `elapsed`, whichever is higher.
pub fn remembered_rate(previous: f64, seen: f64, elapsed: Duration) -> f64 {
    let faded = previous * 0.5f64.powf(elapsed.as_secs_f64() / RATE_HALF_LIFE.as_secs_f64());
    seen.max(faded)
}

/// What one pass saw of one ring.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RingLoad {
    /// Events waiting when the pass came.
    pub pending: u64,
    /// Events the ring holds at most (capacity − 1).
    pub room: u64,
    /// Events per second it received since the pass before.
    pub rate: f64,
}

impl RingLoad {
    /// The share of the ring that was filled, 0 to 1.
    pub fn fill(&self) -> f64 {
        if self.room == 0 {
            0.0
        } else {
            (self.pending as f64 / self.room as f64).min(1.0)
        }
    }
}

/// How long to wait before the next pass, given what this pass saw.
pub fn next_delay(loads: impl IntoIterator<Item = RingLoad>, interval: Duration) -> Duration {
    let mut delay = interval;
    for load in loads {
        if load.fill() > 0.5 {
            return Duration::ZERO;
        }
        if load.rate > 0.0 {
            // Time until a quarter of the ring is filled at this rate.
            let seconds = (load.room as f64 / 4.0) / load.rate;
            if seconds < delay.as_secs_f64() {
                delay = Duration::from_secs_f64(seconds);
            }
        }
    }
    delay.max(MIN_DELAY.min(interval))
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTERVAL: Duration = Duration::from_millis(100);

    #[test]
    fn a_busy_ring_between_bursts_is_not_taken_for_idle() {
        // 100,000 events/s into 4,096 slots, then a pass 0.5 ms later that
        // finds nothing new: the plan stays that of a busy ring (about 10 ms),
        // not the 100 ms interval in which the ring would fill.
        let busy = remembered_rate(0.0, 100_000.0, Duration::from_millis(1));
        let quiet = remembered_rate(busy, 0.0, Duration::from_micros(500));
        assert!(quiet > 99_000.0, "{quiet}");
        let load = RingLoad {
            pending: 0,
            room: 4095,
            rate: quiet,
        };
        let delay = next_delay([load], INTERVAL);
        assert!(delay < Duration::from_millis(11), "{delay:?}");
    }

    #[test]
    fn a_ring_gone_quiet_fades_to_the_idle_interval() {
        let mut rate = 100_000.0;
        for _ in 0..100 {
            rate = remembered_rate(rate, 0.0, INTERVAL);
        }
        // Ten seconds quiet: 2^-10 of the rate, a quarter ring takes > 10 s.
        assert!(rate < 100.0, "{rate}");
        let load = RingLoad {
            pending: 0,
            room: 4095,
            rate,
        };
        assert_eq!(next_delay([load], INTERVAL), INTERVAL);
        // A faster rate seen now replaces the remembered one at once.
        assert_eq!(remembered_rate(10.0, 5_000.0, INTERVAL), 5_000.0);
    }

    fn load(pending: u64, rate: f64) -> RingLoad {
        RingLoad {
            pending,
            room: 4095,
            rate,
        }
    }

    #[test]
    fn idle_rings_are_read_once_an_interval() {
        assert_eq!(next_delay([], INTERVAL), INTERVAL);
        assert_eq!(
            next_delay([load(0, 0.0), load(10, 0.0)], INTERVAL),
            INTERVAL
        );
        assert_eq!(next_delay([load(3, 30.0)], INTERVAL), INTERVAL);
    }

    #[test]
    fn a_ring_more_than_half_full_is_read_again_at_once() {
        assert_eq!(
            next_delay([load(0, 0.0), load(2048, 10.0)], INTERVAL),
            Duration::ZERO
        );
        assert_ne!(next_delay([load(2047, 0.0)], INTERVAL), Duration::ZERO);
    }

    #[test]
    fn a_fast_ring_shortens_the_wait_to_a_quarter_of_its_room() {
        // 100 000 events/s into 4095 slots: a quarter is filled in ~10 ms.
        let d = next_delay([load(100, 100_000.0), load(0, 0.0)], INTERVAL);
        assert!((d.as_secs_f64() - 0.01024).abs() < 1e-4, "{d:?}");
        // Never below the floor.
        assert_eq!(next_delay([load(0, 1e12)], INTERVAL), MIN_DELAY);
        // A short interval caps the floor too.
        let short = Duration::from_micros(100);
        assert_eq!(next_delay([load(0, 1e12)], short), short);
    }
}
