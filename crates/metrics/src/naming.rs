//! Event names made metric names and label values: the one event → series
//! naming of every exporter.

use nixl_telemetry_abi::{Category, EVENT_NAME_CAPACITY};

use crate::families::{is_agent_family_name, EXPOSER_PREFIX};

/// Which names the per-name counters leave to others, besides the fixed
/// families (which every exporter shows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SeriesNaming {
    /// A Prometheus exposition: also the HTTP endpoint's own `exposer_*`
    /// families ([`EXPOSER_PREFIX`]), which share the scrape's body.
    Prometheus,
    /// OTLP: the fixed families only (there is no HTTP server of ours to
    /// share the names with).
    Otlp,
}

impl SeriesNaming {
    /// Whether `name` (a sample or family name, in either exposition format)
    /// is taken: a fixed family's ([`is_agent_family_name`]) or, for
    /// [`SeriesNaming::Prometheus`], one starting with [`EXPOSER_PREFIX`].
    pub fn is_reserved(self, name: &str) -> bool {
        is_agent_family_name(name)
            || (self == SeriesNaming::Prometheus && name.starts_with(EXPOSER_PREFIX))
    }
}

/// The longest status or sample name a run-time series can have, in bytes:
/// a status is an event name (at most [`EVENT_NAME_CAPACITY`] bytes) whose
/// invalid bytes become U+FFFD (3 bytes each) and whose letters become lower
/// case (never more than 1.5 times longer); a per-name sample is far shorter
/// (one byte per character, a category in front, `_total` behind). Stores of
/// fixed-size fields (`prometheus_mp`) rely on it.
pub const MAX_SERIES_NAME_LEN: usize = 3 * EVENT_NAME_CAPACITY;

/// The `status` label of an error event: its name without a leading
/// `NIXL_ERR_` (in any case), in lower case; invalid UTF-8 is replaced.
pub fn error_status(name: &[u8]) -> String {
    const PREFIX: &[u8] = nixl_telemetry_abi::names::ERROR_PREFIX.as_bytes();
    let stripped = if name.len() > PREFIX.len() && name[..PREFIX.len()].eq_ignore_ascii_case(PREFIX)
    {
        &name[PREFIX.len()..]
    } else {
        name
    };
    String::from_utf8_lossy(stripped).to_lowercase()
}

/// `name` made a valid metric name: every character outside `[A-Za-z0-9_]`
/// becomes `_` (colons too: they are for recording rules), and a leading digit
/// or an empty name gets a `_` in front.
pub fn sanitize_metric_name(name: &[u8]) -> String {
    let text = String::from_utf8_lossy(name);
    let mut out = String::with_capacity(text.len() + 1);
    if text.is_empty() || text.as_bytes()[0].is_ascii_digit() {
        out.push('_');
    }
    out.extend(text.chars().map(|c| {
        if c.is_ascii_alphanumeric() || c == '_' {
            c
        } else {
            '_'
        }
    }));
    out
}

fn with_total(base: &str) -> String {
    if base.ends_with("_total") {
        base.to_owned()
    } else {
        format!("{base}_total")
    }
}

/// Whether the counter `sample` cannot be used: it is taken, or its
/// OpenMetrics family name (the sample without `_total`) is taken or would be
/// empty (an event called `_total` or `.total`).
fn clashes(sample: &str, naming: SeriesNaming) -> bool {
    naming.is_reserved(sample)
        || sample
            .strip_suffix("_total")
            .is_some_and(|family| family.is_empty() || naming.is_reserved(family))
}

/// The sample name of the per-name counter of event `name` in `category`:
/// `<name>_total` made valid (a name already ending in `_total` keeps its one
/// suffix). A name that would clash with a name `naming` reserves is prefixed
/// with its category in lower case (`custom_agent_tx_bytes_total`); `None` if
/// even that clashes.
pub fn per_name_sample(name: &[u8], category: Category, naming: SeriesNaming) -> Option<String> {
    let base = sanitize_metric_name(name);
    let sample = with_total(&base);
    if !clashes(&sample, naming) {
        return Some(sample);
    }
    let prefixed = with_total(&format!(
        "{}_{base}",
        category.to_string().to_ascii_lowercase()
    ));
    (!clashes(&prefixed, naming)).then_some(prefixed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prometheus(name: &[u8], category: Category) -> Option<String> {
        per_name_sample(name, category, SeriesNaming::Prometheus)
    }

    #[test]
    fn statuses_lose_the_prefix_and_case() {
        assert_eq!(error_status(b"NIXL_ERR_BACKEND"), "backend");
        assert_eq!(
            error_status(b"NIXL_ERR_REMOTE_DISCONNECT"),
            "remote_disconnect"
        );
        assert_eq!(error_status(b"nixl_err_Not_Found"), "not_found");
        assert_eq!(error_status(b"TIMEOUT"), "timeout");
        // Nothing after the prefix: keep the whole name rather than an empty label.
        assert_eq!(error_status(b"NIXL_ERR_"), "nixl_err_");
        assert_eq!(error_status(b"bad\xffbyte"), "bad\u{fffd}byte");
    }

    #[test]
    fn metric_names_are_made_valid() {
        assert_eq!(sanitize_metric_name(b"ucx.rndv-ops"), "ucx_rndv_ops");
        assert_eq!(sanitize_metric_name(b"9lives"), "_9lives");
        assert_eq!(sanitize_metric_name(b"a:b c"), "a_b_c");
        assert_eq!(sanitize_metric_name(b""), "_");
        assert_eq!(sanitize_metric_name("crème".as_bytes()), "cr_me");
        assert_eq!(sanitize_metric_name(b"x\xff"), "x_");
    }

    #[test]
    fn per_name_samples_end_in_one_total_and_avoid_fixed_names() {
        assert_eq!(
            prometheus(b"ucx_connect", Category::CONNECTION).as_deref(),
            Some("ucx_connect_total")
        );
        assert_eq!(
            prometheus(b"retries_total", Category::BACKEND).as_deref(),
            Some("retries_total")
        );
        assert_eq!(
            prometheus(b"agent_tx_bytes", Category::CUSTOM).as_deref(),
            Some("custom_agent_tx_bytes_total")
        );
        // Its OpenMetrics family would be the gauge agent_tx_last_bytes.
        assert_eq!(
            prometheus(b"agent_tx_last_bytes", Category::BACKEND).as_deref(),
            Some("backend_agent_tx_last_bytes_total")
        );
        assert_eq!(
            prometheus(b"agent_errors", Category::CUSTOM).as_deref(),
            Some("custom_agent_errors_total")
        );
    }

    #[test]
    fn exposer_names_are_reserved_only_for_prometheus() {
        assert_eq!(
            prometheus(b"exposer_scrapes", Category::CUSTOM).as_deref(),
            Some("custom_exposer_scrapes_total")
        );
        assert_eq!(
            per_name_sample(b"exposer_scrapes", Category::CUSTOM, SeriesNaming::Otlp).as_deref(),
            Some("exposer_scrapes_total")
        );
        assert_eq!(
            per_name_sample(b"agent_tx_bytes", Category::CUSTOM, SeriesNaming::Otlp).as_deref(),
            Some("custom_agent_tx_bytes_total")
        );
    }

    #[test]
    fn a_name_that_is_only_total_gets_its_category_in_front() {
        // As `_total` its OpenMetrics family name would be empty.
        for name in [&b"_total"[..], b".total", b"-total"] {
            assert_eq!(
                prometheus(name, Category::CUSTOM).as_deref(),
                Some("custom__total"),
                "{}",
                String::from_utf8_lossy(name)
            );
        }
        assert_eq!(
            prometheus(b"total", Category::BACKEND).as_deref(),
            Some("total_total")
        );
    }

    #[test]
    fn no_series_name_is_longer_than_the_bound() {
        let invalid = [0xffu8; EVENT_NAME_CAPACITY];
        assert_eq!(error_status(&invalid).len(), MAX_SERIES_NAME_LEN);
        // U+0130 lower-cases to two characters (3 bytes from 2).
        let dotted = "İ".repeat(EVENT_NAME_CAPACITY / 2);
        assert!(error_status(dotted.as_bytes()).len() <= MAX_SERIES_NAME_LEN);
        for category in [
            Category::TRANSFER,
            Category::PERFORMANCE,
            Category::MEMORY,
            Category::SYSTEM,
            Category::BACKEND,
            Category::CONNECTION,
            Category::CUSTOM,
        ] {
            for name in [&[b'9'; EVENT_NAME_CAPACITY][..], &invalid] {
                for naming in [SeriesNaming::Prometheus, SeriesNaming::Otlp] {
                    let sample = per_name_sample(name, category, naming).unwrap();
                    assert!(sample.len() <= MAX_SERIES_NAME_LEN, "{sample}");
                }
            }
            let mut reserved = b"agent_tx_bytes".to_vec();
            reserved.resize(EVENT_NAME_CAPACITY, b'_');
            reserved[EVENT_NAME_CAPACITY - 6..].copy_from_slice(b"_total");
            let sample = prometheus(&reserved, category).unwrap();
            assert!(sample.len() <= MAX_SERIES_NAME_LEN, "{sample}");
        }
    }
}
