//! The read view: one agent's totals as plain numbers, cheap to clone, copy
//! and subtract.

use std::sync::Arc;

use crate::families::{histogram, slot, Kind, Source, SCALARS};
use crate::series::Series;

/// One latency histogram: per-bucket counts over fixed bounds, with the
/// count, sum, smallest and largest value of what it observed.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramTotals {
    bounds: Arc<[f64]>,
    counts: Vec<u64>,
    count: u64,
    sum: u64,
    /// `u64::MAX` before the first observation.
    min: u64,
    max: u64,
}

impl Default for HistogramTotals {
    /// An empty histogram without bounds (one `+Inf` bucket).
    fn default() -> Self {
        HistogramTotals::new(Arc::from([]))
    }
}

impl HistogramTotals {
    /// An empty histogram over `bounds` (upper bounds, µs, without `+Inf`).
    pub fn new(bounds: Arc<[f64]>) -> HistogramTotals {
        let counts = vec![0; bounds.len() + 1];
        HistogramTotals {
            bounds,
            counts,
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// A histogram read back from its per-bucket `counts` (one per bound,
    /// then `+Inf`) and the `sum` of its values, as a publisher that keeps
    /// only those stores it; the smallest and largest value are unknown.
    ///
    /// # Panics
    ///
    /// If `counts` does not have one more entry than `bounds`.
    pub fn from_counts(bounds: Arc<[f64]>, counts: Vec<u64>, sum: u64) -> HistogramTotals {
        assert_eq!(
            counts.len(),
            bounds.len() + 1,
            "one count per bound and one for +Inf"
        );
        let count = counts.iter().fold(0u64, |a, &c| a.saturating_add(c));
        HistogramTotals {
            bounds,
            counts,
            count,
            sum,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Adds one observation that falls in bucket `bucket`.
    #[inline]
    pub(crate) fn observe(&mut self, bucket: usize, value: u64) {
        self.counts[bucket] += 1;
        self.count += 1;
        self.sum = self.sum.saturating_add(value);
        self.min = self.min.min(value);
        self.max = self.max.max(value);
    }

    /// The upper bounds, µs, without `+Inf`.
    pub fn bounds(&self) -> &[f64] {
        &self.bounds
    }

    /// The bounds, shared.
    pub fn shared_bounds(&self) -> &Arc<[f64]> {
        &self.bounds
    }

    /// Per-bucket (not cumulative) counts: one per bound, then `+Inf`.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// How many values were observed.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Their sum, µs (saturating).
    pub fn sum(&self) -> u64 {
        self.sum
    }

    /// The smallest and the largest value observed, when known (not for a
    /// histogram made by [`HistogramTotals::from_counts`] or
    /// [`HistogramTotals::since`]).
    pub fn min_max(&self) -> Option<(u64, u64)> {
        (self.min <= self.max).then_some((self.min, self.max))
    }

    /// The `q`-quantile (`0 ≤ q ≤ 1`) of the observed values, estimated as
    /// Prometheus's `histogram_quantile` does: the bucket holding the rank
    /// `q × count` is found and the value interpolated linearly between its
    /// lower bound (0 for the first bucket) and its upper bound; a rank in the
    /// `+Inf` bucket gives the highest finite bound. `None` when nothing was
    /// observed or `q` is outside `0..=1` (or NaN).
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.count == 0 || !(0.0..=1.0).contains(&q) {
            return None;
        }
        let rank = q * self.count as f64;
        let mut below = 0u64;
        for (i, &n) in self.counts.iter().enumerate() {
            let cumulative = below.saturating_add(n);
            if cumulative as f64 >= rank {
                let Some(&upper) = self.bounds.get(i) else {
                    // The +Inf bucket: the highest finite bound.
                    return self.bounds.last().copied();
                };
                let lower = if i == 0 { 0.0 } else { self.bounds[i - 1] };
                if n == 0 {
                    // Only for rank 0 before the first observation's bucket.
                    return Some(lower);
                }
                let within = (rank - below as f64) / n as f64;
                return Some(lower + (upper - lower) * within);
            }
            below = cumulative;
        }
        self.bounds.last().copied()
    }

    /// What was observed since `earlier` (an earlier reading of the same
    /// histogram): bucket by bucket, count and sum, the differences
    /// (0 where `earlier` is larger). The smallest and largest value of the
    /// difference are unknown.
    pub fn since(&self, earlier: &HistogramTotals) -> HistogramTotals {
        let counts = self
            .counts
            .iter()
            .enumerate()
            .map(|(i, &n)| n.saturating_sub(earlier.counts.get(i).copied().unwrap_or(0)))
            .collect();
        HistogramTotals {
            bounds: Arc::clone(&self.bounds),
            counts,
            count: self.count.saturating_sub(earlier.count),
            sum: self.sum.saturating_sub(earlier.sum),
            min: u64::MAX,
            max: 0,
        }
    }

    /// Copies `other` into `self`, reusing `self`'s allocation.
    pub fn copy_from(&mut self, other: &HistogramTotals) {
        if !Arc::ptr_eq(&self.bounds, &other.bounds) {
            self.bounds = Arc::clone(&other.bounds);
        }
        self.counts.clone_from(&other.counts);
        self.count = other.count;
        self.sum = other.sum;
        self.min = other.min;
        self.max = other.max;
    }
}

/// Everything one agent has recorded: the read view of the model.
///
/// The fixed readings are indexed by [`slot`], the histograms by
/// [`histogram`]; the run-time series come in order of first sight (the
/// known error statuses first) and only ever grow, so a later reading of the
/// same agent extends an earlier one. Clone it to keep a reading;
/// [`Totals::since`] subtracts two.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Totals {
    pub(crate) fixed: [u64; slot::COUNT],
    pub(crate) histograms: [HistogramTotals; histogram::COUNT],
    pub(crate) series: Arc<[Series]>,
    pub(crate) values: Vec<u64>,
    pub(crate) events: u64,
}

impl Totals {
    /// Totals put together from their parts, as a publisher stores them
    /// (the fixed readings, the histograms, the series with their values,
    /// and how many events were folded in).
    ///
    /// # Panics
    ///
    /// If `series` and `values` differ in length.
    pub fn from_parts(
        fixed: [u64; slot::COUNT],
        histograms: [HistogramTotals; histogram::COUNT],
        series: Arc<[Series]>,
        values: Vec<u64>,
        events: u64,
    ) -> Totals {
        assert_eq!(series.len(), values.len(), "one value per series");
        Totals {
            fixed,
            histograms,
            series,
            values,
            events,
        }
    }

    /// The fixed reading `slot` (a [`slot`] index).
    #[inline]
    pub fn fixed(&self, slot: usize) -> u64 {
        self.fixed[slot]
    }

    /// Every fixed reading, indexed by [`slot`].
    pub fn fixed_readings(&self) -> &[u64; slot::COUNT] {
        &self.fixed
    }

    /// The value of a scalar family's series ([`SCALARS`]): its fixed
    /// reading, or registered minus deregistered bytes (which may be
    /// negative) for `agent_memory_registered_bytes`.
    pub fn value_of(&self, source: Source) -> i128 {
        match source {
            Source::Slot(s) => i128::from(self.fixed[s]),
            Source::RegisteredNow => self.registered_now(),
        }
    }

    /// Bytes of memory registered now: registered minus deregistered (may be
    /// negative when deregistrations were recorded whose registrations were not).
    pub fn registered_now(&self) -> i128 {
        i128::from(self.fixed[slot::MEM_REGISTERED])
            - i128::from(self.fixed[slot::MEM_DEREGISTERED])
    }

    /// The histogram `h` (a [`histogram`] index).
    pub fn histogram(&self, h: usize) -> &HistogramTotals {
        &self.histograms[h]
    }

    /// Both histograms, indexed by [`histogram`].
    pub fn histograms(&self) -> &[HistogramTotals; histogram::COUNT] {
        &self.histograms
    }

    /// The run-time series with their values, in order of first sight.
    pub fn series(&self) -> impl ExactSizeIterator<Item = (&Series, u64)> + '_ {
        self.series.iter().zip(self.values.iter().copied())
    }

    /// The run-time series, shared (their values are [`Totals::series_values`]).
    pub fn series_list(&self) -> &Arc<[Series]> {
        &self.series
    }

    /// The run-time series' values, index for index with [`Totals::series_list`].
    pub fn series_values(&self) -> &[u64] {
        &self.values
    }

    /// The error counts by status (lower case, without `NIXL_ERR_`), the
    /// known statuses first.
    pub fn errors(&self) -> impl Iterator<Item = (&str, u64)> + '_ {
        self.series().filter_map(|(s, v)| match s {
            Series::Error { status } => Some((&**status, v)),
            Series::Counter { .. } => None,
        })
    }

    /// The errors of `status`, if it has a series.
    pub fn error_count(&self, status: &str) -> Option<u64> {
        self.errors().find(|(s, _)| *s == status).map(|(_, v)| v)
    }

    /// Events folded in so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Copies `other` into `self`, reusing `self`'s allocations (the series
    /// list is shared, not copied).
    pub fn copy_from(&mut self, other: &Totals) {
        self.fixed = other.fixed;
        for (dst, src) in self.histograms.iter_mut().zip(&other.histograms) {
            dst.copy_from(src);
        }
        if !Arc::ptr_eq(&self.series, &other.series) {
            self.series = Arc::clone(&other.series);
        }
        self.values.clone_from(&other.values);
        self.events = other.events;
    }

    /// What happened since `earlier`, an earlier reading of the same agent:
    /// every counter (the counter families' readings, the histograms, the
    /// series values, the events) is the difference (0 where `earlier` is
    /// larger; series `earlier` does not have count from 0), while the
    /// gauges (last values) are this reading's. Divided by the time between
    /// the readings, the counters are rates; the histogram's
    /// [`quantile`](HistogramTotals::quantile) is then that of the values
    /// observed in between. [`Totals::registered_now`] of a difference is the
    /// net registration in between.
    pub fn since(&self, earlier: &Totals) -> Totals {
        let mut fixed = self.fixed;
        for family in &SCALARS {
            if let (Source::Slot(s), Kind::Counter) = (family.source, family.kind) {
                fixed[s] = self.fixed[s].saturating_sub(earlier.fixed[s]);
            }
        }
        let values = self
            .values
            .iter()
            .enumerate()
            .map(|(i, &v)| v.saturating_sub(earlier.values.get(i).copied().unwrap_or(0)))
            .collect();
        Totals {
            fixed,
            histograms: [0, 1].map(|h| self.histograms[h].since(&earlier.histograms[h])),
            series: Arc::clone(&self.series),
            values,
            events: self.events.saturating_sub(earlier.events),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(bounds: &[f64], values: &[u64]) -> HistogramTotals {
        let mut h = HistogramTotals::new(bounds.into());
        for &v in values {
            let bucket = bounds
                .iter()
                .position(|&b| v as f64 <= b)
                .unwrap_or(bounds.len());
            h.observe(bucket, v);
        }
        h
    }

    #[test]
    fn quantiles_interpolate_inside_the_bucket_as_prometheus_does() {
        // 10 values in (0, 10], 10 in (10, 20], none above.
        let values: Vec<u64> = (1..=10).chain(11..=20).collect();
        let h = histogram(&[10.0, 20.0, 40.0], &values);
        assert_eq!(h.count(), 20);
        assert_eq!(h.min_max(), Some((1, 20)));
        // rank 10 is the end of the first bucket; rank 15 halfway through the second.
        assert_eq!(h.quantile(0.5), Some(10.0));
        assert_eq!(h.quantile(0.75), Some(15.0));
        assert_eq!(h.quantile(1.0), Some(20.0));
        // rank 2 of 10 in (0, 10]: 2.
        assert_eq!(h.quantile(0.1), Some(2.0));
        assert_eq!(h.quantile(0.0), Some(0.0));
        assert_eq!(h.quantile(1.5), None);
        assert_eq!(h.quantile(f64::NAN), None);
        assert_eq!(HistogramTotals::new([1.0].into()).quantile(0.5), None);
    }

    #[test]
    fn a_rank_in_the_overflow_bucket_gives_the_highest_bound() {
        let h = histogram(&[10.0, 100.0], &[5, 1_000, 2_000, 3_000]);
        assert_eq!(h.quantile(0.99), Some(100.0));
        assert_eq!(h.quantile(0.25), Some(10.0));
        // Rank 0 with empty leading buckets: the lower bound of the first.
        let late = histogram(&[10.0, 100.0], &[50]);
        assert_eq!(late.quantile(0.0), Some(0.0));
        assert_eq!(late.quantile(0.5), Some(55.0));
    }

    #[test]
    fn differences_subtract_counters_and_keep_gauges() {
        let bounds: Arc<[f64]> = [10.0].into();
        let mut earlier = Totals {
            histograms: [
                HistogramTotals::new(Arc::clone(&bounds)),
                HistogramTotals::new(Arc::clone(&bounds)),
            ],
            series: Arc::from(vec![Series::Error {
                status: "backend".into(),
            }]),
            values: vec![2],
            ..Totals::default()
        };
        earlier.fixed[slot::TX_BYTES] = 100;
        earlier.fixed[slot::TX_LAST] = 10;
        earlier.histograms[0].observe(0, 5);
        earlier.events = 3;
        let mut later = earlier.clone();
        later.fixed[slot::TX_BYTES] = 160;
        later.fixed[slot::TX_LAST] = 60;
        later.fixed[slot::MEM_REGISTERED] = 50;
        later.histograms[0].observe(1, 50);
        later.histograms[0].observe(1, 70);
        later.series = Arc::from(vec![
            Series::Error {
                status: "backend".into(),
            },
            Series::Error {
                status: "fresh".into(),
            },
        ]);
        later.values = vec![5, 1];
        later.events = 10;
        let d = later.since(&earlier);
        assert_eq!(d.fixed(slot::TX_BYTES), 60);
        assert_eq!(d.fixed(slot::TX_LAST), 60);
        assert_eq!(d.registered_now(), 50);
        assert_eq!(d.histogram(0).counts(), [0, 2]);
        assert_eq!(d.histogram(0).count(), 2);
        assert_eq!(d.histogram(0).sum(), 120);
        assert_eq!(d.histogram(0).min_max(), None);
        assert_eq!(
            d.errors().collect::<Vec<_>>(),
            [("backend", 3), ("fresh", 1)]
        );
        assert_eq!(d.error_count("fresh"), Some(1));
        assert_eq!(d.error_count("none"), None);
        assert_eq!(d.events(), 7);
    }

    #[test]
    fn copies_share_the_series_list() {
        let t = Totals {
            series: Arc::from(vec![Series::Error { status: "x".into() }]),
            values: vec![1],
            ..Totals::default()
        };
        let mut copy = Totals::default();
        copy.copy_from(&t);
        assert_eq!(copy, t);
        assert!(Arc::ptr_eq(copy.series_list(), t.series_list()));
    }
}
