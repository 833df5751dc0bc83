//! Event names to metric names and attribute values, by the Prometheus
//! plug-in's rules (so both exporters show the same series).

use nixl_telemetry_abi::Category;

use crate::families::{Shape, ERRORS_NAME, HISTOGRAMS, SCALARS};

/// The `status` of an error event: its name without a leading `NIXL_ERR_` (in
/// any case), in lower case; invalid UTF-8 is replaced.
pub(crate) fn error_status(name: &[u8]) -> String {
    const PREFIX: &[u8] = b"NIXL_ERR_";
    let stripped = if name.len() > PREFIX.len() && name[..PREFIX.len()].eq_ignore_ascii_case(PREFIX)
    {
        &name[PREFIX.len()..]
    } else {
        name
    };
    String::from_utf8_lossy(stripped).to_lowercase()
}

/// `name` made a valid metric name: every character outside `[A-Za-z0-9_]`
/// becomes `_`, and a leading digit or an empty name gets a `_` in front.
fn sanitize(name: &[u8]) -> String {
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

/// Whether `name` is a name the fixed families use (with or without a
/// counter's `_total`, or as a histogram's series).
fn is_reserved(name: &str) -> bool {
    let scalar = SCALARS.iter().any(|s| {
        s.name == name || (s.shape == Shape::Counter && s.name.strip_suffix("_total") == Some(name))
    });
    let histogram = HISTOGRAMS.iter().any(|h| {
        name.strip_prefix(h.name)
            .is_some_and(|rest| matches!(rest, "" | "_bucket" | "_sum" | "_count" | "_created"))
    });
    scalar || histogram || name == ERRORS_NAME || ERRORS_NAME.strip_suffix("_total") == Some(name)
}

fn clashes(sample: &str) -> bool {
    is_reserved(sample)
        || sample
            .strip_suffix("_total")
            .is_some_and(|family| family.is_empty() || is_reserved(family))
}

/// The name of the per-name Sum of events `name` in `category`: `<name>_total`
/// made valid; prefixed with the category in lower case when it would clash
/// with a fixed family; `None` if even that clashes.
pub(crate) fn per_name_metric(name: &[u8], category: Category) -> Option<String> {
    let base = sanitize(name);
    let sample = with_total(&base);
    if !clashes(&sample) {
        return Some(sample);
    }
    let prefixed = with_total(&format!(
        "{}_{base}",
        category.to_string().to_ascii_lowercase()
    ));
    (!clashes(&prefixed)).then_some(prefixed)
}

/// This machine's host name (`/proc/sys/kernel/hostname`), `unknown` if unreadable.
pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_lose_the_prefix_and_case() {
        assert_eq!(error_status(b"NIXL_ERR_BACKEND"), "backend");
        assert_eq!(error_status(b"nixl_err_Not_Found"), "not_found");
        assert_eq!(error_status(b"TIMEOUT"), "timeout");
        assert_eq!(error_status(b"NIXL_ERR_"), "nixl_err_");
    }

    #[test]
    fn per_name_metrics_end_in_one_total_and_avoid_fixed_names() {
        for (name, category, want) in [
            (
                &b"ucx.rndv-ops"[..],
                Category::BACKEND,
                "ucx_rndv_ops_total",
            ),
            (b"retries_total", Category::BACKEND, "retries_total"),
            (b"9lives", Category::CUSTOM, "_9lives_total"),
            (
                b"agent_tx_bytes",
                Category::CUSTOM,
                "custom_agent_tx_bytes_total",
            ),
            (
                b"agent_tx_last_bytes",
                Category::BACKEND,
                "backend_agent_tx_last_bytes_total",
            ),
            (
                b"agent_errors",
                Category::CUSTOM,
                "custom_agent_errors_total",
            ),
            (b"_total", Category::CUSTOM, "custom__total"),
            (
                b"agent_xfer_time_us_bucket",
                Category::CUSTOM,
                "custom_agent_xfer_time_us_bucket_total",
            ),
        ] {
            assert_eq!(per_name_metric(name, category).as_deref(), Some(want));
        }
    }
}
