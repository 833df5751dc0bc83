//! Both Prometheus plug-in crates (prometheus_mp links prometheus) define the
//! plug-in's C entry points (`nixl_telemetry_exporter_plugin_init`, ...). cargo-fuzz builds
//! with one codegen unit, so a target using both pulls both definitions in; the
//! targets never call them, so the linker may keep the first.
fn main() {
    println!("cargo:rustc-link-arg-bins=-Wl,--allow-multiple-definition");
}
