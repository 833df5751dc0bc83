//! `include/nixl_telemetry.h` against the Rust side: every constant, struct
//! size and field offset (a C program prints them), every function's
//! signature (the compiler checks the header's declarations against C types
//! written next to the Rust function-pointer types they must equal), and the
//! set of names (the header's declarations, the library's exported symbols
//! and the table here are the same set). Also: the header compiles as C++
//! and the C++ wrapper as C++11 with every warning an error.

use crate::support;

use std::collections::BTreeSet;
use std::ffi::c_char;
use std::mem::{align_of, offset_of, size_of};
use std::process::Command;

use nixl_telemetry::Category;
use nixl_telemetry_capi::settings::{SETTINGS_V1_SIZE, SETTINGS_V2_SIZE};
use nixl_telemetry_capi::stats::{STATS_V1_SIZE, STATS_V2_SIZE};
use nixl_telemetry_capi::{
    exports, status, NixlTelemetry, NixlTelemetryHandle, NixlTelemetrySettings, NixlTelemetryStats,
    C_API_VERSION, DIRECTION_READ, DIRECTION_WRITE,
};
use nixl_telemetry_testsupport::header_syntax::check_header_syntax;
use support::{build_c, library_dir, run, test_source, workspace_root};

fn header() -> String {
    std::fs::read_to_string(workspace_root().join("include/nixl_telemetry.h")).unwrap()
}

#[test]
fn constants_sizes_and_offsets_match() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("layout");
    build_c(&[test_source("c/layout.c")], &exe, &[]);
    let out = run(&exe, &[], &[]);
    type S = NixlTelemetrySettings;
    type T = NixlTelemetryStats;
    let rust: Vec<(&str, i64)> = vec![
        ("c_api_version", C_API_VERSION as i64),
        ("ok", status::OK as i64),
        ("err_null", status::ERR_NULL as i64),
        ("err_invalid_name", status::ERR_INVALID_NAME as i64),
        ("err_invalid_category", status::ERR_INVALID_CATEGORY as i64),
        ("err_invalid_argument", status::ERR_INVALID_ARGUMENT as i64),
        ("err_config", status::ERR_CONFIG as i64),
        ("err_exporter", status::ERR_EXPORTER as i64),
        ("err_system", status::ERR_SYSTEM as i64),
        ("err_internal", status::ERR_INTERNAL as i64),
        ("category_memory", Category::MEMORY.0 as i64),
        ("category_transfer", Category::TRANSFER.0 as i64),
        ("category_connection", Category::CONNECTION.0 as i64),
        ("category_backend", Category::BACKEND.0 as i64),
        ("category_error", Category::ERROR.0 as i64),
        ("category_performance", Category::PERFORMANCE.0 as i64),
        ("category_system", Category::SYSTEM.0 as i64),
        ("category_custom", Category::CUSTOM.0 as i64),
        ("direction_read", DIRECTION_READ as i64),
        ("direction_write", DIRECTION_WRITE as i64),
        ("event_name_len", nixl_telemetry_abi_name_len()),
        ("settings_v1_size", SETTINGS_V1_SIZE as i64),
        ("stats_v1_size", STATS_V1_SIZE as i64),
        ("settings_v2_size", SETTINGS_V2_SIZE as i64),
        ("stats_v2_size", STATS_V2_SIZE as i64),
        ("settings.size", size_of::<S>() as i64),
        ("settings.align", align_of::<S>() as i64),
        ("settings.struct_size", offset_of!(S, struct_size) as i64),
        ("settings.enabled", offset_of!(S, enabled) as i64),
        ("settings.buffer_size", offset_of!(S, buffer_size) as i64),
        (
            "settings.run_interval_ms",
            offset_of!(S, run_interval_ms) as i64,
        ),
        ("settings.exporter", offset_of!(S, exporter) as i64),
        (
            "settings.ring_directory",
            offset_of!(S, ring_directory) as i64,
        ),
        ("settings.output_path", offset_of!(S, output_path) as i64),
        ("settings.plugin_dirs", offset_of!(S, plugin_dirs) as i64),
        (
            "settings.enabled_metrics",
            offset_of!(S, enabled_metrics) as i64,
        ),
        ("settings.ring_version", offset_of!(S, ring_version) as i64),
        ("stats.size", size_of::<T>() as i64),
        ("stats.align", align_of::<T>() as i64),
        ("stats.struct_size", offset_of!(T, struct_size) as i64),
        ("stats.reserved", offset_of!(T, reserved) as i64),
        ("stats.recorded", offset_of!(T, recorded) as i64),
        ("stats.generated", offset_of!(T, generated) as i64),
        ("stats.delivered", offset_of!(T, delivered) as i64),
        ("stats.pending", offset_of!(T, pending) as i64),
        ("stats.dropped_total", offset_of!(T, dropped_total) as i64),
        (
            "stats.dropped_staging_full",
            offset_of!(T, dropped_staging_full) as i64,
        ),
        (
            "stats.dropped_exporter_full",
            offset_of!(T, dropped_exporter_full) as i64,
        ),
        (
            "stats.dropped_exporter_failed",
            offset_of!(T, dropped_exporter_failed) as i64,
        ),
        ("stats.dropped_late", offset_of!(T, dropped_late) as i64),
        ("stats.dropped_format", offset_of!(T, dropped_format) as i64),
    ];
    nixl_telemetry_testsupport::c_values::assert_printed_values_match(
        "layout.c",
        &out.stdout,
        &rust,
    );
}

fn nixl_telemetry_abi_name_len() -> i64 {
    nixl_telemetry::Event::ZERO.event_name.len() as i64
}

/// Every exported function: its name, its Rust type (the assignment fails to
/// compile if the Rust signature differs) and the C type its header
/// declaration must have (the C compiler checks that).
macro_rules! signatures {
    ($($name:ident: $rust:ty => $c:literal;)*) => {
        vec![$({
            let _checked: $rust = exports::$name;
            (stringify!($name), $c)
        }),*]
    };
}

type T = NixlTelemetry;
type H = NixlTelemetryHandle;
type Ch = c_char;

fn signature_table() -> Vec<(&'static str, &'static str)> {
    signatures! {
        nixl_telemetry_create_from_env: unsafe extern "C" fn(*const Ch, *mut *mut T, *mut Ch, usize) -> i32
            => "int32_t (*)(const char *, nixl_telemetry_t **, char *, size_t)";
        nixl_telemetry_create: unsafe extern "C" fn(*const Ch, *const NixlTelemetrySettings, *mut *mut T, *mut Ch, usize) -> i32
            => "int32_t (*)(const char *, const nixl_telemetry_settings_t *, nixl_telemetry_t **, char *, size_t)";
        nixl_telemetry_destroy: unsafe extern "C" fn(*mut T) -> i32
            => "int32_t (*)(nixl_telemetry_t *)";
        nixl_telemetry_handle_create: unsafe extern "C" fn(*const T, i32, *const Ch, *mut *mut H, *mut Ch, usize) -> i32
            => "int32_t (*)(const nixl_telemetry_t *, int32_t, const char *, nixl_telemetry_handle_t **, char *, size_t)";
        nixl_telemetry_handle_destroy: unsafe extern "C" fn(*mut H) -> i32
            => "int32_t (*)(nixl_telemetry_handle_t *)";
        nixl_telemetry_handle_record: unsafe extern "C" fn(*const H, u64) -> i32
            => "int32_t (*)(const nixl_telemetry_handle_t *, uint64_t)";
        nixl_telemetry_handle_record_at: unsafe extern "C" fn(*const H, u64, u64) -> i32
            => "int32_t (*)(const nixl_telemetry_handle_t *, uint64_t, uint64_t)";
        nixl_telemetry_record: unsafe extern "C" fn(*const T, i32, *const Ch, u64) -> i32
            => "int32_t (*)(const nixl_telemetry_t *, int32_t, const char *, uint64_t)";
        nixl_telemetry_transfer_completed: unsafe extern "C" fn(*const T, u64, i32, u64) -> i32
            => "int32_t (*)(const nixl_telemetry_t *, uint64_t, int32_t, uint64_t)";
        nixl_telemetry_transfer_completed_at: unsafe extern "C" fn(*const T, u64, u64, i32, u64) -> i32
            => "int32_t (*)(const nixl_telemetry_t *, uint64_t, uint64_t, int32_t, uint64_t)";
        nixl_telemetry_post_time: unsafe extern "C" fn(*const T, u64) -> i32
            => "int32_t (*)(const nixl_telemetry_t *, uint64_t)";
        nixl_telemetry_post_time_at: unsafe extern "C" fn(*const T, u64, u64) -> i32
            => "int32_t (*)(const nixl_telemetry_t *, uint64_t, uint64_t)";
        nixl_telemetry_memory_registered: unsafe extern "C" fn(*const T, u64) -> i32
            => "int32_t (*)(const nixl_telemetry_t *, uint64_t)";
        nixl_telemetry_memory_deregistered: unsafe extern "C" fn(*const T, u64) -> i32
            => "int32_t (*)(const nixl_telemetry_t *, uint64_t)";
        nixl_telemetry_error: unsafe extern "C" fn(*const T, *const Ch) -> i32
            => "int32_t (*)(const nixl_telemetry_t *, const char *)";
        nixl_telemetry_backend_event: unsafe extern "C" fn(*const T, *const Ch, u64) -> i32
            => "int32_t (*)(const nixl_telemetry_t *, const char *, uint64_t)";
        nixl_telemetry_connection_event: unsafe extern "C" fn(*const T, *const Ch, u64) -> i32
            => "int32_t (*)(const nixl_telemetry_t *, const char *, uint64_t)";
        nixl_telemetry_flush: unsafe extern "C" fn(*const T) -> i32
            => "int32_t (*)(const nixl_telemetry_t *)";
        nixl_telemetry_stats: unsafe extern "C" fn(*const T, *mut NixlTelemetryStats) -> i32
            => "int32_t (*)(const nixl_telemetry_t *, nixl_telemetry_stats_t *)";
        nixl_telemetry_is_enabled: unsafe extern "C" fn(*const T) -> i32
            => "int32_t (*)(const nixl_telemetry_t *)";
        nixl_telemetry_now_us: extern "C" fn() -> u64
            => "uint64_t (*)(void)";
        nixl_telemetry_status_string: extern "C" fn(i32) -> *const Ch
            => "const char *(*)(int32_t)";
        nixl_telemetry_api_version: extern "C" fn() -> u32
            => "uint32_t (*)(void)";
    }
}

#[test]
fn every_declaration_has_the_rust_signature() {
    let table = signature_table();
    let mut src = String::from("#include \"nixl_telemetry.h\"\n");
    for (name, c_type) in &table {
        src.push_str(&format!(
            "_Static_assert(__builtin_types_compatible_p(__typeof__(&{name}), {c_type}), \"{name}: the header's declaration differs from the Rust signature\");\n"
        ));
    }
    src.push_str("int main(void) { return 0; }\n");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("signatures.c");
    std::fs::write(&file, src).unwrap();
    // GNU C for __builtin_types_compatible_p and __typeof__.
    check_header_syntax("cc", &["-std=gnu11"], &file).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn header_library_and_table_name_the_same_functions() {
    let table: BTreeSet<String> = signature_table()
        .iter()
        .map(|(n, _)| n.to_string())
        .collect();

    // Declarations: `<type> nixl_telemetry_xxx(` at the start of a line.
    let declared: BTreeSet<String> = header()
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.starts_with('#') && !l.starts_with('/'))
        .filter_map(|l| {
            let open = l.find('(')?;
            let name = l[..open].rsplit([' ', '*']).next()?;
            name.starts_with("nixl_telemetry_").then(|| name.to_owned())
        })
        .collect();
    assert_eq!(declared, table, "header declarations vs the table");

    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(library_dir().join("libnixl_telemetry.so"))
        .output()
        .expect("nm runs");
    assert!(out.status.success());
    let exported: BTreeSet<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|n| n.starts_with("nixl_telemetry"))
        .map(str::to_owned)
        .collect();
    assert_eq!(
        exported, table,
        "symbols exported by the library vs the table"
    );
}

#[test]
fn status_texts_name_the_header_macros() {
    let header = header();
    for (code, text) in status::ALL {
        let macro_name = text.split(':').next().unwrap();
        let line = format!("#define {macro_name} ");
        let defined = header
            .lines()
            .find(|l| l.starts_with(&line))
            .unwrap_or_else(|| panic!("the header defines {macro_name}"));
        let value = defined[line.len()..]
            .trim()
            .trim_matches(|c| c == '(' || c == ')');
        assert_eq!(value.parse::<i32>().unwrap(), code, "{defined}");
    }
}

#[test]
fn headers_compile_as_cplusplus_and_c() {
    let dir = tempfile::tempdir().unwrap();
    let cpp = dir.path().join("use.cpp");
    std::fs::write(
        &cpp,
        "#include \"nixl_telemetry.hpp\"\n\
         static_assert(sizeof(nixl_telemetry_settings_t) == NIXL_TELEMETRY_SETTINGS_V2_SIZE, \"settings\");\n\
         static_assert(sizeof(nixl_telemetry_stats_t) == NIXL_TELEMETRY_STATS_V2_SIZE, \"stats\");\n\
         int main() { return 0; }\n",
    )
    .unwrap();
    for standard in ["c++11", "c++17", "c++20"] {
        let std = format!("-std={standard}");
        check_header_syntax("c++", &[&std, "-pedantic"], &cpp).unwrap_or_else(|e| panic!("{e}"));
    }
    // Without exceptions only the noexcept twins exist, and they compile.
    let no_exceptions = dir.path().join("no_exceptions.cpp");
    std::fs::write(
        &no_exceptions,
        "#include \"nixl_telemetry.hpp\"\n\
         int main() {\n\
             nixl_telemetry::Telemetry t;\n\
             nixl_telemetry::Handle h;\n\
             nixl_telemetry::Telemetry::try_from_env(\"a\", t, nullptr);\n\
             t.try_handle(nixl_telemetry::Category::Custom, \"x\", h, nullptr);\n\
             return h.record(1) == NIXL_TELEMETRY_OK ? 0 : 1;\n\
         }\n",
    )
    .unwrap();
    check_header_syntax(
        "c++",
        &["-std=c++11", "-fno-exceptions", "-pedantic"],
        &no_exceptions,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let c = dir.path().join("use.c");
    std::fs::write(
        &c,
        "#include \"nixl_telemetry.h\"\nint main(void) { return 0; }\n",
    )
    .unwrap();
    for standard in ["c99", "c11"] {
        let std = format!("-std={standard}");
        check_header_syntax("cc", &[&std, "-pedantic"], &c).unwrap_or_else(|e| panic!("{e}"));
    }
}
