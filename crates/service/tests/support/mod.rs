//! What the service's integration tests share.
#![allow(dead_code)]

pub mod http;
pub mod postgres;
pub mod records;
pub mod server;

/// `promtool check metrics` parses the exposition: exit 0, or 3 for the naming
/// lints the reference's metric names draw (as for `process --format prometheus`).
pub fn promtool_parses(text: &str) {
    const LINTS: [&str; 4] = [
        "no help text",
        "counter metrics should have \"_total\" suffix",
        "metric names should not contain abbreviated units",
        "non-histogram and non-summary metrics should not have \"_sum\" suffix",
    ];
    let verdict = promtool::check_metrics(text);
    let unexpected: Vec<&String> = verdict
        .lines
        .iter()
        .filter(|l| !LINTS.iter().any(|lint| l.ends_with(lint)))
        .collect();
    assert!(unexpected.is_empty(), "promtool: {unexpected:#?}");
    assert!(
        matches!(verdict.code, Some(0 | 3)),
        "promtool: {:#?}",
        verdict.lines
    );
}
