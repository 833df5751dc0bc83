//! Running one test again in a child process, for what a test must not do to
//! its own process (restore SIGPIPE's default action, lower its memory limit):
//! the child is the same test binary, told by an environment variable.

use std::process::Command;

/// Whether this process is the child [`run_as_child`] started with `marker`.
pub fn is_child(marker: &str) -> bool {
    std::env::var_os(marker).is_some()
}

/// The name the test harness gives test function `test` of the module whose
/// `module_path!()` is `module_path`: the path without the crate's name (in
/// `tests/it/ring_directory.rs`, `module_path!()` is `it::ring_directory` and
/// test `scans` is `ring_directory::scans`).
pub fn test_name(module_path: &str, test: &str) -> String {
    match module_path.split_once("::") {
        Some((_, module)) => format!("{module}::{test}"),
        None => test.to_owned(),
    }
}

/// Runs test `test` (its full name, see [`test_name`]) of this binary again,
/// alone (ignored or not), with `marker` set; returns its exit status and
/// everything it printed (stdout, then stderr).
///
/// # Panics
///
/// When the child ran no test of that name (a misspelt name must not pass).
pub fn run_as_child(test: &str, marker: &str) -> (std::process::ExitStatus, String) {
    let out = Command::new(std::env::current_exe().expect("the test binary's path"))
        .args([
            test,
            "--exact",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(marker, "1")
        .output()
        .expect("the test binary runs again as a child");
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("running 1 test"),
        "the child ran no test named {test}: {said}"
    );
    (out.status, said)
}

/// Runs the calling test (`test` of the module `module_path`) in a child
/// process of its own when this process is not already that child, and
/// asserts that the child passed: for a test that changes what the whole
/// process shares (its environment), which must not happen while the other
/// tests of the binary run. Returns `true` in the child, where the test's
/// body then runs; `false` in the parent, which has nothing left to do.
pub fn in_own_process(module_path: &str, test: &str, marker: &str) -> bool {
    if is_child(marker) {
        return true;
    }
    let (status, said) = run_as_child(&test_name(module_path, test), marker);
    assert!(
        status.success(),
        "the test in its own process failed ({status}):\n{said}"
    );
    false
}
