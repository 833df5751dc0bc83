//! How often `top` looks at each ring, and whether the writer may have gone
//! round it unseen between two looks.
//!
//! A peeking reader follows the writer ([`RingReader::follow_writer`]): it
//! reads what a consumer took as long as the writer has not come round to it
//! again, which happens once `capacity` events are written after the
//! reader's position. So each ring is looked at often enough that the writer
//! fills about an eighth of it between two looks, at the pace it has been
//! seen to write (its recent peak, halving every second it is slower), and
//! at least every [`SLOWEST`]: a busy ring is looked at sooner, an idle one
//! costs one look every [`SLOWEST`]. A ring whose events a look left
//! waiting is looked at again after [`WAITING`].
//!
//! The positions are slot indices modulo the capacity, so a lap between two
//! looks does not show in them. It can only happen while a consumer moves
//! `read_pos` (the writer never passes it), and it may have when, since the
//! last look, the writer advanced half the ring or more (a burst that the
//! pace did not foresee) or the look came later than a lap would take at
//! the pace seen (`top` was held up). [`Pace::looked`] says so; the trailer
//! of this project's rings counts instead (see `feed.rs`).
//!
//! [`RingReader::follow_writer`]: nixl_telemetry::ring::RingReader::follow_writer

use std::time::{Duration, Instant};

/// The longest time between two looks at a ring.
pub const SLOWEST: Duration = Duration::from_millis(100);
/// The shortest.
pub const FASTEST: Duration = Duration::from_millis(1);
/// How soon a ring is looked at again when events were left waiting in it:
/// held until the writer is seen to move on (see
/// [`RingReader::follow_writer`]), or beyond what one look reads.
pub const WAITING: Duration = Duration::from_millis(2);
/// The share of the ring the writer should fill between two looks.
const FILL_PER_LOOK: f64 = 1.0 / 8.0;
/// How fast the pace seen falls when the writer slows down.
const HALF_LIFE: Duration = Duration::from_secs(1);

/// One ring's cadence.
#[derive(Debug, Clone)]
pub struct Pace {
    capacity: u64,
    /// When the ring was last looked at, and its positions then.
    last: Option<(Instant, u64, u64)>,
    /// Slots per second the writer has been seen to fill: the recent peak.
    rate: f64,
    next: Instant,
}

impl Pace {
    /// The cadence of a ring of `capacity` slots, first looked at `now`.
    pub fn new(capacity: u64, now: Instant) -> Pace {
        Pace {
            capacity: capacity.max(2),
            last: None,
            rate: 0.0,
            next: now,
        }
    }

    /// When the ring is to be looked at next.
    pub fn next_look(&self) -> Instant {
        self.next
    }

    /// After a look `at` which left events waiting: the next one soon.
    pub fn waiting(&mut self, at: Instant) {
        self.next = self.next.min(at + WAITING);
    }

    /// Records a look `at` which `write_pos` and `read_pos` were found;
    /// returns whether the writer may have gone round the ring since the
    /// last look without the positions showing it.
    pub fn looked(&mut self, at: Instant, write_pos: u64, read_pos: u64) -> bool {
        let mask = self.capacity - 1;
        let Some((then, write_then, read_then)) = self.last.replace((at, write_pos, read_pos))
        else {
            self.next = at + FASTEST;
            return false;
        };
        let seconds = at.saturating_duration_since(then).as_secs_f64().max(1e-6);
        let advance = write_pos.wrapping_sub(write_then) & mask;
        let capacity = self.capacity as f64;
        let lap_possible = read_pos != read_then
            && (advance * 2 >= self.capacity || self.rate * seconds >= capacity);
        let seen = advance as f64 / seconds;
        let decayed = self.rate * 0.5f64.powf(seconds / HALF_LIFE.as_secs_f64());
        self.rate = seen.max(decayed);
        let period = if self.rate > 0.0 {
            Duration::from_secs_f64((capacity * FILL_PER_LOOK / self.rate).min(1.0))
        } else {
            SLOWEST
        };
        self.next = at + period.clamp(FASTEST, SLOWEST);
        lap_possible
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn an_idle_ring_is_looked_at_slowly_a_busy_one_often() {
        let t0 = Instant::now();
        let mut pace = Pace::new(4096, t0);
        assert!(!pace.looked(t0, 0, 0));
        assert!(!pace.looked(t0 + ms(100), 0, 0));
        assert_eq!(pace.next_look(), t0 + ms(200));
        // 100 000 events/s into 4096 slots: an eighth in about 5 ms.
        let t1 = t0 + ms(120);
        assert!(!pace.looked(t1, 2000, 1900));
        let period = pace.next_look() - t1;
        assert!(period > ms(5) && period < ms(6), "{period:?}");
        // Beyond what one look a millisecond can follow: the fastest.
        assert!(!pace.looked(t1 + ms(1), 3000, 2900));
        assert_eq!(pace.next_look() - (t1 + ms(1)), FASTEST);
    }

    #[test]
    fn the_pace_falls_when_the_writer_slows_down() {
        let t0 = Instant::now();
        let mut pace = Pace::new(4096, t0);
        pace.looked(t0, 0, 0);
        pace.looked(t0 + ms(10), 1000, 1000);
        let busy = pace.next_look() - (t0 + ms(10));
        pace.looked(t0 + ms(3010), 1000, 1000);
        let idle = pace.next_look() - (t0 + ms(3010));
        assert!(idle > busy * 7, "{busy:?} then {idle:?}");
    }

    #[test]
    fn a_lap_may_hide_only_while_a_consumer_moves() {
        let t0 = Instant::now();
        let mut pace = Pace::new(16, t0);
        pace.looked(t0, 0, 0);
        // Half the ring or more since the last look, a consumer moving.
        assert!(pace.looked(t0 + ms(1), 8, 4));
        // The same advance with read_pos where it was: the writer cannot
        // pass the consumer, so no lap.
        let mut alone = Pace::new(16, t0);
        alone.looked(t0, 0, 0);
        assert!(!alone.looked(t0 + ms(1), 8, 0));
        // A little, but late for the pace seen: 16 slots a millisecond,
        // then a look 50 ms later.
        let mut late = Pace::new(16, t0);
        late.looked(t0, 0, 0);
        late.looked(t0 + ms(1), 7, 6);
        assert!(late.looked(t0 + ms(51), 9, 8));
        // Little and on time: nothing to fear.
        let mut calm = Pace::new(4096, t0);
        calm.looked(t0, 0, 0);
        calm.looked(t0 + ms(5), 500, 400);
        assert!(!calm.looked(t0 + ms(10), 1000, 900));
    }

    #[test]
    fn events_left_waiting_are_looked_for_soon() {
        let t0 = Instant::now();
        let mut pace = Pace::new(4096, t0);
        pace.looked(t0, 0, 0);
        pace.looked(t0 + ms(100), 0, 0);
        pace.waiting(t0 + ms(100));
        assert_eq!(pace.next_look(), t0 + ms(100) + WAITING);
    }
}
