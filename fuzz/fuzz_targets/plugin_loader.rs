//! The plug-in loader's checks: the ELF check run on a plug-in file before it is
//! handed to the dynamic loader (first byte even: the rest is the file), and the
//! checks of the descriptor `nixl_telemetry_exporter_plugin_init` returns (first byte odd:
//! the rest describes the descriptor). Properties: no panic; a file that is not
//! ELF is left to the loader; a defect and a refused descriptor have messages; a
//! descriptor is accepted exactly when it is a non-NULL, aligned version-1
//! descriptor of the right size with its three required functions, and then its
//! name and version are the strings it gave.

#![no_main]
#![forbid(unsafe_code)]

use std::fs;
use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use nixl_telemetry::exporter::plugin::fuzzing::{check_descriptor, check_elf, DescriptorShape};
use nixl_telemetry_abi::c_abi::{PluginDescriptor, PLUGIN_API_VERSION};

fn plugin_path() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("nixl-fuzz-plugin-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("temporary directory");
        dir.join("libtelemetry_exporter_fuzzed.so")
    })
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    for (i, b) in word.iter_mut().enumerate() {
        *b = bytes.get(at + i).copied().unwrap_or(0);
    }
    u32::from_le_bytes(word)
}

fn descriptor(data: &[u8]) {
    // Layout of the input: flags, api_version (4, low byte toggles towards the real
    // one), struct_size (4), then name and version separated by the first 0xFF.
    let flags = data.first().copied().unwrap_or(0);
    let functions = data.get(1).copied().unwrap_or(0);
    let mut api_version = u32_at(data, 2);
    let mut struct_size = u32_at(data, 6);
    // Half the inputs keep the real version and size, so the later checks are reached.
    if flags & 0x10 != 0 {
        api_version = PLUGIN_API_VERSION;
    }
    if flags & 0x20 != 0 {
        struct_size = std::mem::size_of::<PluginDescriptor>() as u32;
    }
    let rest = data.get(10..).unwrap_or(&[]);
    let (name, version) = match rest.iter().position(|&b| b == 0xFF) {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (rest, &[][..]),
    };
    let shape = DescriptorShape {
        api_version,
        struct_size,
        functions,
        name: (flags & 0x01 == 0).then(|| name.to_vec()),
        version: (flags & 0x02 == 0).then(|| version.to_vec()),
        misaligned: flags & 0x04 != 0,
        null: flags & 0x08 != 0,
    };
    let acceptable = !shape.null
        && !shape.misaligned
        && api_version == PLUGIN_API_VERSION
        && struct_size as usize == std::mem::size_of::<PluginDescriptor>()
        && functions & 0b1_0011 == 0b1_0011;
    match check_descriptor(&shape) {
        Ok((got_name, got_version)) => {
            assert!(acceptable, "accepted {shape:?}");
            let text = |b: &Option<Vec<u8>>| {
                b.as_ref().map_or(String::new(), |b| {
                    let cut = b.iter().position(|&c| c == 0).unwrap_or(b.len());
                    String::from_utf8_lossy(&b[..cut]).into_owned()
                })
            };
            assert_eq!(got_name, text(&shape.name));
            assert_eq!(got_version, text(&shape.version));
        }
        Err(e) => {
            assert!(!acceptable, "refused {shape:?}: {e}");
            assert!(!e.to_string().is_empty());
        }
    }
}

fn elf(file: &[u8]) {
    let path = plugin_path();
    fs::write(path, file).expect("write the plug-in file");
    match check_elf(path) {
        Ok(()) => {}
        Err(defect) => {
            assert!(
                file.starts_with(b"\x7fELF"),
                "a file that is not ELF was refused: {defect}"
            );
            assert!(!defect.to_string().is_empty());
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    if selector & 1 == 0 {
        elf(rest);
    } else {
        descriptor(rest);
    }
});
