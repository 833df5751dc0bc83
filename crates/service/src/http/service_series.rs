//! The service's own series: what this instance did since it started (records
//! accepted and refused, store latency, whether the store answers, the duration of
//! the jobs it accepted). They are per instance, unlike the families read from the
//! store, which every instance on one store shows alike.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use super::text_format::{float, TextFormat};

/// Why a posted record was refused: the `cause` label of
/// `tao_service_records_refused_total`, the `error` member of the answer.
pub(crate) const REFUSAL_CAUSES: [&str; 10] = [
    "bad_record",
    "unknown_key",
    "value_out_of_bounds",
    "key_limit_reached",
    "request_timeout",
    "body_too_large",
    "unsupported_media_type",
    "store_unavailable",
    "store_outcome_unknown",
    "internal",
];

/// Bounds (seconds) of the store latency histogram.
const STORE_BOUNDS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

/// Bounds (seconds) of the job duration histogram: a minute to a week.
const JOB_BOUNDS: [f64; 12] = [
    60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0, 28800.0, 86400.0, 172800.0, 345600.0,
    604800.0,
];

/// A histogram with fixed bounds.
#[derive(Debug)]
struct Histogram {
    bounds: &'static [f64],
    /// Per bucket (not cumulative), the last one above every bound; and the sum.
    state: Mutex<(Vec<u64>, f64)>,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            state: Mutex::new((vec![0; bounds.len() + 1], 0.0)),
        }
    }

    fn observe(&self, value: f64) {
        let bucket = self
            .bounds
            .iter()
            .position(|&b| value <= b)
            .unwrap_or(self.bounds.len());
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.0[bucket] += 1;
        state.1 += value;
    }

    /// The `_bucket`, `_sum` and `_count` samples of `family`, each with `labels`
    /// (the inside of the braces, empty for none) before `le`.
    fn write(&self, text: &mut TextFormat, family: &str, labels: &str) {
        let (counts, sum) = self.state.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let bucket = format!("{family}_bucket");
        let prefix = if labels.is_empty() {
            String::new()
        } else {
            format!("{labels},")
        };
        let mut cumulative = 0;
        for (i, count) in counts.iter().enumerate() {
            cumulative += count;
            let le = self.bounds.get(i).copied().unwrap_or(f64::INFINITY);
            text.sample(
                &bucket,
                &format!("{prefix}le=\"{}\"", float(le)),
                cumulative,
            );
        }
        text.sample(&format!("{family}_sum"), labels, float(sum));
        text.sample(&format!("{family}_count"), labels, cumulative);
    }
}

/// A store operation timed in `tao_service_store_duration_seconds`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum StoreOperation {
    /// A write transaction (one batch of records).
    Write,
    /// A read of the whole map (`GET /api/v1/metrics`, `GET /metrics`).
    Read,
}

/// This instance's own figures.
#[derive(Debug)]
pub(crate) struct ServiceSeries {
    accepted: AtomicU64,
    refused: [AtomicU64; REFUSAL_CAUSES.len()],
    store_write: Histogram,
    store_read: Histogram,
    store_up: AtomicBool,
    /// Whether the last write transaction failed (`/healthz` then checks that
    /// the store takes writes).
    write_failed: AtomicBool,
    job_duration: Histogram,
    /// Full reads of the store under way, and refused at the bound.
    reads_in_progress: AtomicU64,
    reads_refused: AtomicU64,
}

impl Default for ServiceSeries {
    fn default() -> Self {
        ServiceSeries {
            accepted: AtomicU64::new(0),
            refused: Default::default(),
            store_write: Histogram::new(&STORE_BOUNDS),
            store_read: Histogram::new(&STORE_BOUNDS),
            // The service starts only once its writer opened the store.
            store_up: AtomicBool::new(true),
            write_failed: AtomicBool::new(false),
            job_duration: Histogram::new(&JOB_BOUNDS),
            reads_in_progress: AtomicU64::new(0),
            reads_refused: AtomicU64::new(0),
        }
    }
}

impl ServiceSeries {
    /// A record was stored; its `time_lapsed` (seconds) when it has one above 0.
    pub fn accepted(&self, time_lapsed: Option<i64>) {
        self.accepted.fetch_add(1, Ordering::Relaxed);
        if let Some(seconds) = time_lapsed.filter(|&t| t > 0) {
            self.job_duration.observe(seconds as f64);
        }
    }

    /// A record was refused for `cause` (one of [`REFUSAL_CAUSES`]; any other
    /// counts as `internal`).
    pub fn refused(&self, cause: &str) {
        let index = REFUSAL_CAUSES
            .iter()
            .position(|c| *c == cause)
            .unwrap_or(REFUSAL_CAUSES.len() - 1);
        self.refused[index].fetch_add(1, Ordering::Relaxed);
    }

    /// A store operation took `elapsed` and succeeded or not.
    pub fn store(&self, operation: StoreOperation, elapsed: Duration, succeeded: bool) {
        let histogram = match operation {
            StoreOperation::Write => &self.store_write,
            StoreOperation::Read => &self.store_read,
        };
        histogram.observe(elapsed.as_secs_f64());
        self.store_up.store(succeeded, Ordering::Relaxed);
        if let StoreOperation::Write = operation {
            self.write_failed.store(!succeeded, Ordering::Relaxed);
        }
    }

    /// Whether the last write transaction failed.
    pub fn write_failed(&self) -> bool {
        self.write_failed.load(Ordering::Relaxed)
    }

    /// A write succeeded outside the writer (the health check's probe).
    pub fn write_probed(&self) {
        self.write_failed.store(false, Ordering::Relaxed);
    }

    /// A full read of the store began.
    pub fn read_started(&self) {
        self.reads_in_progress.fetch_add(1, Ordering::Relaxed);
    }

    /// A full read of the store ended.
    pub fn read_finished(&self) {
        self.reads_in_progress.fetch_sub(1, Ordering::Relaxed);
    }

    /// A full read was refused: the bound on reads at once was reached.
    pub fn read_refused(&self) {
        self.reads_refused.fetch_add(1, Ordering::Relaxed);
    }

    /// Writes the families.
    pub fn write(&self, text: &mut TextFormat) {
        text.family(
            "tao_service_reads_in_progress",
            "gauge",
            "Full reads of the store (GET /metrics, GET /api/v1/metrics) this instance is serving, this one included.",
        );
        text.sample(
            "tao_service_reads_in_progress",
            "",
            self.reads_in_progress.load(Ordering::Relaxed),
        );
        text.family(
            "tao_service_reads_refused_total",
            "counter",
            "Full reads of the store this instance refused (503 too_many_reads) because serve --max-concurrent-reads were under way.",
        );
        text.sample(
            "tao_service_reads_refused_total",
            "",
            self.reads_refused.load(Ordering::Relaxed),
        );
        text.family(
            "tao_service_records_accepted_total",
            "counter",
            "Records this instance stored (answered 201) since it started.",
        );
        text.sample(
            "tao_service_records_accepted_total",
            "",
            self.accepted.load(Ordering::Relaxed),
        );
        text.family(
            "tao_service_records_refused_total",
            "counter",
            "Records this instance refused since it started, by cause (the error member of the answer); nothing of them was stored.",
        );
        for (cause, count) in REFUSAL_CAUSES.iter().zip(&self.refused) {
            text.sample(
                "tao_service_records_refused_total",
                &format!("cause=\"{cause}\""),
                count.load(Ordering::Relaxed),
            );
        }
        text.family(
            "tao_service_store_duration_seconds",
            "histogram",
            "Time this instance's store operations took: write (one transaction applying a batch of records) and read (the whole map, for a GET), in seconds.",
        );
        self.store_write.write(
            text,
            "tao_service_store_duration_seconds",
            "operation=\"write\"",
        );
        self.store_read.write(
            text,
            "tao_service_store_duration_seconds",
            "operation=\"read\"",
        );
        text.family(
            "tao_service_store_up",
            "gauge",
            "1 when this instance's last store operation succeeded, 0 when it failed.",
        );
        text.sample(
            "tao_service_store_up",
            "",
            u8::from(self.store_up.load(Ordering::Relaxed)),
        );
        text.family(
            "tao_service_job_duration_seconds",
            "histogram",
            "Duration (time_lapsed, seconds) of the jobs whose records this instance stored since it started, jobs with time_lapsed above 0.",
        );
        self.job_duration
            .write(text, "tao_service_job_duration_seconds", "");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_land_in_their_series() {
        let series = ServiceSeries::default();
        series.accepted(Some(120));
        series.accepted(Some(0));
        series.accepted(None);
        series.refused("unknown_key");
        series.refused("something_new");
        series.store(StoreOperation::Write, Duration::from_millis(2), false);
        let mut text = TextFormat::new();
        series.write(&mut text);
        let text = text.finish();
        for line in [
            "tao_service_records_accepted_total 3",
            "tao_service_records_refused_total{cause=\"unknown_key\"} 1",
            "tao_service_records_refused_total{cause=\"internal\"} 1",
            "tao_service_records_refused_total{cause=\"bad_record\"} 0",
            "tao_service_store_duration_seconds_bucket{operation=\"write\",le=\"0.001\"} 0",
            "tao_service_store_duration_seconds_bucket{operation=\"write\",le=\"0.0025\"} 1",
            "tao_service_store_duration_seconds_count{operation=\"write\"} 1",
            "tao_service_store_duration_seconds_count{operation=\"read\"} 0",
            "tao_service_store_up 0",
            "tao_service_job_duration_seconds_bucket{le=\"60\"} 0",
            "tao_service_job_duration_seconds_bucket{le=\"300\"} 1",
            "tao_service_job_duration_seconds_bucket{le=\"+Inf\"} 1",
            "tao_service_job_duration_seconds_sum 120",
            "tao_service_job_duration_seconds_count 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
    }
}
