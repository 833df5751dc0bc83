//! The sidecar's own series, and how they reach the sink.
//!
//! They travel as events, like everything else the sidecar exports: category
//! SYSTEM, names starting `export_`, each value the increase since the last
//! report, so that every exporter — the shipped ones and any third-party
//! plug-in — carries them without knowing the sidecar. Figures about one
//! agent go to that agent's exporter (with Prometheus:
//! `export_events_read_total{agent_name="initiator",category="SYSTEM",…}`);
//! figures about the sidecar as a whole go to its own agent's exporter (the
//! agent named by `--self-name`). Every one is a running total (a counter),
//! the fullest fill included: the highest fill seen only ever grows.

use nixl_telemetry::{Category, Event};

use nixl_telemetry_abi::event::encode_name;

/// Events read from the agent's rings and handed to its exporter.
pub const EVENTS_READ: &str = "export_events_read";
/// Passes over the rings (per agent: passes that looked at its rings).
pub const READ_PASSES: &str = "export_read_passes";
/// The fullest an agent's ring was found, in percent of what it can hold.
pub const FILL_PEAK: &str = "export_fill_peak_percent";
/// Ring files opened (per agent: 1, plus one per replacement of its ring).
pub const RINGS_OPENED: &str = "export_rings_opened";
/// Ring files closed (removed or replaced, and read to their end).
pub const RINGS_CLOSED: &str = "export_rings_closed";
/// Agents whose series were dropped after the grace time.
pub const AGENTS_DROPPED: &str = "export_agents_dropped";
/// Slots skipped because their name had no NUL terminator.
pub const MALFORMED: &str = "export_malformed_slots";
/// Prefix of the files refused, by cause: `export_refused_<cause>`.
pub const REFUSED_PREFIX: &str = "export_refused_";

/// One series: its name field, its running total and what was reported.
#[derive(Debug, Clone)]
struct Series {
    name: [u8; nixl_telemetry_abi::EVENT_NAME_CAPACITY],
    total: u64,
    reported: u64,
}

/// A set of the sidecar's own counters, reported as increases.
#[derive(Debug, Clone, Default)]
pub struct OwnSeries {
    series: Vec<Series>,
}

impl OwnSeries {
    fn entry(&mut self, name: &str) -> &mut Series {
        let field = encode_name(name);
        match self.series.iter().position(|s| s.name == field) {
            Some(i) => &mut self.series[i],
            None => {
                self.series.push(Series {
                    name: field,
                    total: 0,
                    reported: 0,
                });
                self.series.last_mut().expect("just pushed")
            }
        }
    }

    /// Adds `n` to the counter `name`.
    pub fn add(&mut self, name: &str, n: u64) {
        let s = self.entry(name);
        s.total = s.total.saturating_add(n);
    }

    /// Raises the counter `name` to `value` if it is below (a peak).
    pub fn raise_to(&mut self, name: &str, value: u64) {
        let s = self.entry(name);
        s.total = s.total.max(value);
    }

    /// The running total of `name`.
    pub fn total(&self, name: &str) -> u64 {
        let field = encode_name(name);
        self.series
            .iter()
            .find(|s| s.name == field)
            .map_or(0, |s| s.total)
    }

    /// Appends an event per counter that grew since the last report (its
    /// increase as value, `now_us` as time) and marks them reported.
    pub fn report(&mut self, now_us: u64, out: &mut Vec<Event>) {
        for s in &mut self.series {
            if s.total > s.reported {
                out.push(Event::with_encoded_name(
                    now_us,
                    Category::SYSTEM,
                    s.name,
                    s.total - s.reported,
                ));
                s.reported = s.total;
            }
        }
    }

    /// Marks everything reported (an agent whose exporter is gone starts
    /// over with the next one).
    pub fn forget(&mut self) {
        self.series.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_reported_as_increases_once() {
        let mut own = OwnSeries::default();
        own.add(EVENTS_READ, 10);
        own.raise_to(FILL_PEAK, 40);
        own.raise_to(FILL_PEAK, 20);
        let mut out = Vec::new();
        own.report(5, &mut out);
        let got: Vec<(String, u64)> = out
            .iter()
            .map(|e| {
                (
                    String::from_utf8_lossy(e.name_bytes()).into_owned(),
                    e.value,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("export_events_read".to_owned(), 10),
                ("export_fill_peak_percent".to_owned(), 40)
            ]
        );
        assert!(out
            .iter()
            .all(|e| e.category == Category::SYSTEM.0 && e.timestamp_us == 5));
        out.clear();
        own.report(6, &mut out);
        assert!(out.is_empty());
        own.raise_to(FILL_PEAK, 55);
        own.report(7, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].value, 15);
        assert_eq!(own.total(FILL_PEAK), 55);
    }

    #[test]
    fn every_name_fits_an_event() {
        use nixl_telemetry::ring::RefusalCause;
        let mut names = vec![
            EVENTS_READ.to_owned(),
            READ_PASSES.to_owned(),
            FILL_PEAK.to_owned(),
            RINGS_OPENED.to_owned(),
            RINGS_CLOSED.to_owned(),
            AGENTS_DROPPED.to_owned(),
            MALFORMED.to_owned(),
            format!("{REFUSED_PREFIX}exporter"),
        ];
        names.extend(
            RefusalCause::ALL
                .iter()
                .map(|c| format!("{REFUSED_PREFIX}{c}")),
        );
        for name in names {
            assert!(
                name.len() <= nixl_telemetry_abi::MAX_EVENT_NAME_LEN,
                "{name}"
            );
        }
    }
}
