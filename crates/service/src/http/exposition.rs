//! `GET /metrics`: the service's exposition, by the Prometheus naming conventions.
//!
//! * the families read from the store ([`stored_families`](super::stored_families)):
//!   `tao_jobs_total`, `tao_job_duration_seconds_total`, `tao_job_gpu_seconds_total`,
//!   `tao_job_gpus_total`, `tao_last_updated_timestamp_seconds`, and with
//!   `serve --metrics-legacy-keys` the JSON map's other keys as `tao_legacy_value{key}`;
//! * this instance's own series ([`service_series`](super::service_series)) and the
//!   label bound's counter.
//!
//! When the store cannot be read the answer is still `200`, with the instance's own
//! series only (`tao_service_store_up 0` says why the others are missing), so that
//! an outage of the store is an alert rather than a failed scrape.

use nixl_telemetry_processor::Metrics;

use super::label_bound::LabelBound;
use super::service_series::ServiceSeries;
use super::stored_families::write_stored_families;
use super::text_format::TextFormat;

/// What `/metrics` shows besides the stored map.
#[derive(Debug)]
pub(crate) struct ExpositionState {
    /// This instance's own series.
    pub series: std::sync::Arc<ServiceSeries>,
    /// The bound on distinct label values.
    pub bound: LabelBound,
    /// Whether the legacy keys are shown (as `tao_legacy_value{key}`).
    pub legacy_keys: bool,
}

/// The exposition of `metrics` (`None`: the store could not be read).
#[cfg(test)]
pub(crate) fn exposition(state: &ExpositionState, metrics: Option<&Metrics>) -> String {
    let stored = metrics.map(|m| stored_families(state, m));
    exposition_of(state, stored.as_deref())
}

/// The families read from the store, as text: the part of the exposition a read
/// of the store renders (and requests can share).
pub(crate) fn stored_families(state: &ExpositionState, metrics: &Metrics) -> String {
    let mut text = TextFormat::new();
    let mut admission = state.bound.admission();
    write_stored_families(&mut text, metrics, &mut admission, state.legacy_keys);
    drop(admission);
    text.finish()
}

/// The exposition with the stored families' text `stored` (`None`: the store
/// could not be read), the label bound's counter and the own series as they are
/// now.
pub(crate) fn exposition_of(state: &ExpositionState, stored: Option<&str>) -> String {
    let mut text = TextFormat::new();
    state.bound.admission().write(&mut text);
    state.series.write(&mut text);
    let own = text.finish();
    let stored = stored.unwrap_or("");
    let mut out = String::with_capacity(stored.len() + own.len());
    out.push_str(stored);
    out.push_str(&own);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_the_store_only_the_own_series_are_shown() {
        let state = ExpositionState {
            series: Default::default(),
            bound: LabelBound::new(10),
            legacy_keys: false,
        };
        let mut metrics = Metrics::new();
        metrics
            .insert(r#"tao_job_total{tao_action="train"}"#, 1)
            .unwrap();
        let text = exposition(&state, Some(&metrics));
        assert!(
            text.contains("tao_jobs_total{action=\"train\"} 1\n"),
            "{text}"
        );
        assert!(text.contains("tao_service_label_values_folded_total{label=\"action\"} 0\n"));
        let text = exposition(&state, None);
        assert!(!text.contains("tao_jobs_total"), "{text}");
        assert!(text.contains("tao_service_store_up 1\n"), "{text}");
    }
}
