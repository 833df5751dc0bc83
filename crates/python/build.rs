//! The unit tests embed the interpreter: point the test binaries at the
//! directory of the libpython PyO3 links them against (a pyenv or venv Python
//! keeps it outside the loader's search path). Not for the wheel: maturin sets
//! `PYO3_BUILD_EXTENSION_MODULE` and the extension links no libpython.
//!
//! Also `NIXL_TELEMETRY_VERSION_LINE` (version and commit) for
//! `nixl_telemetry.__build__`, and PyO3's `cfg`s of the interpreter (`Py_GIL_DISABLED` on a free-threaded
//! one, where `Event`'s free list keeps nothing: it relies on the GIL).

fn main() {
    nixl_telemetry_build_info::emit();
    pyo3_build_config::use_pyo3_cfgs();
    println!("cargo:rerun-if-env-changed=PYO3_BUILD_EXTENSION_MODULE");
    if std::env::var_os("PYO3_BUILD_EXTENSION_MODULE").is_some() {
        return;
    }
    if let Some(dir) = pyo3_build_config::get().lib_dir.as_deref() {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
