//! The single-process plug-in's rlib, which this crate reuses, defines the
//! plug-in entry points too (`nixl_telemetry_plugin_init`, `_fini`). This
//! crate's own objects come first on the link line, so with multiple
//! definitions allowed the cdylib exports this crate's entry points; the
//! `descriptor_is_prometheus_mp` test checks that the built library says so.
fn main() {
    println!("cargo:rustc-link-arg=-Wl,--allow-multiple-definition");
}
