//! The C header against the Rust layout, and a C plug-in compiled against it
//! receiving every recorded event intact.

use nixl_telemetry_testsupport as support;

use std::mem::{align_of, offset_of, size_of};
use std::process::Command;

use nixl_telemetry::exporter::plugin::LoadedPluginExporter;
use nixl_telemetry::{Category, Event, Exporter, Telemetry};
use nixl_telemetry_abi::c_abi::{
    CDelivery, CExporterParams, PluginDescriptor, EXPORT_FAILED, EXPORT_OK, EXPORT_PANICKED,
    LOG_DEBUG, LOG_ERROR, LOG_INFO, LOG_TRACE, LOG_WARN, PLUGIN_API_VERSION,
};
use support::header_syntax::check_header_syntax;
use support::{build_c_plugin, config, read_raw_events, workspace_root};

#[test]
fn header_layout_and_constants_match_the_rust_abi() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("layout");
    let out = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I"])
        .arg(workspace_root().join("include"))
        .arg(support::c_source("layout.c"))
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("cc runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(&exe).output().unwrap();
    assert!(out.status.success());
    let rust: Vec<(&str, i64)> = vec![
        ("api_version", PLUGIN_API_VERSION as i64),
        ("export_ok", EXPORT_OK as i64),
        ("export_failed", EXPORT_FAILED as i64),
        ("export_panicked", EXPORT_PANICKED as i64),
        (
            "event_name_len",
            nixl_telemetry_abi::EVENT_NAME_CAPACITY as i64,
        ),
        ("category_memory", Category::MEMORY.0 as i64),
        ("category_custom", Category::CUSTOM.0 as i64),
        ("event.size", size_of::<Event>() as i64),
        ("event.align", align_of::<Event>() as i64),
        ("event.timestamp_us", offset_of!(Event, timestamp_us) as i64),
        ("event.category", offset_of!(Event, category) as i64),
        ("event.event_name", offset_of!(Event, event_name) as i64),
        ("event.reserved", offset_of!(Event, reserved) as i64),
        ("event.value", offset_of!(Event, value) as i64),
        ("params.size", size_of::<CExporterParams>() as i64),
        (
            "params.agent_name",
            offset_of!(CExporterParams, agent_name) as i64,
        ),
        (
            "params.max_events_buffered",
            offset_of!(CExporterParams, max_events_buffered) as i64,
        ),
        (
            "params.output_path",
            offset_of!(CExporterParams, output_path) as i64,
        ),
        ("plugin.size", size_of::<PluginDescriptor>() as i64),
        (
            "plugin.api_version",
            offset_of!(PluginDescriptor, api_version) as i64,
        ),
        (
            "plugin.struct_size",
            offset_of!(PluginDescriptor, struct_size) as i64,
        ),
        ("plugin.name", offset_of!(PluginDescriptor, name) as i64),
        (
            "plugin.version",
            offset_of!(PluginDescriptor, version) as i64,
        ),
        (
            "plugin.create_exporter",
            offset_of!(PluginDescriptor, create_exporter) as i64,
        ),
        (
            "plugin.export_event",
            offset_of!(PluginDescriptor, export_event) as i64,
        ),
        (
            "plugin.export_batch",
            offset_of!(PluginDescriptor, export_batch) as i64,
        ),
        ("plugin.flush", offset_of!(PluginDescriptor, flush) as i64),
        (
            "plugin.destroy_exporter",
            offset_of!(PluginDescriptor, destroy_exporter) as i64,
        ),
        ("log_error", LOG_ERROR as i64),
        ("log_warn", LOG_WARN as i64),
        ("log_info", LOG_INFO as i64),
        ("log_debug", LOG_DEBUG as i64),
        ("log_trace", LOG_TRACE as i64),
        ("delivery.size", size_of::<CDelivery>() as i64),
        ("delivery.reserved", offset_of!(CDelivery, reserved) as i64),
        (
            "delivery.events_accepted",
            offset_of!(CDelivery, events_accepted) as i64,
        ),
        (
            "delivery.events_delivered",
            offset_of!(CDelivery, events_delivered) as i64,
        ),
        (
            "delivery.events_undelivered",
            offset_of!(CDelivery, events_undelivered) as i64,
        ),
    ];
    support::c_values::assert_printed_values_match("layout.c", &out.stdout, &rust);
}

#[test]
fn header_compiles_as_cplusplus() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("use.cpp");
    std::fs::write(
        &src,
        "#include \"nixl_telemetry_plugin.h\"\n\
         static_assert(sizeof(nixl_telemetry_event_t) == 56, \"event\");\n\
         extern \"C\" const nixl_telemetry_plugin_t *nixl_telemetry_exporter_plugin_init(void) { return nullptr; }\n\
         extern \"C\" void nixl_telemetry_exporter_plugin_fini(void) {}\n",
    )
    .unwrap();
    check_header_syntax("c++", &["-std=c++11", "-pedantic"], &src)
        .unwrap_or_else(|e| panic!("{e}"));
}

/// Events with every kind of field a plug-in must see unchanged.
fn sample_events() -> Vec<Event> {
    let mut events = Vec::new();
    let names = [
        "agent_tx_bytes",
        "NIXL_ERR_BACKEND",
        "ucx_rdma_read_completion_laten",  // 30 bytes
        "exactly_thirty_one_bytes_name_x", // 31 bytes
        "débit_µs",
        "with,comma",
    ];
    for i in 0..600u64 {
        let category = Category((i % 10) as i32); // 8 and 9 are unknown numbers
        let name = names[i as usize % names.len()];
        let value = match i % 3 {
            0 => i,
            1 => u64::MAX - i,
            _ => 1 << (i % 64),
        };
        events.push(Event::new(
            1_750_000_000_000_000 + i * 7,
            category,
            name,
            value,
        ));
    }
    events
}

fn record_all(telemetry: &Telemetry, events: &[Event]) {
    for e in events {
        telemetry
            .handle(e.category(), &e.name())
            .record_at(e.timestamp_us, e.value);
    }
}

fn check_c_plugin_receives_everything(defines: &[&str], with_batch: bool) {
    let plugins = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    build_c_plugin("record.c", plugins.path(), "record", defines);
    let cfg = config(&[
        ("NIXL_TELEMETRY_ENABLE", "1"),
        ("NIXL_TELEMETRY_EXPORTER", "record"),
        (
            "NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR",
            plugins.path().to_str().unwrap(),
        ),
        (
            "NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH",
            out.path().to_str().unwrap(),
        ),
        ("NIXL_TELEMETRY_BUFFER_SIZE", "1024"),
        ("NIXL_TELEMETRY_RUN_INTERVAL", "5"),
    ]);
    let direct = LoadedPluginExporter::load("record", &cfg, "probe").unwrap();
    assert_eq!(direct.has_export_batch(), with_batch);
    assert_eq!(direct.plugin_name(), "record");
    assert_eq!(direct.plugin_version(), "1.0.0");
    assert_eq!(direct.name(), "record");
    drop(direct);

    let events = sample_events();
    let telemetry = Telemetry::new("agent-c", cfg).unwrap();
    // Half, a flush, the other half: several batches and flush calls.
    record_all(&telemetry, &events[..300]);
    telemetry.flush();
    record_all(&telemetry, &events[300..]);
    telemetry.flush();
    let stats = telemetry.stats();
    assert_eq!(stats.delivered, events.len() as u64, "{stats:?}");
    assert_eq!(stats.dropped.total(), 0, "{stats:?}");
    drop(telemetry); // destroys the exporter: the plug-in closes its file

    let got = read_raw_events(&out.path().join("agent-c.events"));
    assert_eq!(got.len(), events.len());
    for (i, (g, want)) in got.iter().zip(&events).enumerate() {
        assert_eq!(g, want, "event {i}");
        assert_eq!(g.reserved, 0);
    }
}

#[test]
fn c_plugin_receives_every_event_intact_through_export_batch() {
    check_c_plugin_receives_everything(&[], true);
}

#[test]
fn c_plugin_without_export_batch_gets_each_event_through_export_event() {
    check_c_plugin_receives_everything(&["NO_BATCH"], false);
}
