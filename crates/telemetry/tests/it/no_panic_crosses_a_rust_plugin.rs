//! No panic crosses the boundary of a Rust plug-in: every `extern "C"`
//! function of `nixl_telemetry_abi::rust_plugin` — the functions the
//! descriptor points to and those `export_plugin!` itself generates, whatever
//! their symbol names — runs its whole body inside the plug-in's panic guard
//! (`rust_plugin::guard`), which turns a panic into an error code, NULL or a
//! disabled exporter. Checked in the source (`tests/it/plugin_rust_panic.rs`
//! checks the behaviour of a plug-in whose exporter panics).

use std::path::Path;

use nixl_telemetry_testsupport::panic_boundary::entry_points;

#[test]
fn every_plugin_entry_point_runs_inside_the_panic_guard() {
    // rust_plugin.rs, and plugin_log.rs (its set_log is an entry point too).
    let sources: Vec<(String, String)> = ["rust_plugin.rs", "plugin_log.rs"]
        .iter()
        .map(|name| {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../abi/src")
                .join(name);
            let text = std::fs::read_to_string(&path).unwrap();
            (path.display().to_string(), text)
        })
        .collect();
    let sources: Vec<(&str, &str)> = sources
        .iter()
        .map(|(f, t)| (f.as_str(), t.as_str()))
        .collect();
    let found = entry_points(&sources, &["guard"]).unwrap();
    let unguarded: Vec<String> = found
        .iter()
        .filter_map(|e| e.unguarded.as_ref().map(|why| format!("{}: {why}", e.name)))
        .collect();
    assert!(
        unguarded.is_empty(),
        "plug-in entry points without a panic guard:\n{}",
        unguarded.join("\n")
    );
    // The scan sees the macro's functions and the descriptor's: the five
    // exporter functions and last_error are generic functions of the module,
    // and the macro generates the library's own entry points (init, fini,
    // last_error).
    let generated = found
        .iter()
        .filter(|e| e.name.starts_with("export_plugin!: "))
        .count();
    let generic = found.len() - generated;
    assert!(generated >= 3, "{found:?}");
    assert!(generic >= 6, "{found:?}");
}
