//! Every `struct_size` from 0 to the current size + 8, for each sized struct
//! of the C API: a size that ends inside a field (or is not the `sizeof` of
//! any version: not a multiple of 8) is `NIXL_TELEMETRY_ERR_INVALID_ARGUMENT`,
//! and nothing past `struct_size` bytes is read or written. A settings struct
//! whose last field would be cut (65…71 bytes with `ring_version` set) was
//! once read as a pointer made of the caller's low bytes and zeros.

use std::ffi::{c_char, CStr};

use nixl_telemetry_capi::exports::{
    nixl_telemetry_create, nixl_telemetry_destroy, nixl_telemetry_stats,
};
use nixl_telemetry_capi::settings::{SETTINGS_KNOWN_SIZE, SETTINGS_V1_SIZE, SETTINGS_V2_SIZE};
use nixl_telemetry_capi::stats::{STATS_KNOWN_SIZE, STATS_V1_SIZE, STATS_V2_SIZE};
use nixl_telemetry_capi::status::{ERR_INVALID_ARGUMENT, OK};
use nixl_telemetry_capi::{NixlTelemetry, NixlTelemetrySettings, NixlTelemetryStats};

/// A caller's memory: the struct, then bytes it does not own.
#[repr(C, align(8))]
struct Memory([u8; 256]);

impl Memory {
    /// `settings` followed by zeros.
    fn holding(settings: NixlTelemetrySettings) -> Memory {
        let mut memory = Memory([0; 256]);
        // SAFETY: the struct fits in the 256 bytes, which are 8-aligned.
        unsafe {
            memory
                .0
                .as_mut_ptr()
                .cast::<NixlTelemetrySettings>()
                .write(settings)
        };
        memory
    }
}

/// The sizes `sizeof` of some version can have: the versions this library
/// knows, and larger multiples of 8 (a newer header's).
fn accepted(size: usize, versions: &[usize], known: usize) -> bool {
    versions.contains(&size) || (size > known && size.is_multiple_of(8))
}

fn create(memory: &Memory) -> (i32, String) {
    let mut out: *mut NixlTelemetry = std::ptr::null_mut();
    let mut err = [0 as c_char; 512];
    // SAFETY: the agent name is NUL-terminated; `memory` holds a settings
    // struct of its struct_size readable bytes (and more); out and err are
    // writable.
    let status = unsafe {
        nixl_telemetry_create(
            c"struct-sizes".as_ptr(),
            memory.0.as_ptr().cast(),
            &mut out,
            err.as_mut_ptr(),
            err.len(),
        )
    };
    if status == OK {
        // SAFETY: created just now.
        assert_eq!(unsafe { nixl_telemetry_destroy(out) }, OK);
    } else {
        assert!(out.is_null());
    }
    // SAFETY: the library NUL-terminates its message within err.
    let message = unsafe { CStr::from_ptr(err.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    (status, message)
}

#[test]
fn settings_sizes_that_end_inside_a_field_are_refused() {
    let settings = NixlTelemetrySettings {
        enabled: 1,
        exporter: c"nop".as_ptr(),
        // Read only by a struct that holds all of it.
        ring_version: c"4".as_ptr(),
        ..NixlTelemetrySettings::UNSET
    };
    let versions = [SETTINGS_V1_SIZE, SETTINGS_V2_SIZE];
    for size in 0..=SETTINGS_KNOWN_SIZE + 8 {
        let mut memory = Memory::holding(settings);
        memory.0[..4].copy_from_slice(&(size as u32).to_ne_bytes());
        let (status, message) = create(&memory);
        if accepted(size, &versions, SETTINGS_KNOWN_SIZE) {
            assert_eq!(status, OK, "struct_size {size}: {message}");
        } else {
            assert_eq!(
                status, ERR_INVALID_ARGUMENT,
                "struct_size {size}: {message}"
            );
            assert!(
                message.contains(&format!("settings.struct_size={size} is invalid"))
                    && message.contains("multiple of 8"),
                "struct_size {size}: {message}"
            );
        }
    }
}

#[test]
fn a_version_1_struct_never_reads_the_version_2_field() {
    // A version-1 caller's struct ends at byte 64: what follows is not its
    // own (here a bad ring version that would be refused if it were read).
    let settings = NixlTelemetrySettings {
        struct_size: SETTINGS_V1_SIZE as u32,
        enabled: 1,
        exporter: c"nop".as_ptr(),
        ring_version: c"not a version".as_ptr(),
        ..NixlTelemetrySettings::UNSET
    };
    assert_eq!(create(&Memory::holding(settings)).0, OK);
}

#[test]
fn stats_sizes_that_end_inside_a_field_are_refused_and_nothing_past_is_written() {
    let mut telemetry: *mut NixlTelemetry = std::ptr::null_mut();
    let settings = NixlTelemetrySettings {
        struct_size: SETTINGS_KNOWN_SIZE as u32,
        enabled: 1,
        exporter: c"nop".as_ptr(),
        ..NixlTelemetrySettings::UNSET
    };
    // SAFETY: valid name, settings and output; no error buffer.
    let status = unsafe {
        nixl_telemetry_create(
            c"stats-sizes".as_ptr(),
            &settings,
            &mut telemetry,
            std::ptr::null_mut(),
            0,
        )
    };
    assert_eq!(status, OK);
    let versions = [STATS_V1_SIZE, STATS_V2_SIZE];
    for size in 0..=STATS_KNOWN_SIZE + 8 {
        let mut memory = Memory([0xAA; 256]);
        memory.0[..4].copy_from_slice(&(size as u32).to_ne_bytes());
        // SAFETY: telemetry is live; memory holds 256 writable, 8-aligned bytes.
        let status = unsafe {
            nixl_telemetry_stats(
                telemetry,
                memory.0.as_mut_ptr().cast::<NixlTelemetryStats>(),
            )
        };
        let size_field = u32::from_ne_bytes(memory.0[..4].try_into().unwrap());
        assert_eq!(size_field as usize, size, "struct_size is left unchanged");
        if accepted(size, &versions, STATS_KNOWN_SIZE) {
            assert_eq!(status, OK, "struct_size {size}");
            // The reserved field and every byte past the known fields: zero.
            assert!(memory.0[4..8].iter().all(|&b| b == 0), "struct_size {size}");
            if size > STATS_KNOWN_SIZE {
                assert!(
                    memory.0[STATS_KNOWN_SIZE..size].iter().all(|&b| b == 0),
                    "struct_size {size}"
                );
            }
            assert!(
                memory.0[size..].iter().all(|&b| b == 0xAA),
                "struct_size {size}: written past the struct"
            );
        } else {
            assert_eq!(status, ERR_INVALID_ARGUMENT, "struct_size {size}");
            assert!(
                memory.0[4..].iter().all(|&b| b == 0xAA),
                "struct_size {size}: a refused call wrote into the struct"
            );
        }
    }
    // SAFETY: created above.
    assert_eq!(unsafe { nixl_telemetry_destroy(telemetry) }, OK);
}
