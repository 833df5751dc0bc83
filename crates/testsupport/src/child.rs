//! Running one test again in a child process, for what a test must not do to
//! its own process (restore SIGPIPE's default action, lower its memory limit):
//! the child is the same test binary, told by an environment variable.

use std::process::Command;

/// Whether this process is the child [`run_as_child`] started with `marker`.
pub fn is_child(marker: &str) -> bool {
    std::env::var_os(marker).is_some()
}

/// Runs test `test` of this binary again, alone, with `marker` set; returns
/// its exit status and everything it printed (stdout, then stderr).
pub fn run_as_child(test: &str, marker: &str) -> (std::process::ExitStatus, String) {
    let out = Command::new(std::env::current_exe().expect("the test binary's path"))
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(marker, "1")
        .output()
        .expect("the test binary runs again as a child");
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status, said)
}
