//! Every way a plug-in can fail to load or to work, and the message each gives.

use nixl_telemetry_testsupport as support;
use support::capture;

use std::path::Path;

use capture::Capture;
use nixl_telemetry::exporter::plugin::LoadedPluginExporter;
use nixl_telemetry::exporter::plugin::PluginError;
use nixl_telemetry::{Category, Exporter, Telemetry, TelemetryConfig, TelemetryError};
use support::{build_c_plugin, config};

fn plugin_config(dir: &Path, name: &str) -> TelemetryConfig {
    config(&[
        ("NIXL_TELEMETRY_ENABLE", "1"),
        ("NIXL_TELEMETRY_EXPORTER", name),
        ("NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR", dir.to_str().unwrap()),
        ("NIXL_TELEMETRY_BUFFER_SIZE", "64"),
        ("NIXL_TELEMETRY_RUN_INTERVAL", "1000"),
    ])
}

fn load_error(dir: &Path, name: &str) -> PluginError {
    let cfg = plugin_config(dir, name);
    match LoadedPluginExporter::load(name, &cfg, "agent-x") {
        Ok(e) => panic!("{name} loaded: {e:?}"),
        Err(e) => e,
    }
}

/// Asserts the message names the plug-in, the file and the directory searched.
fn assert_names_plugin_and_search(msg: &str, name: &str, dir: &Path) {
    assert!(msg.contains(&format!("exporter plug-in {name:?}")), "{msg}");
    assert!(msg.contains("searched "), "{msg}");
    let file = dir.join(format!("libtelemetry_exporter_{name}.so"));
    assert!(
        msg.contains(&format!(
            "{} (NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR)",
            file.display()
        )),
        "{msg}"
    );
}

#[test]
fn no_such_plugin_lists_every_path_searched() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let c = tempfile::tempdir().unwrap();
    let dirs = format!("{}:{}", a.path().display(), b.path().display());
    let cfg = config(&[
        ("NIXL_TELEMETRY_ENABLE", "1"),
        ("NIXL_TELEMETRY_EXPORTER", "absent"),
        ("NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR", &dirs),
        ("NIXL_PLUGIN_DIR", c.path().to_str().unwrap()),
    ]);
    let err = Telemetry::new("agent-x", cfg).unwrap_err();
    let TelemetryError::Plugin(ref boxed) = err else {
        panic!("{err:?}");
    };
    let PluginError::NotFound { ref searched, .. } = **boxed else {
        panic!("{err:?}");
    };
    assert!(searched.len() >= 4, "{searched:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("libtelemetry_exporter_absent.so not found"),
        "{msg}"
    );
    assert_names_plugin_and_search(&msg, "absent", a.path());
    assert_names_plugin_and_search(&msg, "absent", b.path());
    let in_c = c.path().join("libtelemetry_exporter_absent.so");
    assert!(
        msg.contains(&format!("{} (NIXL_PLUGIN_DIR)", in_c.display())),
        "{msg}"
    );
    assert!(
        msg.contains("nixl/telemetry_exporters/libtelemetry_exporter_absent.so (install libdir)"),
        "{msg}"
    );
    // The order: the variable's directories, then NIXL_PLUGIN_DIR.
    let pos = |p: &Path| msg.find(&p.display().to_string()).unwrap();
    assert!(
        pos(a.path()) < pos(b.path()) && pos(b.path()) < pos(c.path()),
        "{msg}"
    );
}

#[test]
fn first_directory_with_the_file_wins() {
    let first = tempfile::tempdir().unwrap();
    let second = tempfile::tempdir().unwrap();
    build_c_plugin("hostile.c", first.path(), "pick", &[]);
    // The second copy would fail; it must not be reached.
    build_c_plugin("hostile.c", second.path(), "pick", &["API_VERSION=9"]);
    let dirs = format!("{}:{}", first.path().display(), second.path().display());
    let cfg = config(&[
        ("NIXL_TELEMETRY_EXPORTER", "pick"),
        ("NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR", &dirs),
    ]);
    let e = LoadedPluginExporter::load("pick", &cfg, "a").unwrap();
    assert!(e
        .path()
        .starts_with(std::fs::canonicalize(first.path()).unwrap()));
    // NIXL_PLUGIN_DIR comes after the variable's directories.
    let cfg = config(&[
        ("NIXL_TELEMETRY_EXPORTER", "pick"),
        (
            "NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR",
            second.path().to_str().unwrap(),
        ),
        ("NIXL_PLUGIN_DIR", first.path().to_str().unwrap()),
    ]);
    let err = LoadedPluginExporter::load("pick", &cfg, "a").unwrap_err();
    assert!(
        matches!(err, PluginError::UnsupportedApiVersion { found: 9, .. }),
        "{err}"
    );
    let cfg = config(&[
        ("NIXL_TELEMETRY_EXPORTER", "pick"),
        ("NIXL_PLUGIN_DIR", first.path().to_str().unwrap()),
    ]);
    assert!(LoadedPluginExporter::load("pick", &cfg, "a").is_ok());
}

#[test]
fn a_file_that_is_not_a_library() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("libtelemetry_exporter_text.so"),
        "this is not an ELF file\n",
    )
    .unwrap();
    let err = load_error(dir.path(), "text");
    assert!(matches!(err, PluginError::NotLoadable { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("is not a loadable library"), "{msg}");
    assert!(
        msg.contains("invalid ELF header") || msg.contains("too short"),
        "{msg}"
    );
    assert_names_plugin_and_search(&msg, "text", dir.path());
    // The loader's error is kept as the source, not only as text.
    let source = std::error::Error::source(&err).expect("the loader's error is the source");
    assert!(source.is::<libloading::Error>(), "{source:?}");
}

#[test]
fn a_library_without_the_init_symbol() {
    let dir = tempfile::tempdir().unwrap();
    build_c_plugin("hostile.c", dir.path(), "noinit", &["NO_INIT"]);
    let err = load_error(dir.path(), "noinit");
    let msg = err.to_string();
    assert!(
        matches!(
            err,
            PluginError::MissingSymbol {
                symbol: "nixl_telemetry_exporter_plugin_init",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        msg.contains("does not export nixl_telemetry_exporter_plugin_init"),
        "{msg}"
    );
    assert_names_plugin_and_search(&msg, "noinit", dir.path());
    let source = std::error::Error::source(&err).expect("the loader's error is the source");
    assert!(source.is::<libloading::Error>(), "{source:?}");
}

#[test]
fn a_plugin_with_the_legacy_entry_names_loads_with_a_deprecation_warning() {
    let dir = tempfile::tempdir().unwrap();
    build_c_plugin("hostile.c", dir.path(), "old", &["LEGACY_NAMES"]);
    let cfg = plugin_config(dir.path(), "old");
    let capture = Capture::default();
    capture.run(|| {
        let exporter = LoadedPluginExporter::load("old", &cfg, "agent-x")
            .expect("a plug-in built against the previous ABI still loads");
        drop(exporter);
    });
    let warnings: Vec<_> = capture
        .events()
        .into_iter()
        .filter(|e| e.level == tracing::Level::WARN)
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let text = &warnings[0].text;
    assert!(text.contains("deprecated names"), "{text}");
    assert!(text.contains("nixl_telemetry_plugin_init"), "{text}");
    assert!(
        text.contains("nixl_telemetry_exporter_plugin_init"),
        "{text}"
    );
    assert!(text.contains("libtelemetry_exporter_old.so"), "{text}");
}

#[test]
fn a_legacy_entry_returning_something_else_is_named_a_foreign_plugin() {
    // NIXL's own plug-ins export nixl_telemetry_plugin_init and return a C++
    // object: its API version (1 or 2) followed by four bytes of padding.
    let dir = tempfile::tempdir().unwrap();
    for (name, defines, api) in [
        ("nixl1", &["LEGACY_NAMES", "STRUCT_SIZE=0"][..], 1),
        (
            "nixl2",
            &["LEGACY_NAMES", "API_VERSION=2", "STRUCT_SIZE=0"][..],
            2,
        ),
    ] {
        build_c_plugin("hostile.c", dir.path(), name, defines);
        let err = load_error(dir.path(), name);
        assert!(
            matches!(err, PluginError::ForeignPlugin { api_version, .. } if api_version == api),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(msg.contains("is not a nixl-telemetry plug-in"), "{msg}");
        assert!(msg.contains("NIXL's own C++ plug-ins"), "{msg}");
        assert_names_plugin_and_search(&msg, name, dir.path());
    }
    // With the current names the same descriptor is an ordinary version error.
    build_c_plugin(
        "hostile.c",
        dir.path(),
        "v2new",
        &["API_VERSION=2", "STRUCT_SIZE=0"],
    );
    assert!(matches!(
        load_error(dir.path(), "v2new"),
        PluginError::UnsupportedApiVersion { found: 2, .. }
    ));
}

#[test]
fn a_nixl_adapter_is_passed_over_and_the_search_goes_on() {
    // An adapter for NIXL (in NIXL_PLUGIN_DIR, say) carries one of our plug-ins'
    // names; the host passes over it to the plug-in itself.
    let adapters = tempfile::tempdir().unwrap();
    let plugins = tempfile::tempdir().unwrap();
    build_c_plugin(
        "hostile.c",
        adapters.path(),
        "both",
        &["NIXL_ADAPTER", "INIT_NULL"],
    );
    build_c_plugin("hostile.c", plugins.path(), "both", &[]);
    let cfg = config(&[
        ("NIXL_TELEMETRY_ENABLE", "1"),
        ("NIXL_TELEMETRY_EXPORTER", "both"),
        (
            "NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR",
            adapters.path().to_str().unwrap(),
        ),
        ("NIXL_PLUGIN_DIR", plugins.path().to_str().unwrap()),
    ]);
    let exporter = LoadedPluginExporter::load("both", &cfg, "agent-x").expect("the plug-in behind");
    assert_eq!(
        exporter.path(),
        std::fs::canonicalize(plugins.path().join("libtelemetry_exporter_both.so")).unwrap()
    );
    drop(exporter);

    // Only an adapter: not found, and the trail says which file was passed over.
    let cfg = config(&[
        ("NIXL_TELEMETRY_ENABLE", "1"),
        ("NIXL_TELEMETRY_EXPORTER", "both"),
        (
            "NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR",
            adapters.path().to_str().unwrap(),
        ),
    ]);
    let err = LoadedPluginExporter::load("both", &cfg, "agent-x").unwrap_err();
    assert!(matches!(err, PluginError::NotFound { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains(&format!(
            "{} (NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR; a NIXL adapter, passed over)",
            adapters
                .path()
                .join("libtelemetry_exporter_both.so")
                .display()
        )),
        "{msg}"
    );
}

#[test]
fn a_name_given_in_code_cannot_reach_outside_the_search_path() {
    // The file exists, one directory up from the searched one, behind a
    // directory whose name starts like a plug-in's.
    let dir = tempfile::tempdir().unwrap();
    let searched = dir.path().join("plugins");
    std::fs::create_dir_all(searched.join("libtelemetry_exporter_x")).unwrap();
    build_c_plugin("hostile.c", dir.path(), "evil", &[]);
    let cfg = plugin_config(&searched, "nop");
    for name in [
        "x/../../libtelemetry_exporter_evil",
        "../evil",
        "",
        ".hidden",
        "a b",
    ] {
        let err = LoadedPluginExporter::load(name, &cfg, "agent-x").unwrap_err();
        assert!(
            matches!(err, PluginError::InvalidName(_)),
            "{name:?}: {err:?}"
        );
        let msg = err.to_string();
        assert!(msg.contains("not an exporter plug-in name"), "{msg}");
        assert!(msg.contains("letters, digits"), "{msg}");
    }
}

#[test]
fn init_returning_null() {
    let dir = tempfile::tempdir().unwrap();
    build_c_plugin("hostile.c", dir.path(), "initnull", &["INIT_NULL"]);
    let err = load_error(dir.path(), "initnull");
    assert!(matches!(err, PluginError::InitFailed { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("the init function of"), "{msg}");
    assert!(msg.contains("returned NULL"), "{msg}");
    assert_names_plugin_and_search(&msg, "initnull", dir.path());
}

#[test]
fn an_api_version_the_host_does_not_accept() {
    let dir = tempfile::tempdir().unwrap();
    build_c_plugin("hostile.c", dir.path(), "v2", &["API_VERSION=2"]);
    let err = load_error(dir.path(), "v2");
    assert!(
        matches!(
            err,
            PluginError::UnsupportedApiVersion {
                found: 2,
                accepted: 1,
                ..
            }
        ),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("api_version 2, this host accepts only 1"),
        "{msg}"
    );
    assert_names_plugin_and_search(&msg, "v2", dir.path());
}

#[test]
fn a_struct_size_the_host_does_not_accept() {
    let dir = tempfile::tempdir().unwrap();
    for (size, name) in [("48", "small"), ("72", "big")] {
        build_c_plugin(
            "hostile.c",
            dir.path(),
            name,
            &[&format!("STRUCT_SIZE={size}")],
        );
        let err = load_error(dir.path(), name);
        assert!(
            matches!(err, PluginError::UnsupportedStructSize { accepted: 64, .. }),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("struct_size {size}, this host accepts only 64")),
            "{msg}"
        );
        assert_names_plugin_and_search(&msg, name, dir.path());
    }
}

#[test]
fn a_refused_plugin_still_gets_fini_before_it_is_unloaded() {
    // init ran, so fini runs too (a plug-in may have set something up in
    // init), whatever made the host refuse it.
    let dir = tempfile::tempdir().unwrap();
    for (name, define) in [
        ("finnull", "INIT_NULL"),
        ("finv2", "API_VERSION=2"),
        ("finsize", "STRUCT_SIZE=48"),
        ("finnocreate", "NULL_CREATE"),
    ] {
        let log = dir.path().join(format!("{name}.log"));
        build_c_plugin(
            "hostile.c",
            dir.path(),
            name,
            &[define, &format!("FINI_LOG=\"{}\"", log.display())],
        );
        load_error(dir.path(), name);
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "init\nfini\n",
            "{define}"
        );
    }
}

#[test]
fn a_descriptor_without_create_exporter() {
    let dir = tempfile::tempdir().unwrap();
    build_c_plugin("hostile.c", dir.path(), "nocreate", &["NULL_CREATE"]);
    let err = load_error(dir.path(), "nocreate");
    let msg = err.to_string();
    assert!(
        matches!(err, PluginError::InvalidDescriptor { .. }),
        "{err:?}"
    );
    assert!(msg.contains("create_exporter is NULL"), "{msg}");
    assert_names_plugin_and_search(&msg, "nocreate", dir.path());
}

#[test]
fn create_exporter_returning_null_shows_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    build_c_plugin("hostile.c", dir.path(), "refuse", &["CREATE_FAILS"]);
    let cfg = plugin_config(dir.path(), "refuse");
    let err = Telemetry::new("agent-x", cfg).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(&err, TelemetryError::Plugin(e) if matches!(**e, PluginError::CreateFailed { .. })),
        "{err:?}"
    );
    assert!(
        msg.contains("could not create an exporter for agent \"agent-x\""),
        "{msg}"
    );
    assert!(
        msg.contains("hostile plug-in refuses agent agent-x"),
        "{msg}"
    );
    assert_names_plugin_and_search(&msg, "refuse", dir.path());
    // The refused library was unloaded again.
    let path = std::fs::canonicalize(dir.path().join("libtelemetry_exporter_refuse.so")).unwrap();
    assert!(nixl_telemetry::exporter::plugin::loaded_libraries()
        .iter()
        .all(|(p, _)| *p != path));
}

#[test]
fn an_output_path_with_nul_is_refused_before_the_call() {
    let dir = tempfile::tempdir().unwrap();
    build_c_plugin("hostile.c", dir.path(), "nul", &[]);
    let mut cfg = plugin_config(dir.path(), "nul");
    cfg.output_path = Some("a\0b".to_owned());
    let err = LoadedPluginExporter::load("nul", &cfg, "agent-x").unwrap_err();
    assert!(
        matches!(
            err,
            PluginError::InvalidParameter {
                parameter: "output_path",
                ..
            }
        ),
        "{err:?}"
    );
    assert_names_plugin_and_search(&err.to_string(), "nul", dir.path());
}

#[test]
fn an_exporter_that_keeps_failing_is_counted_and_telemetry_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    build_c_plugin("hostile.c", dir.path(), "failing", &["EXPORT_FAILS"]);
    let telemetry = Telemetry::new("agent-x", plugin_config(dir.path(), "failing")).unwrap();
    for i in 0..50 {
        telemetry.record(Category::CUSTOM, "ev", i);
    }
    telemetry.flush();
    for i in 0..30 {
        telemetry.record(Category::CUSTOM, "ev", i);
    }
    telemetry.flush();
    let stats = telemetry.stats();
    assert_eq!(stats.recorded, 80);
    assert_eq!(stats.delivered, 0);
    // Every event, the loss reports included, failed; nothing else was lost.
    assert_eq!(
        stats.dropped.exporter_failed,
        80 + stats.generated,
        "{stats:?}"
    );
    assert!(
        stats.generated >= 2,
        "each flush reported the new losses: {stats:?}"
    );
    assert_eq!(stats.dropped.total(), stats.dropped.exporter_failed);
    assert_eq!(
        stats.recorded + stats.generated,
        stats.delivered + stats.dropped.total() + stats.pending
    );
}

#[test]
fn repeated_failures_are_logged_at_a_bounded_rate() {
    let dir = tempfile::tempdir().unwrap();
    build_c_plugin("hostile.c", dir.path(), "failing", &["EXPORT_FAILS"]);
    let cfg = plugin_config(dir.path(), "failing");
    let capture = Capture::default();
    capture.run(|| {
        let mut e = LoadedPluginExporter::load("failing", &cfg, "agent-x").unwrap();
        let batch = vec![nixl_telemetry::Event::new(1, Category::CUSTOM, "ev", 1); 10];
        for _ in 0..1000 {
            let outcome = e.export(&batch);
            assert_eq!((outcome.delivered, outcome.failed), (0, 10));
            e.flush();
        }
        assert!(!e.is_disabled(), "failures do not disable an exporter");
        let warnings = capture.events();
        let export_warnings: Vec<_> = warnings
            .iter()
            .filter(|c| c.text.contains("failed to export") || c.text.contains("keeps failing"))
            .collect();
        assert_eq!(export_warnings.len(), 1, "{warnings:#?}");
        let first = export_warnings[0];
        assert_eq!(first.level, tracing::Level::WARN);
        assert!(
            first.text.contains("plugin=failing") && first.text.contains("agent=agent-x"),
            "{}",
            first.text
        );
        assert!(
            first.text.contains("code=-1") && first.text.contains("events_lost=10"),
            "{}",
            first.text
        );
        let flush_warnings = warnings
            .iter()
            .filter(|c| c.text.contains("failed to flush"))
            .count();
        assert_eq!(flush_warnings, 1, "{warnings:#?}");
        drop(e);
        // Dropping reports what was not reported yet, once.
        let last: Vec<_> = capture
            .events()
            .into_iter()
            .filter(|c| c.text.contains("keeps failing"))
            .collect();
        assert_eq!(last.len(), 1, "{last:#?}");
        assert!(
            last[0].text.contains("failed_calls=999")
                && last[0].text.contains("events_lost=9990")
                && last[0].text.contains("events_lost_total=10000"),
            "{}",
            last[0].text
        );
    });
}
