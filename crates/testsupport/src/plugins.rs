//! Building C plug-ins with the system compiler, building the workspace's Rust
//! plug-in crates, configurations from variables, and raw event files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|p| p.join("include/nixl_telemetry_plugin.h").is_file())
        .expect("the workspace root holds include/nixl_telemetry_plugin.h")
        .to_owned()
}

/// The directory of the test C sources.
pub fn c_source(name: &str) -> PathBuf {
    workspace_root().join("crates/telemetry/tests/c").join(name)
}

/// Compiles `source` (a file of tests/c) against the header into
/// `<dir>/libtelemetry_exporter_<name>.so` with `cc -shared -fPIC`, plus
/// `defines` (`-D` arguments without the `-D`). Panics with the compiler's
/// output on failure.
pub fn build_c_plugin(source: &str, dir: &Path, name: &str, defines: &[&str]) -> PathBuf {
    let out = dir.join(format!("libtelemetry_exporter_{name}.so"));
    let mut cmd = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".to_owned()));
    cmd.args([
        "-std=c11",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-pedantic",
        "-O2",
    ])
    .args(["-shared", "-fPIC"])
    .arg("-I")
    .arg(workspace_root().join("include"));
    for d in defines {
        cmd.arg(format!("-D{d}"));
    }
    cmd.arg(c_source(source)).arg("-o").arg(&out);
    let output = cmd.output().expect("the C compiler `cc` runs");
    assert!(
        output.status.success(),
        "cc failed for {source} {defines:?}:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    out
}

/// The target directory's `tmp` folder (what cargo names `CARGO_TARGET_TMPDIR`
/// for integration tests), found from the running test binary's path
/// (`<target>/<profile>/deps/<binary>`).
fn target_tmpdir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "deps"))
        .and_then(|deps| deps.parent()?.parent())
        .map(|target| target.join("tmp"))
        .unwrap_or_else(std::env::temp_dir)
}

/// Builds workspace package `package` (a plug-in crate) and returns the path of
/// its cdylib. Uses a target directory of its own under the target's `tmp`
/// folder, so it never waits for the lock of the outer build. Built once per
/// test process.
pub fn build_rust_plugin(package: &str) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let built = BUILT.get_or_init(Default::default);
    let mut built = built.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(path) = built.get(package) {
        return path.clone();
    }
    let target_dir = target_tmpdir().join("plugin-builds");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .current_dir(workspace_root())
        .args(["build", "--quiet", "--message-format=json", "-p", package])
        .arg("--target-dir")
        .arg(&target_dir)
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo build -p {package} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut found = None;
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] != "compiler-artifact" {
            continue;
        }
        let cdylib = msg["filenames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f.as_str())
            .find(|f| {
                Path::new(f)
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("libtelemetry_exporter_") && n.ends_with(".so"))
            });
        if let Some(f) = cdylib {
            found = Some(PathBuf::from(f));
        }
    }
    let path = found.unwrap_or_else(|| panic!("cargo build -p {package} reported no cdylib"));
    built.insert(package.to_owned(), path.clone());
    path
}

/// Copies (symlinks) a built Rust plug-in into `dir` under its plug-in file name.
pub fn install_plugin(built: &Path, dir: &Path, name: &str) -> PathBuf {
    let dest = dir.join(format!("libtelemetry_exporter_{name}.so"));
    std::fs::copy(built, &dest).expect("copy the plug-in");
    dest
}

/// A configuration read from `vars` only (never the process environment).
pub fn config(vars: &[(&str, &str)]) -> nixl_telemetry::TelemetryConfig {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    nixl_telemetry::TelemetryConfig::from_lookup(|k| map.get(k).cloned())
        .expect("a valid configuration")
}

/// Decodes a file of raw 56-byte events.
pub fn read_raw_events(path: &Path) -> Vec<nixl_telemetry::Event> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    assert_eq!(bytes.len() % 56, 0, "{} holds whole events", path.display());
    bytes
        .chunks_exact(56)
        .map(|c| nixl_telemetry::Event::from_bytes(c.try_into().unwrap()))
        .collect()
}
