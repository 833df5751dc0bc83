//! Gives the shared library its soname, `libnixl_telemetry.so.<C API major>`,
//! so a C program linked against the installed `libnixl_telemetry.so` asks the
//! dynamic loader for the file of its API version.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libnixl_telemetry.so.1");
    println!("cargo:rerun-if-changed=build.rs");
}
