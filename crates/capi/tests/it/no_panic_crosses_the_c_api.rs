//! No panic crosses the C API: every `extern "C"` function of this crate runs
//! its whole body inside the panic guard (`boundary::guard`, directly or
//! through a helper that is itself only a guarded call), which turns a panic
//! into `NIXL_TELEMETRY_ERR_INTERNAL` (or the function's documented fallback
//! value). Checked in the source, so a new exported function without the
//! guard, or code moved in front of it, fails here; and every function the
//! header declares must be among those checked.

use std::collections::BTreeSet;
use std::path::Path;

use nixl_telemetry_testsupport::panic_boundary::entry_points_under;

#[test]
fn every_exported_function_runs_inside_the_panic_guard() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let found = entry_points_under(&crate_dir.join("src"), &["guard"]).unwrap();
    let unguarded: Vec<String> = found
        .iter()
        .filter_map(|e| {
            e.unguarded
                .as_ref()
                .map(|why| format!("{} ({}): {why}", e.name, e.file))
        })
        .collect();
    assert!(
        unguarded.is_empty(),
        "entry points of the C API without a panic guard:\n{}",
        unguarded.join("\n")
    );

    let header = std::fs::read_to_string(crate_dir.join("../../include/nixl_telemetry.h")).unwrap();
    // Every `nixl_telemetry_<name>(` of the header: its functions.
    let declared: BTreeSet<String> = header
        .match_indices("nixl_telemetry_")
        .filter_map(|(at, _)| {
            let rest = &header[at..];
            let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
            (rest[end..].starts_with('(')
                && !header[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
            .then(|| rest[..end].to_owned())
        })
        .collect();
    assert!(declared.len() >= 20, "{declared:?}");
    let checked: BTreeSet<String> = found.iter().map(|e| e.name.clone()).collect();
    let missed: Vec<&String> = declared.difference(&checked).collect();
    assert!(
        missed.is_empty(),
        "functions of nixl_telemetry.h the check did not find in crates/capi/src: {missed:?}"
    );
}
