//! `promtool check metrics`, as the tests of the Prometheus plug-in and of the
//! `nixl-telemetry` command run it on what we expose.
//!
//! The tests need Prometheus's own tools and fail without them, with a message
//! saying how to install them (`bash scripts/prometheus-test-env.sh`, which the
//! test script runs): a test never passes by skipping the check.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The lines `promtool check metrics` prints for the Prometheus plug-in's
/// output: only its unit-abbreviation lint, on the two histograms whose `_us`
/// names the series contract fixes (they are NIXL's names; docs/prometheus.md).
pub const EXPORTER_ACCEPTED_LINTS: [&str; 2] = [
    "agent_xfer_post_time_us metric names should not contain abbreviated units",
    "agent_xfer_time_us metric names should not contain abbreviated units",
];

/// The path of the installed program `name` (`promtool`, `prometheus`) found
/// on `PATH`.
///
/// # Panics
///
/// When it is not installed, with a message that says how to install it.
pub fn installed(name: &str) -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join(name))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| {
            panic!("`{name}` is not installed: run `bash scripts/prometheus-test-env.sh` (installs Debian's prometheus package)")
        })
}

/// What `promtool check metrics` said of one exposition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Its exit code: 0 clean, 3 lint findings only, 1 a parse error.
    pub code: Option<i32>,
    /// The non-empty lines it printed (stdout, then stderr), trimmed.
    pub lines: Vec<String>,
}

impl Verdict {
    /// The printed lines that are none of `accepted`.
    pub fn unexpected<'a>(&'a self, accepted: &[&str]) -> Vec<&'a str> {
        self.lines
            .iter()
            .map(String::as_str)
            .filter(|l| !accepted.contains(l))
            .collect()
    }
}

/// Pipes `body` (Prometheus text format 0.0.4) through `promtool check metrics`.
///
/// # Panics
///
/// When promtool is not installed or cannot be run.
pub fn check_metrics(body: &str) -> Verdict {
    let mut child = Command::new(installed("promtool"))
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool starts");
    child
        .stdin
        .take()
        .expect("promtool's stdin is piped")
        .write_all(body.as_bytes())
        .expect("promtool reads the exposition");
    let out = child.wait_with_output().expect("promtool finishes");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Verdict {
        code: out.status.code(),
        lines: said
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect(),
    }
}

/// Checks the Prometheus plug-in's text output: promtool parses it and says
/// nothing but [`EXPORTER_ACCEPTED_LINTS`].
///
/// # Panics
///
/// On any other finding, on a parse error, or when promtool is missing.
pub fn assert_exporter_output_accepted(body: &str) {
    let verdict = check_metrics(body);
    let unexpected = verdict.unexpected(&EXPORTER_ACCEPTED_LINTS);
    assert!(
        unexpected.is_empty(),
        "promtool check metrics: {unexpected:#?}\n(exit code {:?})",
        verdict.code
    );
    // 3 is "lint findings"; 1 would be a parse error.
    assert!(
        matches!(verdict.code, Some(0 | 3)),
        "promtool check metrics exit code {:?}: {:#?}",
        verdict.code,
        verdict.lines
    );
}

/// The remarks `promtool check metrics` makes of the metric processor's output
/// (`process --format prometheus`, the service's `/metrics`): naming conventions
/// that TAO's metric names, kept as they are, do not follow.
pub const PROCESSOR_ACCEPTED_LINTS: [&str; 4] = [
    "no help text",
    "counter metrics should have \"_total\" suffix",
    "metric names should not contain abbreviated units",
    "non-histogram and non-summary metrics should not have \"_sum\" suffix",
];

/// Checks the metric processor's Prometheus text: promtool parses it (exit 0, or 3
/// for lint findings) and remarks nothing but [`PROCESSOR_ACCEPTED_LINTS`].
///
/// # Panics
///
/// On any other finding, on a parse error, or when promtool is missing.
pub fn assert_processor_output_accepted(text: &str) {
    let verdict = check_metrics(text);
    let unexpected: Vec<&String> = verdict
        .lines
        .iter()
        .filter(|l| {
            !PROCESSOR_ACCEPTED_LINTS
                .iter()
                .any(|lint| l.ends_with(lint))
        })
        .collect();
    assert!(unexpected.is_empty(), "promtool: {unexpected:#?}");
    assert!(
        matches!(verdict.code, Some(0 | 3)),
        "promtool: {:#?}",
        verdict.lines
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_and_parse_errors_are_reported() {
        let lint =
            check_metrics("# HELP requests Requests.\n# TYPE requests counter\nrequests 1\n");
        assert_eq!(lint.code, Some(3), "{:#?}", lint.lines);
        assert_eq!(
            lint.unexpected(&[]),
            ["requests counter metrics should have \"_total\" suffix"]
        );
        let broken = check_metrics("requests{ 1\n");
        assert_eq!(broken.code, Some(1), "{:#?}", broken.lines);
        let clean = check_metrics("# HELP up_total Ups.\n# TYPE up_total counter\nup_total 1\n");
        assert_eq!((clean.code, clean.lines.len()), (Some(0), 0), "{clean:?}");
    }

    #[test]
    #[should_panic(expected = "promtool check metrics")]
    fn an_unexpected_lint_fails_the_exporter_check() {
        assert_exporter_output_accepted("# HELP x_us X.\n# TYPE x_us gauge\nx_us 1\n");
    }
}
