//! The single-process plug-in's rlib, which this crate reuses, defines the
//! plug-in entry points too (`nixl_telemetry_plugin_init`, `_fini`). This
//! crate's own objects come first on the link line, so with multiple
//! definitions allowed the cdylib exports this crate's entry points. The
//! tests in crates/cli/tests/prometheus_mp_ranks.rs load the built library
//! through the host and would fail on the single-process plug-in's series
//! (they have no `pid` or `local_rank`).
fn main() {
    println!("cargo:rustc-link-arg=-Wl,--allow-multiple-definition");
}
