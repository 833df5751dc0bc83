//! The environment variables every host reads (a plug-in's own variables
//! are that plug-in's: the Prometheus, `prometheus_mp`, OTLP and CSV
//! exporters define theirs), the one parser of their on/off
//! words and the one rule for a value that is not UTF-8.
//!
//! A variable whose value is not UTF-8 is an error naming the variable
//! ([`NotUtf8`], from [`var`]): read as unset it would silently turn a feature
//! off or move its files, and converted lossily it would name a file nobody
//! asked for.

use core::fmt;

/// `NIXL_TELEMETRY_ENABLE`: telemetry on or off ([`parse_switch`]).
pub const ENABLE: &str = "NIXL_TELEMETRY_ENABLE";
/// `NIXL_TELEMETRY_BUFFER_SIZE`: events per ring and per staging queue.
pub const BUFFER_SIZE: &str = "NIXL_TELEMETRY_BUFFER_SIZE";
/// `NIXL_TELEMETRY_RUN_INTERVAL`: the flush interval, ms.
pub const RUN_INTERVAL: &str = "NIXL_TELEMETRY_RUN_INTERVAL";
/// `NIXL_TELEMETRY_DIR`: the ring directory of the built-in `buffer` exporter.
pub const DIR: &str = "NIXL_TELEMETRY_DIR";
/// `NIXL_TELEMETRY_EXPORTER`: `buffer`, `nop` or a plug-in name.
pub const EXPORTER: &str = "NIXL_TELEMETRY_EXPORTER";
/// `NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH`: handed to the exporter.
pub const EXPORTER_OUTPUT_PATH: &str = "NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH";
/// `NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR`: where plug-ins are searched first.
pub const EXPORTER_PLUGIN_DIR: &str = "NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR";
/// `NIXL_PLUGIN_DIR`: NIXL's plug-in directory, searched second.
pub const NIXL_PLUGIN_DIR: &str = "NIXL_PLUGIN_DIR";
/// `NIXL_TELEMETRY_ENABLED_METRICS`: the allowlist of event names.
pub const ENABLED_METRICS: &str = "NIXL_TELEMETRY_ENABLED_METRICS";
/// `NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US`: the Prometheus latency histograms' bounds, µs.
pub const HISTOGRAM_BUCKETS_US: &str = "NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US";
/// `NIXL_TELEMETRY_SHUTDOWN_TIMEOUT_MS`: how long the final flush at shutdown
/// may take (the sidecar's, a plug-in's as its host unloads it); what is not
/// delivered then is abandoned, and said so.
pub const SHUTDOWN_TIMEOUT_MS: &str = "NIXL_TELEMETRY_SHUTDOWN_TIMEOUT_MS";
/// The default of [`SHUTDOWN_TIMEOUT_MS`], milliseconds.
pub const DEFAULT_SHUTDOWN_TIMEOUT_MS: u64 = 3000;
/// The ring layout the built-in `buffer` exporter writes: `1` (default), `2`
/// (or `2-named`), `2-typed`, `3`, `4` (see `docs/ring-format.md`).
pub const RING_VERSION: &str = "NIXL_TELEMETRY_RING_VERSION";

/// What [`parse_switch`] accepts, as error messages quote it.
pub const SWITCH_ACCEPTED: &str =
    "on: y, yes, on, 1, true, enable; off: n, no, off, 0, false, disable (any case)";

/// Parses an on/off word: `y yes on 1 true enable` → on, `n no off 0 false
/// disable` → off, in any case and with blanks around; anything else → `None`
/// (the caller names its variable and quotes [`SWITCH_ACCEPTED`]).
pub fn parse_switch(value: &str) -> Option<bool> {
    let word = value.trim();
    const ON: [&str; 6] = ["y", "yes", "on", "1", "true", "enable"];
    const OFF: [&str; 6] = ["n", "no", "off", "0", "false", "disable"];
    if ON.iter().any(|w| w.eq_ignore_ascii_case(word)) {
        Some(true)
    } else if OFF.iter().any(|w| w.eq_ignore_ascii_case(word)) {
        Some(false)
    } else {
        None
    }
}

/// A variable holds a value that is not UTF-8.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotUtf8 {
    /// The variable.
    pub variable: &'static str,
    /// Its value, invalid sequences replaced with U+FFFD (for the message only).
    pub value_lossy: String,
}

/// What is accepted instead of a value that is not UTF-8, as messages quote it.
pub const UTF8_ACCEPTED: &str = "text in UTF-8 (paths included)";

impl fmt::Display for NotUtf8 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={:?} is invalid: it is not UTF-8; accepted: {UTF8_ACCEPTED}",
            self.variable, self.value_lossy
        )
    }
}

impl std::error::Error for NotUtf8 {}

/// Reads `variable` from the process environment: `Ok(None)` when it is unset,
/// an error naming it when its value is not UTF-8.
pub fn var(variable: &'static str) -> Result<Option<String>, NotUtf8> {
    match std::env::var_os(variable) {
        None => Ok(None),
        Some(value) => value.into_string().map(Some).map_err(|raw| NotUtf8 {
            variable,
            value_lossy: raw.to_string_lossy().into_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switch_words_in_any_case() {
        for on in ["y", "YES", "On", "1", "true", "TRUE", "enable", " Enable\t"] {
            assert_eq!(parse_switch(on), Some(true), "{on:?}");
        }
        for off in ["n", "No", "OFF", "0", "false", "DISABLE", " off "] {
            assert_eq!(parse_switch(off), Some(false), "{off:?}");
        }
        for bad in ["", "maybe", "2", "yess", "enabled", "o n"] {
            assert_eq!(parse_switch(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_accepted_text_lists_every_word() {
        for word in [
            "y", "yes", "on", "1", "true", "enable", "n", "no", "off", "0", "false", "disable",
        ] {
            assert!(SWITCH_ACCEPTED.contains(word), "{word}");
            assert!(parse_switch(word).is_some());
        }
    }

    #[test]
    fn a_value_that_is_not_utf8_names_its_variable() {
        let err = NotUtf8 {
            variable: ENABLE,
            value_lossy: "o\u{fffd}".into(),
        };
        let text = err.to_string();
        assert!(text.contains(ENABLE) && text.contains("UTF-8") && text.contains("accepted"));
    }
}
