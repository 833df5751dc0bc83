//! One agent as the sidecar exports it: its exporter (its series), the ring
//! files it is read from, its own counters, and whether it is still there.

use std::time::{Duration, Instant};

use nixl_telemetry::{Event, Exporter};

use super::own_series::{self, OwnSeries};
use super::ring::{FollowedRing, Producer};

/// How often the producer of a ring is asked whether it is still there.
pub const LIVENESS_CHECK: Duration = Duration::from_secs(1);

/// An agent: one exporter, fed from one or more ring files (a ring moved
/// aside by a restarted producer, read to its end, and the new one).
pub struct Agent {
    /// The agent's name (its ring file's name).
    pub name: String,
    /// Its exporter; `None` once its series were dropped (a ring of an
    /// exited producer may still be followed, in case a new producer takes
    /// it over).
    pub exporter: Option<Box<dyn Exporter>>,
    /// Its rings, the oldest first.
    pub rings: Vec<FollowedRing>,
    /// The sidecar's figures about it.
    pub own: OwnSeries,
    /// Since when its producer is gone (or its last ring file removed).
    pub gone_since: Option<Instant>,
    /// Events were exported since the last flush.
    pub unflushed: bool,
    last_liveness: Option<Instant>,
}

impl Agent {
    /// A new agent with its exporter.
    pub fn new(name: String, exporter: Box<dyn Exporter>) -> Agent {
        Agent {
            name,
            exporter: Some(exporter),
            rings: Vec::new(),
            own: OwnSeries::default(),
            gone_since: None,
            unflushed: false,
            last_liveness: None,
        }
    }

    /// Hands `events` to the exporter; returns how many it refused (its
    /// export call failed: they are lost).
    pub fn export(
        exporter: &mut Option<Box<dyn Exporter>>,
        unflushed: &mut bool,
        events: &[Event],
    ) -> u64 {
        let Some(exporter) = exporter else {
            return 0;
        };
        let outcome = exporter.export(events);
        *unflushed = true;
        (outcome.failed + outcome.dropped_full + outcome.dropped_format) as u64
    }

    /// Reports the sidecar's figures about the agent to its exporter.
    pub fn report_own(&mut self, now_us: u64, scratch: &mut Vec<Event>) {
        if self.exporter.is_none() {
            return;
        }
        scratch.clear();
        self.own.report(now_us, scratch);
        if !scratch.is_empty() {
            let _ = Agent::export(&mut self.exporter, &mut self.unflushed, scratch);
        }
    }

    /// Flushes the exporter if it received events since the last flush.
    pub fn flush(&mut self) {
        if let (Some(exporter), true) = (&mut self.exporter, self.unflushed) {
            exporter.flush();
            self.unflushed = false;
        }
    }

    /// Updates whether the agent is gone: no ring file left, or every
    /// producer exited (asked at most once per [`LIVENESS_CHECK`]). A ring
    /// without this project's trailer (NIXL's own) counts as alive while its
    /// file exists.
    pub fn check_liveness(&mut self, now: Instant) {
        if self.rings.is_empty() {
            self.gone_since.get_or_insert(now);
            return;
        }
        if self
            .last_liveness
            .is_some_and(|last| now.duration_since(last) < LIVENESS_CHECK)
        {
            return;
        }
        self.last_liveness = Some(now);
        let alive = self
            .rings
            .iter()
            .any(|r| !r.retiring && r.producer() != Producer::Exited);
        if alive {
            self.gone_since = None;
        } else {
            self.gone_since.get_or_insert(now);
        }
    }

    /// Whether its series should be dropped now.
    pub fn grace_over(&self, now: Instant, grace: Duration) -> bool {
        self.exporter.is_some()
            && self
                .gone_since
                .is_some_and(|t| now.duration_since(t) >= grace)
    }

    /// Drops its series: final figures, flush, then the exporter is destroyed.
    pub fn drop_series(&mut self, now_us: u64, scratch: &mut Vec<Event>) {
        self.report_own(now_us, scratch);
        self.unflushed = true;
        self.flush();
        self.exporter = None;
        self.own.forget();
    }

    /// The fill of a ring, in percent of what it can hold.
    pub fn note_fill(&mut self, pending: u64, room: u64) {
        if room > 0 {
            let percent = (u128::from(pending) * 100 / u128::from(room)).min(100) as u64;
            self.own.raise_to(own_series::FILL_PEAK, percent);
        }
    }
}
