//! The version line of every nixl-telemetry tool, made in one place.
//!
//! A build script calls [`emit`]; the crate then reads
//! `env!("NIXL_TELEMETRY_VERSION_LINE")`, e.g. `0.1.0 (commit 1a2b3c4d5e6f)`,
//! and gives it to clap's `version` (so `--version` prints
//! `nixl-telemetry 0.1.0 (commit 1a2b3c4d5e6f)`). The version is the package's,
//! which every crate takes from the workspace (`version.workspace = true`), as
//! the Python package and its wheel do (maturin reads it from Cargo.toml).
//!
//! The commit is, in order: `NIXL_TELEMETRY_COMMIT` when set at build time (the
//! wheel build sets it; so can a build from a source archive without `.git`),
//! else, in a release build, `git rev-parse HEAD` in the crate's directory
//! (12 hex digits), else `unknown`. Uncommitted changes are not marked: the line
//! names the commit the build started from.
//!
//! A debug build does not ask git: watching HEAD would rebuild every crate that
//! prints a version (and the adapters' C++) after each commit, which is the
//! development loop's most frequent step. Its line says so
//! (`0.1.0 (commit unknown: debug build)`).

use std::path::Path;
use std::process::Command;

/// The environment variable [`emit`] sets for the crate being built.
pub const VERSION_LINE_VARIABLE: &str = "NIXL_TELEMETRY_VERSION_LINE";

/// The variable that names the commit when the sources are not a git checkout.
pub const COMMIT_VARIABLE: &str = "NIXL_TELEMETRY_COMMIT";

/// Prints the cargo directives that set `NIXL_TELEMETRY_VERSION_LINE` for the
/// crate whose build script calls it, and rebuild it when the commit changes.
pub fn emit() {
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_else(|_| "unknown".to_owned());
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".to_owned());
    println!("cargo:rerun-if-env-changed={COMMIT_VARIABLE}");
    let release = std::env::var("PROFILE").is_ok_and(|profile| profile == "release");
    let commit = match std::env::var(COMMIT_VARIABLE) {
        Ok(commit) if !commit.trim().is_empty() => commit.trim().to_owned(),
        _ if !release => "unknown: debug build".to_owned(),
        _ => {
            for file in git_files_to_watch(Path::new(&dir)) {
                println!("cargo:rerun-if-changed={file}");
            }
            git_commit(Path::new(&dir)).unwrap_or_else(|| "unknown".to_owned())
        }
    };
    println!(
        "cargo:rustc-env={VERSION_LINE_VARIABLE}={}",
        version_line(&version, &commit)
    );
}

/// `<version> (commit <commit>)`.
pub fn version_line(version: &str, commit: &str) -> String {
    format!("{version} (commit {commit})")
}

/// The checkout's commit, shortened to 12 hex digits.
fn git_commit(dir: &Path) -> Option<String> {
    git(dir, &["rev-parse", "--short=12", "HEAD"])
}

/// HEAD, the branch it names and the packed refs: a commit changes one of them.
fn git_files_to_watch(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for path in ["HEAD", "packed-refs"] {
        if let Some(file) = git(
            dir,
            &["rev-parse", "--path-format=absolute", "--git-path", path],
        ) {
            files.push(file);
        }
    }
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        if let Some(file) = git(
            dir,
            &["rev-parse", "--path-format=absolute", "--git-path", &branch],
        ) {
            files.push(file);
        }
    }
    files.retain(|file| Path::new(file).exists());
    files
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?.trim().to_owned();
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_version_and_commit() {
        assert_eq!(
            version_line("0.1.0", "1a2b3c4d5e6f"),
            "0.1.0 (commit 1a2b3c4d5e6f)"
        );
    }

    #[test]
    fn a_checkout_gives_its_commit() {
        let dir = env!("CARGO_MANIFEST_DIR");
        if let Some(head) = git(Path::new(dir), &["rev-parse", "--short=12", "HEAD"]) {
            assert_eq!(git_commit(Path::new(dir)), Some(head.clone()));
            assert_eq!(head.len(), 12, "{head}");
            assert!(head.bytes().all(|b| b.is_ascii_hexdigit()), "{head}");
            let watched = git_files_to_watch(Path::new(dir));
            assert!(watched.iter().any(|f| f.ends_with("HEAD")), "{watched:?}");
        }
    }
}
