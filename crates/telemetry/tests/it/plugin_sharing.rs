//! One plug-in library serving several agents of one process: loaded and
//! initialised once, exporters destroyed before `fini`, unloaded with the last.

use nixl_telemetry_testsupport as support;

use std::path::Path;

use nixl_telemetry::exporter::plugin::{loaded_libraries, LoadedPluginExporter};
use nixl_telemetry::{Category, Telemetry, TelemetryConfig};
use support::{build_c_plugin, config, read_raw_events};

fn lifecycle(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn users_of(path: &Path) -> Option<usize> {
    let path = std::fs::canonicalize(path).unwrap();
    loaded_libraries()
        .into_iter()
        .find(|(p, _)| *p == path)
        .map(|(_, users)| users)
}

fn record_config(plugins: &Path, out: &Path) -> TelemetryConfig {
    config(&[
        ("NIXL_TELEMETRY_ENABLE", "1"),
        ("NIXL_TELEMETRY_EXPORTER", "record"),
        (
            "NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR",
            plugins.to_str().unwrap(),
        ),
        ("NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH", out.to_str().unwrap()),
        ("NIXL_TELEMETRY_BUFFER_SIZE", "256"),
        ("NIXL_TELEMETRY_RUN_INTERVAL", "2"),
    ])
}

#[test]
fn two_agents_share_one_loaded_plugin() {
    let plugins = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let log = plugins.path().join("lifecycle.log");
    let define = format!("LIFECYCLE_LOG=\"{}\"", log.display());
    let lib = build_c_plugin("record.c", plugins.path(), "record", &[&define]);
    let cfg = record_config(plugins.path(), out.path());

    let a = Telemetry::new("agent-a", cfg.clone()).unwrap();
    let b = Telemetry::new("agent-b", cfg.clone()).unwrap();
    assert_eq!(users_of(&lib), Some(2));
    assert_eq!(
        lifecycle(&log),
        ["init - 0", "create agent-a 1 256", "create agent-b 2 256"]
    );
    for i in 0..100 {
        a.record(Category::TRANSFER, "agent_tx_bytes", i);
        b.record(Category::TRANSFER, "agent_rx_bytes", 1000 + i);
    }
    a.flush();
    b.flush();

    drop(a);
    assert_eq!(users_of(&lib), Some(1));
    assert_eq!(lifecycle(&log).last().unwrap(), "destroy agent-a 1");
    // b still works after a's exporter went.
    b.record(Category::TRANSFER, "agent_rx_bytes", 5000);
    b.flush();
    assert_eq!(b.stats().delivered, 101);
    drop(b);
    assert_eq!(users_of(&lib), None);
    assert_eq!(
        lifecycle(&log)[3..],
        ["destroy agent-a 1", "destroy agent-b 0", "fini - 0"]
    );

    let a_events = read_raw_events(&out.path().join("agent-a.events"));
    let b_events = read_raw_events(&out.path().join("agent-b.events"));
    assert_eq!(a_events.len(), 100);
    assert_eq!(b_events.len(), 101);
    assert!(a_events
        .iter()
        .enumerate()
        .all(|(i, e)| e.value == i as u64 && e.name() == "agent_tx_bytes"));
    assert!(b_events.iter().all(|e| e.name() == "agent_rx_bytes"));

    // Loading again after the unload initialises the plug-in afresh.
    let again = LoadedPluginExporter::load("record", &cfg, "agent-c").unwrap();
    drop(again);
    assert_eq!(
        lifecycle(&log)[6..],
        [
            "init - 0",
            "create agent-c 1 256",
            "destroy agent-c 0",
            "fini - 0"
        ]
    );
}

#[test]
fn a_plugin_reached_through_a_hard_link_is_loaded_once() {
    // The dynamic loader shares one image per file, whatever the path: two
    // directories holding hard links of one library are one plug-in, with one
    // init and one fini after both exporters are gone.
    let first = tempfile::tempdir().unwrap();
    let second = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let log = first.path().join("lifecycle.log");
    let define = format!("LIFECYCLE_LOG=\"{}\"", log.display());
    let lib = build_c_plugin("record.c", first.path(), "record", &[&define]);
    std::fs::hard_link(&lib, second.path().join(lib.file_name().unwrap())).unwrap();

    let a = Telemetry::new("agent-a", record_config(first.path(), out.path())).unwrap();
    let b = Telemetry::new("agent-b", record_config(second.path(), out.path())).unwrap();
    assert_eq!(users_of(&lib), Some(2));
    drop(a);
    assert_eq!(users_of(&lib), Some(1));
    drop(b);
    assert_eq!(users_of(&lib), None);
    assert_eq!(
        lifecycle(&log),
        [
            "init - 0",
            "create agent-a 1 256",
            "create agent-b 2 256",
            "destroy agent-a 1",
            "destroy agent-b 0",
            "fini - 0"
        ]
    );
}

#[test]
fn concurrent_loads_and_unloads_keep_init_and_fini_paired() {
    let plugins = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let log = plugins.path().join("lifecycle.log");
    let define = format!("LIFECYCLE_LOG=\"{}\"", log.display());
    let lib = build_c_plugin("record.c", plugins.path(), "record", &[&define]);
    let cfg = record_config(plugins.path(), out.path());
    std::thread::scope(|s| {
        for t in 0..4 {
            let cfg = &cfg;
            s.spawn(move || {
                for round in 0..25 {
                    let agent = format!("agent-{t}-{round}");
                    let e = LoadedPluginExporter::load("record", cfg, &agent).unwrap();
                    drop(e);
                }
            });
        }
    });
    assert_eq!(users_of(&lib), None);
    // Replay the log: init only when unloaded, fini only with no exporter alive,
    // every create between an init and its fini.
    let mut loaded = false;
    let mut live = 0;
    let mut creates = 0;
    for line in lifecycle(&log) {
        let words: Vec<&str> = line.split(' ').collect();
        match words[0] {
            "init" => {
                assert!(!loaded, "init while loaded");
                loaded = true;
            }
            "fini" => {
                assert!(loaded && live == 0, "fini with {live} exporters alive");
                loaded = false;
            }
            "create" => {
                assert!(loaded);
                live += 1;
                creates += 1;
            }
            "destroy" => {
                assert!(loaded);
                live -= 1;
            }
            other => panic!("unexpected line {other}"),
        }
    }
    assert!(!loaded && live == 0);
    assert_eq!(creates, 100);
}
