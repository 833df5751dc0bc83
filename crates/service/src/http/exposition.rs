//! `GET /metrics`: the stored map in Prometheus text, rendered by the processor's
//! own renderer (as `nixl-telemetry process --format prometheus`).

use nixl_telemetry_processor::{
    render_prometheus, split_series, MetricKind, Metrics, PrometheusKeyError,
};

/// The exposition of `metrics`. Keys that are not valid series (imported from a TAO
/// deployment, whose processor writes label values unescaped) are left out, and a
/// comment line says how many and names the first.
pub(crate) fn exposition(
    metrics: &Metrics,
    kind_of: impl Fn(&str) -> Option<MetricKind>,
) -> Result<String, PrometheusKeyError> {
    let mut invalid: Vec<&str> = metrics
        .iter()
        .filter(|(key, _)| split_series(key).is_err())
        .map(|(key, _)| key)
        .collect();
    if invalid.is_empty() {
        return render_prometheus(metrics, kind_of);
    }
    invalid.sort_unstable();
    let mut shown = Metrics::new();
    for (key, value) in metrics.iter() {
        if split_series(key).is_ok() {
            // Keys of a map are never `last_updated`.
            let _ = shown.insert(key, value);
        }
    }
    shown.set_last_updated(metrics.last_updated().map(|t| t.into_owned()));
    let first: String = invalid[0]
        .chars()
        .flat_map(|c| match c {
            '\n' => vec!['\\', 'n'],
            c => vec![c],
        })
        .collect();
    Ok(format!(
        "# nixl-telemetry: {} stored key(s) are not valid Prometheus series and are left out; first: {first}\n{}",
        invalid.len(),
        render_prometheus(&shown, kind_of)?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_series_are_left_out_and_counted() {
        let mut metrics = Metrics::new();
        metrics.insert("good_total", 1).unwrap();
        metrics.insert("m{a=\"x\"y\"}", 2).unwrap();
        metrics.insert("bad\nkey", 3).unwrap();
        metrics.set_last_updated(Some("2025-01-01T00:00:00".into()));
        let text = exposition(&metrics, |_| Some(MetricKind::Counter)).unwrap();
        assert_eq!(
            text,
            "# nixl-telemetry: 2 stored key(s) are not valid Prometheus series and are left out; first: bad\\nkey\n\
             # last_updated 2025-01-01T00:00:00\n# TYPE good_total counter\ngood_total 1\n"
        );
        metrics = Metrics::new();
        metrics.insert("good_total", 1).unwrap();
        assert_eq!(
            exposition(&metrics, |_| None).unwrap(),
            render_prometheus(&metrics, |_| None).unwrap()
        );
    }
}
