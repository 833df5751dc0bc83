//! Bounded-rate accounting of failing plug-in calls.
//!
//! A plug-in whose `export_event`/`export_batch`/`flush` keeps failing must not
//! flood the log: the first failure is reported at once, later ones at most once
//! per [`REPORT_INTERVAL`], each report carrying what happened since the previous one.

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

#[cfg(test)]
mod tests {
    use super::*;

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
