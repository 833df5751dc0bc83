//! Helpers of the C API tests: the library built by cargo under its installed
//! names, the system compilers, and the Rust ring reader.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use nixl_telemetry::ring::{ReadMode, RingReader};
use nixl_telemetry::Event;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|p| p.join("include/nixl_telemetry.h").is_file())
        .expect("the workspace root holds include/nixl_telemetry.h")
        .to_owned()
}

/// A file of this crate's `tests/` directory.
pub fn test_source(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(relative)
}

/// The directory cargo built this package's libraries into for this test run:
/// `target/<profile>/deps`, next to the test executable (cargo copies them
/// up to `target/<profile>` only for `cargo build`).
fn cargo_output_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its executable");
    exe.parent()
        .expect("the test executable is in target/<profile>/deps")
        .to_owned()
}

/// A directory holding the library under its installed names
/// (`libnixl_telemetry.so`, `libnixl_telemetry.so.1`, `libnixl_telemetry.a`),
/// links to what cargo built for this test run: one per profile, its links
/// replaced atomically (test processes may run at once).
pub fn library_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let built = cargo_output_dir();
        let so = built.join("libnixl_telemetry_capi.so");
        let a = built.join("libnixl_telemetry_capi.a");
        assert!(
            so.is_file() && a.is_file(),
            "cargo builds {} and {} with this test",
            so.display(),
            a.display()
        );
        let profile = built
            .parent()
            .and_then(Path::file_name)
            .map_or_else(|| "unknown".into(), |n| n.to_string_lossy().into_owned());
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("capi-lib-{profile}"));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, target) in [
            ("libnixl_telemetry.so", &so),
            ("libnixl_telemetry.so.1", &so),
            ("libnixl_telemetry.a", &a),
        ] {
            let staged = dir.join(format!(".{name}.{}", std::process::id()));
            let _ = std::fs::remove_file(&staged);
            std::os::unix::fs::symlink(target, &staged).unwrap();
            std::fs::rename(&staged, dir.join(name)).unwrap();
        }
        dir
    })
}

fn run_compiler(mut cmd: Command, what: &str) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run the compiler: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Compiles C `sources` into `exe` against the header and the shared library
/// (`-Werror`, C11, pedantic), with the library's directory as run path.
pub fn build_c(sources: &[PathBuf], exe: &Path, extra: &[&str]) {
    let lib = library_dir();
    let mut cmd = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".to_owned()));
    cmd.args([
        "-std=c11",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-pedantic",
        "-O1",
        "-g",
    ])
    .arg("-I")
    .arg(workspace_root().join("include"))
    .args(extra)
    .args(sources)
    .arg("-o")
    .arg(exe)
    .arg(format!("-L{}", lib.display()))
    .arg(format!("-Wl,-rpath,{}", lib.display()))
    .args(["-lnixl_telemetry", "-pthread"]);
    run_compiler(cmd, &format!("cc {sources:?}"));
}

/// Compiles C++ `sources` into `exe` (`-Werror`, the given standard) against
/// both headers and the shared library.
pub fn build_cpp(sources: &[PathBuf], exe: &Path, standard: &str) {
    let lib = library_dir();
    let mut cmd = Command::new(std::env::var("CXX").unwrap_or_else(|_| "c++".to_owned()));
    cmd.arg(format!("-std={standard}"))
        .args(["-Wall", "-Wextra", "-Werror", "-pedantic", "-O1", "-g"])
        .arg("-I")
        .arg(workspace_root().join("include"))
        .args(sources)
        .arg("-o")
        .arg(exe)
        .arg(format!("-L{}", lib.display()))
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-lnixl_telemetry", "-pthread"]);
    run_compiler(cmd, &format!("c++ {sources:?}"));
}

/// Runs `exe` with `args` and a clean telemetry environment plus `env`;
/// panics with its output unless it exits 0.
pub fn run(exe: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(exe);
    cmd.args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("NIXL_TELEMETRY") || k == "NIXL_PLUGIN_DIR" {
            cmd.env_remove(k);
        }
    }
    cmd.envs(env.iter().copied());
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
    assert!(
        out.status.success(),
        "{} {args:?} exited with {}\nstdout:\n{}\nstderr:\n{}",
        exe.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Every event of a ring file, read with the project's ring reader without
/// writing to the file.
pub fn read_ring(path: &Path) -> Vec<Event> {
    let mut reader = RingReader::open(path, ReadMode::Peek)
        .unwrap_or_else(|e| panic!("the ring reader opens {}: {e}", path.display()));
    let mut events = Vec::new();
    while reader
        .read_batch(&mut events, 4096)
        .expect("the ring reads")
        > 0
    {}
    events
}

/// (category, name, value) of each event.
pub fn triples(events: &[Event]) -> Vec<(i32, String, u64)> {
    events
        .iter()
        .map(|e| (e.category, e.name().into_owned(), e.value))
        .collect()
}
