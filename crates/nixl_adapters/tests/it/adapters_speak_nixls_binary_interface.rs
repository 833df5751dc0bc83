//! The built adapters against the binary facts NIXL's wheels rely on: the
//! C++11 string ABI of libstdc++ (`std::__cxx11::basic_string`, checked with
//! `nm`), exactly NIXL's two entry points and our mark exported, and the
//! plug-in object's layout as NIXL reads it.

use std::process::Command;

use nixl_telemetry_nixl_adapters::elf_symbols::defined_dynamic_symbols;
use nixl_telemetry_nixl_adapters::{built_adapter, GENERATIONS};

fn nm(args: &[&str], file: &std::path::Path) -> String {
    let out = Command::new("nm")
        .args(args)
        .arg(file)
        .output()
        .expect("nm (binutils) runs");
    assert!(
        out.status.success(),
        "nm {args:?} {}: {out:?}",
        file.display()
    );
    String::from_utf8(out.stdout).expect("nm prints text")
}

#[test]
fn adapters_use_the_cxx11_string_abi_of_nixls_wheels() {
    for generation in GENERATIONS {
        let adapter = built_adapter(&generation);
        let demangled = nm(&["-C"], &adapter);
        assert!(
            demangled.contains("std::__cxx11::basic_string<char"),
            "{}: no C++11-ABI std::string in its symbols",
            adapter.display()
        );
        // The old (copy-on-write) std::string mangles as Ss; none may appear.
        let mangled = nm(&[], &adapter);
        let old_abi: Vec<_> = mangled
            .lines()
            .filter(|l| {
                l.split_whitespace().last().is_some_and(|s| {
                    s.contains("NSs") || s.contains("KSs") || s.starts_with("_ZSs")
                })
            })
            .collect();
        assert!(
            old_abi.is_empty(),
            "{}: old-ABI strings {old_abi:?}",
            adapter.display()
        );
    }
}

#[test]
fn adapters_export_nixls_entry_points_and_our_mark_only() {
    for generation in GENERATIONS {
        let adapter = built_adapter(&generation);
        let symbols = defined_dynamic_symbols(&adapter).unwrap();
        let mut names: Vec<_> = symbols.keys().map(String::as_str).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "nixl_telemetry_nixl_adapter",
                "nixl_telemetry_plugin_fini",
                "nixl_telemetry_plugin_init"
            ],
            "{}",
            adapter.display()
        );
        // The mark is the generation's name and its NUL.
        assert_eq!(
            symbols["nixl_telemetry_nixl_adapter"],
            generation.id.len() as u64 + 1
        );
        // And nm -D agrees (defined, global).
        let dynamic = nm(&["-D", "--defined-only"], &adapter);
        assert_eq!(dynamic.lines().count(), 3, "{dynamic}");
        assert!(!dynamic.contains("nixl_telemetry_exporter_plugin_init"));
    }
}

/// What NIXL reads of the object `nixl_telemetry_plugin_init` returns.
#[repr(C)]
struct PluginHead {
    api_version: u32,
    _padding: u32,
    create_exporter: *const (),
    name: *const std::ffi::c_char,
}

#[test]
fn an_adapter_called_by_a_program_that_is_not_nixl_answers_a_refused_version() {
    // This test binary has no nixlTelemetry symbols: every adapter must refuse it
    // through the API version (0, which no NIXL accepts), in NIXL's object layout.
    let dir = tempfile::tempdir().unwrap();
    for generation in GENERATIONS {
        let file = dir
            .path()
            .join(format!("{}/libtelemetry_exporter_csv.so", generation.id));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::copy(built_adapter(&generation), &file).unwrap();
        // SAFETY: loading the adapter runs only the C++ runtime's initialisers.
        let library = unsafe { libloading::Library::new(&file) }.unwrap();
        // SAFETY: the adapter's entry point takes nothing and returns its object.
        let init = unsafe {
            library
                .get::<unsafe extern "C" fn() -> *const PluginHead>(b"nixl_telemetry_plugin_init\0")
        }
        .unwrap();
        // SAFETY: as above; the object is static data of the loaded adapter.
        let head = unsafe { &*init() };
        assert_eq!(head.api_version, 0, "{}", generation.id);
        assert!(!head.create_exporter.is_null());
        // name is a std::string: its first word points at the characters.
        // SAFETY: a NUL-terminated std::string buffer of the loaded adapter.
        let name = unsafe { std::ffi::CStr::from_ptr(head.name) };
        assert_eq!(name.to_str().unwrap(), "csv", "{}", generation.id);
    }
}
