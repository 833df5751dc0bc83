//! Bounded-rate accounting of failing plug-in calls.
//!
//! A plug-in whose `export_event`/`export_batch`/`flush` keeps failing must not
//! flood the log: the first failure is reported at once, later ones at most once
//! per [`REPORT_INTERVAL`], each report carrying what happened since the previous one.
//! The reasons a plug-in gives for its failures (`nixl_telemetry_exporter_last_error`)
//! are logged once each ([`ReasonLog`]): a failure that repeats is counted, not
//! logged again.

use std::time::{Duration, Instant};

/// Least time between two reports of one exporter's failures.
pub const REPORT_INTERVAL: Duration = Duration::from_secs(10);

/// What to log: failures since the previous report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FailureReport {
    /// Whether this is the exporter's first failure.
    pub first: bool,
    /// Failed calls since the previous report (this one included).
    pub calls: u64,
    /// Events lost since the previous report.
    pub events: u64,
    /// Events lost since the exporter was created.
    pub total_events: u64,
    /// The latest failing return code.
    pub code: i32,
}

/// Failure counters of one exporter (or of one of its functions).
#[derive(Debug)]
pub(super) struct FailureLog {
    interval: Duration,
    last_report: Option<Instant>,
    calls: u64,
    events: u64,
    total_events: u64,
    code: i32,
}

impl FailureLog {
    pub(super) fn new(interval: Duration) -> FailureLog {
        FailureLog {
            interval,
            last_report: None,
            calls: 0,
            events: 0,
            total_events: 0,
            code: 0,
        }
    }

    /// Notes a failed call that lost `events`; returns a report when one is due.
    pub(super) fn record(
        &mut self,
        now: Instant,
        events: usize,
        code: i32,
    ) -> Option<FailureReport> {
        self.calls += 1;
        self.events += events as u64;
        self.total_events += events as u64;
        self.code = code;
        let due = match self.last_report {
            None => true,
            Some(at) => now.saturating_duration_since(at) >= self.interval,
        };
        if !due {
            return None;
        }
        let first = self.last_report.is_none();
        self.last_report = Some(now);
        Some(self.take(first))
    }

    /// What was not reported yet, if anything (for a last report at the end).
    pub(super) fn pending(&mut self) -> Option<FailureReport> {
        (self.calls > 0).then(|| self.take(self.last_report.is_none()))
    }

    fn take(&mut self, first: bool) -> FailureReport {
        let report = FailureReport {
            first,
            calls: self.calls,
            events: self.events,
            total_events: self.total_events,
            code: self.code,
        };
        self.calls = 0;
        self.events = 0;
        report
    }
}

/// The most distinct failure reasons of one exporter that are logged.
pub const MAX_LOGGED_REASONS: usize = 32;

/// What to do with a failure reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ReasonVerdict {
    /// Not seen before: log it.
    New,
    /// Already logged.
    Seen,
    /// Not seen before, but [`MAX_LOGGED_REASONS`] were logged already: say
    /// once that further reasons are not logged.
    LimitReached,
    /// Not seen before, and the limit was already announced.
    Dropped,
}

/// The failure reasons of one exporter already logged.
#[derive(Debug, Default)]
pub(super) struct ReasonLog {
    seen: Vec<String>,
    limit_announced: bool,
}

impl ReasonLog {
    /// Notes `reason`; says whether it is to be logged.
    pub(super) fn note(&mut self, reason: &str) -> ReasonVerdict {
        if self.seen.iter().any(|r| r == reason) {
            ReasonVerdict::Seen
        } else if self.seen.len() < MAX_LOGGED_REASONS {
            self.seen.push(reason.to_owned());
            ReasonVerdict::New
        } else if !self.limit_announced {
            self.limit_announced = true;
            ReasonVerdict::LimitReached
        } else {
            ReasonVerdict::Dropped
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_distinct_reason_is_logged_once_up_to_the_limit() {
        let mut log = ReasonLog::default();
        assert_eq!(log.note("disk full"), ReasonVerdict::New);
        assert_eq!(log.note("disk full"), ReasonVerdict::Seen);
        assert_eq!(log.note("permission denied"), ReasonVerdict::New);
        assert_eq!(log.note("disk full"), ReasonVerdict::Seen);
        for i in 2..MAX_LOGGED_REASONS {
            assert_eq!(log.note(&format!("reason {i}")), ReasonVerdict::New);
        }
        assert_eq!(log.note("one more"), ReasonVerdict::LimitReached);
        assert_eq!(log.note("and another"), ReasonVerdict::Dropped);
        assert_eq!(log.note("disk full"), ReasonVerdict::Seen);
    }

    #[test]
    fn first_failure_at_once_then_at_most_once_per_interval() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut log = FailureLog::new(s(10));
        let first = log
            .record(t0, 5, -1)
            .expect("the first failure is reported");
        assert!(first.first);
        assert_eq!((first.calls, first.events, first.total_events), (1, 5, 5));
        for i in 1..=100u64 {
            assert_eq!(log.record(t0 + Duration::from_millis(90 * i), 1, -1), None);
        }
        let second = log.record(t0 + s(10), 2, -7).expect("due after 10 s");
        assert!(!second.first);
        assert_eq!(
            (
                second.calls,
                second.events,
                second.total_events,
                second.code
            ),
            (101, 102, 107, -7)
        );
        assert_eq!(log.record(t0 + s(15), 1, -1), None);
        let rest = log.pending().unwrap();
        assert_eq!((rest.calls, rest.events, rest.total_events), (1, 1, 108));
        assert_eq!(log.pending(), None);
        // A clock that goes backwards never makes a report due early.
        assert_eq!(log.record(t0, 1, -1), None);
    }
}
