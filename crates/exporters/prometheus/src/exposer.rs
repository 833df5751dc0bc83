//! The HTTP server's own families, as NIXL's plug-in exposes them beside its
//! agents' (they come from its HTTP library there): bytes of `/metrics`
//! answers sent, scrapes served, and a summary of how long answering took.
//!
//! One [`ExposerStats`] per endpoint, owned by its server thread (no locks,
//! no atomics). A scrape's answer shows the scrapes answered before it (the
//! first scrape sees zeros and `NaN` quantiles, as NIXL's does). The
//! quantiles are exact (nearest rank) over the answers of the last
//! [`WINDOW`], at most [`WINDOW_SAMPLES`] of them; `_count` and `_sum` cover
//! every answer since the endpoint opened.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::render::{write_counter_header as counter_header, write_header as header, Format};

/// How far back the latency quantiles look. NIXL's HTTP library keeps its
/// quantiles over the last 60 s (in five rotating 12 s buckets).
pub(crate) const WINDOW: Duration = Duration::from_secs(60);

/// The most answers the window keeps: a flood of scrapes cannot grow the
/// memory or the time each answer spends on the quantiles.
pub(crate) const WINDOW_SAMPLES: usize = 1024;

/// The quantiles of `exposer_request_latencies`, as NIXL's.
const QUANTILES: [(f64, &str); 3] = [(0.5, "0.5"), (0.9, "0.9"), (0.99, "0.99")];

const BYTES_SAMPLE: &str = "exposer_transferred_bytes_total";
const BYTES_HELP: &str = "Transferred bytes to metrics services";
const SCRAPES_SAMPLE: &str = "exposer_scrapes_total";
const SCRAPES_HELP: &str = "Number of times metrics were scraped";
const LATENCY_FAMILY: &str = "exposer_request_latencies";
const LATENCY_HELP: &str = "Latencies of serving scrape requests, in microseconds";

/// What one endpoint has served.
#[derive(Debug, Default)]
pub(crate) struct ExposerStats {
    bytes: u64,
    scrapes: u64,
    latency_sum_us: u64,
    /// (when the answer was out, its latency in µs), oldest first.
    window: VecDeque<(Instant, u64)>,
    /// Scratch space for the quantiles.
    sorted: Vec<u64>,
}

impl ExposerStats {
    /// Counts one `/metrics` answer of `body_bytes` bytes (as sent: gzipped
    /// when it was) that took `latency` from the complete request to its
    /// last byte handed to the socket, finished at `now`.
    pub(crate) fn record(&mut self, body_bytes: usize, latency: Duration, now: Instant) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.bytes = self.bytes.saturating_add(body_bytes as u64);
        self.scrapes = self.scrapes.saturating_add(1);
        self.latency_sum_us = self.latency_sum_us.saturating_add(micros);
        if self.window.len() == WINDOW_SAMPLES {
            self.window.pop_front();
        }
        self.window.push_back((now, micros));
        self.expire(now);
    }

    fn expire(&mut self, now: Instant) {
        while self
            .window
            .front()
            .is_some_and(|&(at, _)| now.saturating_duration_since(at) > WINDOW)
        {
            self.window.pop_front();
        }
    }

    /// The three families in `format`, as of `now` (without `# EOF`: they
    /// come before the agents' families).
    pub(crate) fn render(&mut self, format: Format, now: Instant) -> Vec<u8> {
        self.expire(now);
        let mut out = Vec::with_capacity(768);
        let mut number = itoa::Buffer::new();
        counter_header(&mut out, format, BYTES_SAMPLE, BYTES_HELP, false);
        line(&mut out, BYTES_SAMPLE, "", number.format(self.bytes));
        counter_header(&mut out, format, SCRAPES_SAMPLE, SCRAPES_HELP, false);
        line(&mut out, SCRAPES_SAMPLE, "", number.format(self.scrapes));
        header(&mut out, format, LATENCY_FAMILY, "summary", LATENCY_HELP);
        self.sorted.clear();
        self.sorted.extend(self.window.iter().map(|&(_, us)| us));
        self.sorted.sort_unstable();
        for (q, label) in QUANTILES {
            let labels = format!("{{quantile=\"{label}\"}}");
            match nearest_rank(&self.sorted, q) {
                Some(us) => line(&mut out, LATENCY_FAMILY, &labels, number.format(us)),
                None => line(&mut out, LATENCY_FAMILY, &labels, "NaN"),
            }
        }
        line(
            &mut out,
            "exposer_request_latencies_sum",
            "",
            number.format(self.latency_sum_us),
        );
        line(
            &mut out,
            "exposer_request_latencies_count",
            "",
            number.format(self.scrapes),
        );
        out
    }
}

/// The `q` quantile of `sorted` by nearest rank (the smallest value with at
/// least `q` of the values at or below it); `None` when empty.
fn nearest_rank(sorted: &[u64], q: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

fn line(out: &mut Vec<u8>, sample: &str, labels: &str, value: &str) {
    out.extend_from_slice(sample.as_bytes());
    out.extend_from_slice(labels.as_bytes());
    out.push(b' ');
    out.extend_from_slice(value.as_bytes());
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_event_can_take_an_exposer_name() {
        // The model reserves the prefix for a Prometheus exposition.
        for name in [BYTES_SAMPLE, SCRAPES_SAMPLE, LATENCY_FAMILY] {
            assert!(name.starts_with(nixl_telemetry_metrics::families::EXPOSER_PREFIX));
            assert!(nixl_telemetry_metrics::SeriesNaming::Prometheus.is_reserved(name));
        }
    }

    #[test]
    fn before_any_scrape_counts_are_zero_and_quantiles_nan() {
        let text = String::from_utf8(ExposerStats::default().render(Format::Text, Instant::now()))
            .unwrap();
        assert_eq!(
            text,
            "# HELP exposer_transferred_bytes_total Transferred bytes to metrics services\n\
             # TYPE exposer_transferred_bytes_total counter\n\
             exposer_transferred_bytes_total 0\n\
             # HELP exposer_scrapes_total Number of times metrics were scraped\n\
             # TYPE exposer_scrapes_total counter\n\
             exposer_scrapes_total 0\n\
             # HELP exposer_request_latencies Latencies of serving scrape requests, in microseconds\n\
             # TYPE exposer_request_latencies summary\n\
             exposer_request_latencies{quantile=\"0.5\"} NaN\n\
             exposer_request_latencies{quantile=\"0.9\"} NaN\n\
             exposer_request_latencies{quantile=\"0.99\"} NaN\n\
             exposer_request_latencies_sum 0\n\
             exposer_request_latencies_count 0\n"
        );
    }

    #[test]
    fn openmetrics_names_counter_families_without_total() {
        let text =
            String::from_utf8(ExposerStats::default().render(Format::OpenMetrics, Instant::now()))
                .unwrap();
        assert!(text.contains(
            "# TYPE exposer_transferred_bytes counter\nexposer_transferred_bytes_total 0\n"
        ));
        assert!(text.contains("# TYPE exposer_scrapes counter\nexposer_scrapes_total 0\n"));
        assert!(text.contains("# TYPE exposer_request_latencies summary\n"));
        assert!(!text.contains("# EOF"));
    }

    #[test]
    fn quantiles_cover_the_window_and_totals_everything() {
        let mut stats = ExposerStats::default();
        let start = Instant::now();
        // An old, slow answer that leaves the window.
        stats.record(1000, Duration::from_micros(9_999_999), start);
        let later = start + WINDOW + Duration::from_secs(1);
        for us in 1..=100u64 {
            stats.record(10, Duration::from_micros(us), later);
        }
        let text = String::from_utf8(stats.render(Format::Text, later)).unwrap();
        assert!(
            text.contains("exposer_transferred_bytes_total 2000\n"),
            "{text}"
        );
        assert!(text.contains("exposer_scrapes_total 101\n"));
        assert!(text.contains("exposer_request_latencies{quantile=\"0.5\"} 50\n"));
        assert!(text.contains("exposer_request_latencies{quantile=\"0.9\"} 90\n"));
        assert!(text.contains("exposer_request_latencies{quantile=\"0.99\"} 99\n"));
        assert!(text.contains("exposer_request_latencies_sum 10005049\n"));
        assert!(text.contains("exposer_request_latencies_count 101\n"));
        // Nothing in the window a minute later: NaN again, totals kept.
        let text =
            String::from_utf8(stats.render(Format::Text, later + WINDOW + Duration::from_secs(1)))
                .unwrap();
        assert!(text.contains("exposer_request_latencies{quantile=\"0.5\"} NaN\n"));
        assert!(text.contains("exposer_request_latencies_count 101\n"));
    }

    #[test]
    fn the_window_is_bounded() {
        let mut stats = ExposerStats::default();
        let now = Instant::now();
        for us in 0..(WINDOW_SAMPLES as u64 + 500) {
            stats.record(1, Duration::from_micros(us), now);
        }
        assert_eq!(stats.window.len(), WINDOW_SAMPLES);
        // The oldest 500 were dropped: the median is of the last ones.
        assert_eq!(
            nearest_rank(
                &stats.window.iter().map(|&(_, v)| v).collect::<Vec<_>>(),
                0.0
            ),
            Some(500)
        );
    }

    #[test]
    fn nearest_rank_quantiles() {
        assert_eq!(nearest_rank(&[], 0.5), None);
        assert_eq!(nearest_rank(&[7], 0.99), Some(7));
        assert_eq!(nearest_rank(&[1, 2], 0.5), Some(1));
        assert_eq!(nearest_rank(&[1, 2], 0.9), Some(2));
    }
}
