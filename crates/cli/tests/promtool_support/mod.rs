//! `promtool check metrics`, as the CLI's tests run it.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The installed `tool`, or a panic that says how to install it (the test
/// script installs Prometheus; a test never passes by skipping the check).
pub fn tool(name: &str) -> PathBuf {
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

/// Pipes `body` through `promtool check metrics`; returns its exit code and
/// the non-empty lines it printed (stdout and stderr, trimmed).
pub fn check_metrics(body: &str) -> (Option<i32>, Vec<String>) {
    let mut child = Command::new(tool("promtool"))
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = said
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    (out.status.code(), lines)
}
