//! Our own loader, finding an adapter under a plug-in's name (an overlay for
//! NIXL_PLUGIN_DIR, say), passes over it to the plug-in itself, and never
//! calls into the adapter.

use nixl_telemetry::exporter::plugin::{LoadedPluginExporter, PluginError};
use nixl_telemetry_nixl_adapters::{build_dir, placement};
use nixl_telemetry_testsupport::{build_rust_plugin, config, install_plugin};

#[test]
fn an_adapter_in_the_search_path_is_passed_over_for_the_plugin_behind_it() {
    let adapters = tempfile::tempdir().unwrap();
    let plugins = tempfile::tempdir().unwrap();
    placement::stage(&build_dir(), adapters.path(), &["csv".to_owned()]).unwrap();
    let built = build_rust_plugin("nixl-telemetry-exporter-csv");
    let plugin = install_plugin(&built, plugins.path(), "csv");
    let csv_file = plugins.path().join("out.csv");
    for generation in nixl_telemetry_nixl_adapters::GENERATIONS {
        let dirs = format!(
            "{}:{}",
            adapters.path().join(generation.id).display(),
            plugins.path().display()
        );
        let cfg = config(&[
            ("NIXL_TELEMETRY_ENABLE", "1"),
            ("NIXL_TELEMETRY_EXPORTER", "csv"),
            ("NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR", &dirs),
            (
                "NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH",
                csv_file.to_str().unwrap(),
            ),
        ]);
        let exporter = LoadedPluginExporter::load("csv", &cfg, "agent").expect("the CSV plug-in");
        assert_eq!(exporter.path(), std::fs::canonicalize(&plugin).unwrap());
        drop(exporter);

        // With the adapter alone: not found, and the message says what was passed over.
        let only = adapters.path().join(generation.id);
        let cfg = config(&[
            ("NIXL_TELEMETRY_ENABLE", "1"),
            ("NIXL_TELEMETRY_EXPORTER", "csv"),
            ("NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR", only.to_str().unwrap()),
        ]);
        let err = LoadedPluginExporter::load("csv", &cfg, "agent").unwrap_err();
        assert!(matches!(err, PluginError::NotFound { .. }), "{err:?}");
        assert!(
            err.to_string().contains("a NIXL adapter, passed over"),
            "{err}"
        );
    }
}
