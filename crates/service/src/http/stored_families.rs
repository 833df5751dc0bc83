//! The families read from the store, by the naming conventions: the labeled
//! builder's four keys (`tao_job_total{tao_action="train",…}` and its kin) under
//! conventional names with the attribute names as labels, the time of the last
//! record, and, when asked for, every other key of the JSON map as one family with
//! a `key` label. The JSON map itself is untouched.

use std::collections::BTreeMap;

use nixl_telemetry_processor::builders as labeled;
use nixl_telemetry_processor::{Metrics, Timestamp};

use super::label_bound::Admission;
use super::text_format::{escape_label_value, float, TextFormat};

/// A labeled family as stored and as exposed.
struct LabeledFamily {
    /// The labeled builder's name, in the store.
    stored: &'static str,
    /// The name on `/metrics`.
    exposed: &'static str,
    help: &'static str,
}

/// The labeled families, in exposition order.
const LABELED: [LabeledFamily; 4] = [
    LabeledFamily {
        stored: labeled::JOB_TOTAL,
        exposed: "tao_jobs_total",
        help: "Jobs reported, by the job's attributes (labels named after the attribute registry; status is pass or fail, primary_gpu the job's main GPU type, gpu_count its GPUs).",
    },
    LabeledFamily {
        stored: labeled::JOB_DURATION_SUM,
        exposed: "tao_job_duration_seconds_total",
        help: "Sum of the jobs' time_lapsed in seconds, by the job's attributes (jobs with time_lapsed above 0).",
    },
    LabeledFamily {
        stored: labeled::JOB_GPU_TIME_SUM,
        exposed: "tao_job_gpu_seconds_total",
        help: "GPU time of the jobs: GPU count times time_lapsed, in GPU-seconds, by the job's attributes.",
    },
    LabeledFamily {
        stored: labeled::JOB_GPU_TOTAL,
        exposed: "tao_job_gpus_total",
        help: "GPUs used by the jobs reported, one per GPU of a job's list, by GPU type.",
    },
];

/// The family of the legacy keys (with `serve --metrics-legacy-keys`).
pub(crate) const LEGACY_FAMILY: &str = "tao_legacy_value";

/// Writes the families of the stored `metrics`: the labeled ones with their values
/// bounded by `admission`, the time of the last record, and the other keys as
/// [`LEGACY_FAMILY`] when `legacy_keys`.
pub(crate) fn write_stored_families(
    text: &mut TextFormat,
    metrics: &Metrics,
    admission: &mut Admission<'_>,
    legacy_keys: bool,
) {
    let mut labeled_keys: Vec<(usize, &str, i64)> = Vec::new();
    let mut legacy: Vec<(&str, i64)> = Vec::new();
    for (key, value) in metrics.iter() {
        let family = key.split('{').next().unwrap_or(key);
        match LABELED.iter().position(|f| f.stored == family) {
            Some(index) => labeled_keys.push((index, key, value)),
            None if legacy_keys => legacy.push((key, value)),
            None => {}
        }
    }
    labeled_keys.sort_unstable();
    let mut series: Vec<BTreeMap<String, i128>> = vec![BTreeMap::new(); LABELED.len()];
    let mut unreadable = 0u64;
    let mut labels = String::new();
    for (index, key, value) in labeled_keys {
        let Some(pairs) = parse_labels(key) else {
            unreadable += 1;
            continue;
        };
        let mut pairs: Vec<(&str, &str)> = pairs
            .into_iter()
            .map(|(name, value)| {
                let name = exposed_label_name(name);
                (name, admission.value(name, value))
            })
            .collect();
        pairs.sort_unstable();
        labels.clear();
        for (i, (name, value)) in pairs.iter().enumerate() {
            if i > 0 {
                labels.push(',');
            }
            labels.push_str(name);
            labels.push_str("=\"");
            labels.push_str(value);
            labels.push('"');
        }
        *series[index].entry(labels.clone()).or_default() += i128::from(value);
    }
    for (family, samples) in LABELED.iter().zip(&series) {
        text.family(family.exposed, "counter", family.help);
        for (labels, value) in samples {
            text.sample(family.exposed, labels, value);
        }
    }
    text.family(
        "tao_stored_keys_unreadable",
        "gauge",
        "Stored keys of the labeled families that are not valid series (imported from a deployment that wrote label values unescaped), left out of the families above.",
    );
    text.sample("tao_stored_keys_unreadable", "", unreadable);
    if let Some(seconds) = metrics.last_updated().and_then(|text| unix_seconds(&text)) {
        text.family(
            "tao_last_updated_timestamp_seconds",
            "gauge",
            "The store's last_updated (the time of the last record applied, a local time unless it has an offset), in seconds since the Unix epoch.",
        );
        text.sample("tao_last_updated_timestamp_seconds", "", float(seconds));
    }
    if legacy_keys {
        text.family(
            LEGACY_FAMILY,
            "gauge",
            "A key of the JSON map (GET /api/v1/metrics) that no family above shows, with its value as stored.",
        );
        legacy.sort_unstable();
        for (key, value) in legacy {
            labels.clear();
            labels.push_str("key=\"");
            escape_label_value(&mut labels, key);
            labels.push('"');
            text.sample(LEGACY_FAMILY, &labels, value);
        }
    }
}

/// A stored label name on `/metrics`: without the labeled builder's `tao_`
/// prefix, unless what is left is not a label name of its own.
fn exposed_label_name(stored: &str) -> &str {
    match stored.strip_prefix("tao_") {
        Some(rest)
            if !rest.is_empty()
                && !rest.starts_with("__")
                && !rest.starts_with(|c: char| c.is_ascii_digit())
                && rest != "le"
                && rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
        {
            rest
        }
        _ => stored,
    }
}

/// The `(name, escaped value)` pairs of a key `family{name="value",…}`, or `None`
/// when it is not a valid series (a bare family has none).
fn parse_labels(key: &str) -> Option<Vec<(&str, &str)>> {
    let Some((_, rest)) = key.split_once('{') else {
        return Some(Vec::new());
    };
    let mut rest = rest;
    let mut pairs = Vec::new();
    loop {
        if rest == "}" {
            return Some(pairs);
        }
        let (name, after) = rest.split_once("=\"")?;
        let valid_name = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid_name {
            return None;
        }
        // The value ends at the first quote that is not escaped.
        let bytes = after.as_bytes();
        let mut i = 0;
        while i < bytes.len() && bytes[i] != b'"' {
            if bytes[i] == b'\\' {
                if !matches!(bytes.get(i + 1), Some(b'\\' | b'"' | b'n')) {
                    return None;
                }
                i += 1;
            } else if bytes[i] == b'\n' {
                return None;
            }
            i += 1;
        }
        if i >= bytes.len() {
            return None;
        }
        pairs.push((name, &after[..i]));
        rest = &after[i + 1..];
        match rest.strip_prefix(',') {
            Some(next) if next != "}" => rest = next,
            _ if rest == "}" => {}
            _ => return None,
        }
    }
}

/// `last_updated` as Unix seconds: with its offset, or as the local time.
fn unix_seconds(last_updated: &str) -> Option<f64> {
    use chrono::TimeZone;
    let time = Timestamp::parse_iso(last_updated).ok()?;
    let utc = match time.offset_seconds() {
        Some(offset) => time.naive() - chrono::Duration::seconds(i64::from(offset)),
        None => chrono::Local
            .from_local_datetime(&time.naive())
            .earliest()?
            .naive_utc(),
    };
    let utc = utc.and_utc();
    Some(utc.timestamp() as f64 + f64::from(utc.timestamp_subsec_micros()) / 1e6)
}

#[cfg(test)]
mod tests {
    use super::super::label_bound::LabelBound;
    use super::*;

    #[test]
    fn stored_keys_are_parsed_or_refused() {
        assert_eq!(parse_labels("a"), Some(vec![]));
        assert_eq!(
            parse_labels(r#"a{x="1",y="q\"{,}\\"}"#),
            Some(vec![("x", "1"), ("y", r#"q\"{,}\\"#)])
        );
        for bad in [
            r#"a{x="1""#,
            r#"a{x="1",}"#,
            r#"a{x="1"y="2"}"#,
            "a{x=\"a\nb\"}",
            r#"a{x="\q"}"#,
            r#"a{1x="1"}"#,
            r#"a{x="1"}z"#,
        ] {
            assert_eq!(parse_labels(bad), None, "{bad}");
        }
        assert_eq!(exposed_label_name("tao_action"), "action");
        assert_eq!(exposed_label_name("tao___x"), "tao___x");
        assert_eq!(exposed_label_name("tao_le"), "tao_le");
        assert_eq!(exposed_label_name("other"), "other");
    }

    #[test]
    fn labeled_keys_become_conventional_families() {
        let mut metrics = Metrics::new();
        for (key, value) in [
            (
                r#"tao_job_total{tao_action="train",tao_network="a",tao_status="pass"}"#,
                2,
            ),
            (
                r#"tao_job_total{tao_action="train",tao_network="b",tao_status="pass"}"#,
                3,
            ),
            (
                r#"tao_job_total{tao_action="train",tao_network="c",tao_status="fail"}"#,
                4,
            ),
            (
                r#"tao_job_total{tao_action="train",tao_network="d",tao_status="pass"}"#,
                5,
            ),
            (
                r#"tao_job_duration_sum{tao_action="train",tao_network="a",tao_status="pass"}"#,
                60,
            ),
            (r#"tao_job_gpu_total{tao_gpu_type="A100"}"#, 8),
            ("total_action_train_pass", 5),
            (r#"tao_job_total{tao_action="x"y"}"#, 1),
        ] {
            metrics.insert(key, value).unwrap();
        }
        metrics.set_last_updated(Some("2025-01-13T10:00:00+01:00".into()));
        let bound = LabelBound::new(2);
        let mut text = TextFormat::new();
        write_stored_families(&mut text, &metrics, &mut bound.admission(), true);
        let text = text.finish();
        for line in [
            "# TYPE tao_jobs_total counter",
            r#"tao_jobs_total{action="train",network="a",status="pass"} 2"#,
            r#"tao_jobs_total{action="train",network="b",status="pass"} 3"#,
            r#"tao_jobs_total{action="train",network="other",status="fail"} 4"#,
            r#"tao_jobs_total{action="train",network="other",status="pass"} 5"#,
            r#"tao_job_duration_seconds_total{action="train",network="a",status="pass"} 60"#,
            "# TYPE tao_job_gpu_seconds_total counter",
            r#"tao_job_gpus_total{gpu_type="A100"} 8"#,
            "tao_stored_keys_unreadable 1",
            "tao_last_updated_timestamp_seconds 1736758800",
            r#"tao_legacy_value{key="total_action_train_pass"} 5"#,
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
        assert!(!text.contains("tao_legacy_value{key=\"tao_job"), "{text}");
        // Folded values add up into one series.
        let bound = LabelBound::new(1);
        let mut text = TextFormat::new();
        write_stored_families(&mut text, &metrics, &mut bound.admission(), false);
        let text = text.finish();
        for line in [
            r#"tao_jobs_total{action="train",network="a",status="pass"} 2"#,
            r#"tao_jobs_total{action="train",network="other",status="pass"} 8"#,
            r#"tao_jobs_total{action="train",network="other",status="other"} 4"#,
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
        assert!(!text.contains("tao_legacy_value"), "{text}");
    }
}
