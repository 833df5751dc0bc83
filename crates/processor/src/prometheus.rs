//! Prometheus text exposition (format 0.0.4) of a metrics map.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::builders::MetricKind;
use crate::error::PrometheusKeyError;
use crate::metrics::Metrics;

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b':'
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b':'
}

fn bad(key: &str, reason: &'static str) -> PrometheusKeyError {
    PrometheusKeyError {
        key: key.to_owned(),
        reason,
    }
}

/// Splits a metric key into its family name and checks that the whole key is a valid
/// series: `name` or `name{label="value",…}` with valid names and escaped values.
pub fn split_series(key: &str) -> Result<&str, PrometheusKeyError> {
    let bytes = key.as_bytes();
    let name_end = bytes.iter().position(|&b| b == b'{').unwrap_or(bytes.len());
    let name = &key[..name_end];
    match name.as_bytes().split_first() {
        Some((&first, rest)) if is_name_start(first) && rest.iter().all(|&b| is_name_byte(b)) => {}
        _ => {
            return Err(bad(
                key,
                "the metric name must match [a-zA-Z_:][a-zA-Z0-9_:]*",
            ))
        }
    }
    if name_end == bytes.len() {
        return Ok(name);
    }
    let mut i = name_end + 1;
    let mut label_names: Vec<&[u8]> = Vec::new();
    if bytes.get(i) == Some(&b'}') {
        i += 1;
    } else {
        loop {
            let start = i;
            match bytes.get(i) {
                Some(&b) if b.is_ascii_alphabetic() || b == b'_' => i += 1,
                _ => return Err(bad(key, "a label name must match [a-zA-Z_][a-zA-Z0-9_]*")),
            }
            while bytes
                .get(i)
                .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_')
            {
                i += 1;
            }
            let label = &bytes[start..i];
            if label_names.contains(&label) {
                return Err(bad(key, "a label name appears twice"));
            }
            label_names.push(label);
            if bytes.get(i..i + 2) != Some(b"=\"") {
                return Err(bad(key, "expected =\" after a label name"));
            }
            i += 2;
            loop {
                match bytes.get(i) {
                    None => return Err(bad(key, "unterminated label value")),
                    Some(b'"') => break,
                    Some(b'\n') => return Err(bad(key, "raw newline in a label value")),
                    Some(b'\\') => match bytes.get(i + 1) {
                        Some(b'\\' | b'"' | b'n') => i += 2,
                        _ => return Err(bad(key, "bad escape in a label value")),
                    },
                    Some(_) => i += 1,
                }
            }
            i += 1;
            match bytes.get(i) {
                Some(b',') => i += 1,
                Some(b'}') => {
                    i += 1;
                    break;
                }
                _ => return Err(bad(key, "expected , or } after a label value")),
            }
        }
    }
    if i != bytes.len() {
        return Err(bad(key, "text after the closing }"));
    }
    Ok(name)
}

/// Renders the metrics as Prometheus text: one `# TYPE` line per family (the kind from
/// `kind_of`, `untyped` when it returns `None`), then the family's samples sorted by
/// key. `last_updated` becomes a comment line at the top. Fails on a key that is not a
/// valid series.
pub fn render_prometheus(
    metrics: &Metrics,
    kind_of: impl Fn(&str) -> Option<MetricKind>,
) -> Result<String, PrometheusKeyError> {
    let mut families: BTreeMap<&str, Vec<(&str, i64)>> = BTreeMap::new();
    for (key, value) in metrics.sorted() {
        let family = split_series(key)?;
        families.entry(family).or_default().push((key, value));
    }
    let mut out = String::new();
    if let Some(last) = metrics.last_updated() {
        let last: String = last.chars().filter(|c| *c != '\n').collect();
        let _ = writeln!(out, "# last_updated {last}");
    }
    for (family, samples) in families {
        let kind = kind_of(family).map_or("untyped", MetricKind::as_str);
        let _ = writeln!(out, "# TYPE {family} {kind}");
        for (key, value) in samples {
            let _ = writeln!(out, "{key} {value}");
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_are_checked() {
        assert_eq!(split_series("a_b").unwrap(), "a_b");
        assert_eq!(split_series("m{a=\"x\\\"y\\\\z\\n\",b=\"\"}").unwrap(), "m");
        assert_eq!(split_series("m{}").unwrap(), "m");
        for bad in [
            "",
            "1abc",
            "a-b",
            "m{",
            "m{a=\"x\"",
            "m{a=\"x\"}z",
            "m{a=x}",
            "m{a=\"x\",a=\"y\"}",
            "m{a=\"\\q\"}",
            "m{a=\"x\ny\"}",
            "m{1=\"x\"}",
        ] {
            assert!(split_series(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn families_are_grouped_and_typed() {
        let mut m = Metrics::new();
        m.insert("f{a=\"1\"}", 2).unwrap();
        m.insert("f_x", 3).unwrap();
        m.insert("f", 1).unwrap();
        m.set_last_updated(Some("2025-01-01T00:00:00".into()));
        let text = render_prometheus(&m, |f| (f == "f").then_some(MetricKind::Counter)).unwrap();
        assert_eq!(
            text,
            "# last_updated 2025-01-01T00:00:00\n# TYPE f counter\nf 1\nf{a=\"1\"} 2\n# TYPE f_x untyped\nf_x 3\n"
        );
    }
}
