//! `nixl_telemetry_settings_t`: telemetry configured from code.

use std::ffi::c_char;
use std::path::PathBuf;
use std::time::Duration;

use nixl_telemetry::config::{
    check_buffer_size, check_plugin_name, check_run_interval, parse_ring_version,
    DEFAULT_BUFFER_SIZE, DEFAULT_RING_LAYOUT, DEFAULT_RUN_INTERVAL,
};
use nixl_telemetry::filter::MetricFilter;
use nixl_telemetry::{ExporterChoice, TelemetryConfig};

use crate::names::setting_text;
use crate::status::CapiError;

/// `nixl_telemetry_settings_t`, version 1 (64 bytes on 64-bit targets).
///
/// A caller sets `struct_size` to `sizeof(nixl_telemetry_settings_t)` as its
/// header declares it. Fields appended by later versions go at the end; this
/// library accepts a larger struct when every byte past the fields it knows
/// is zero (so a newer caller that leaves new fields unset works), and refuses
/// a smaller one. Zero in a number field and NULL or "" in a text field mean
/// the default.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NixlTelemetrySettings {
    /// `sizeof(nixl_telemetry_settings_t)` as the caller knows it.
    pub struct_size: u32,
    /// 0: telemetry records nothing (every call is a cheap no-op); otherwise on.
    pub enabled: u32,
    /// Events per ring and per staging queue: a power of two from 2 to 2^26; 0 = 4096.
    pub buffer_size: u64,
    /// Flush interval in milliseconds, ≥ 1; 0 = 100.
    pub run_interval_ms: u64,
    /// `"buffer"`, `"nop"`, or a plug-in name (`libtelemetry_exporter_<name>.so`);
    /// NULL or "" = `buffer` when `ring_directory` is set, else collect only.
    pub exporter: *const c_char,
    /// The ring directory of the built-in `buffer` exporter (created if missing).
    pub ring_directory: *const c_char,
    /// Handed to a plug-in exporter as its output path (`ip:port`, a file…).
    pub output_path: *const c_char,
    /// `:`-separated directories searched for plug-ins first (as
    /// `NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR`).
    pub plugin_dirs: *const c_char,
    /// Comma-separated globs of event names to record; NULL or "" = all.
    pub enabled_metrics: *const c_char,
    /// The ring layout of the `buffer` exporter, as `NIXL_TELEMETRY_RING_VERSION`
    /// (version 2 of the struct); NULL or empty: version 1.
    pub ring_version: *const c_char,
}

/// `NIXL_TELEMETRY_SETTINGS_V1_SIZE`: the size of version 1 of the settings, the smallest accepted.
pub const SETTINGS_V1_SIZE: usize = 64;

/// `NIXL_TELEMETRY_SETTINGS_V2_SIZE`: the size of version 2 (adds `ring_version`).
pub const SETTINGS_V2_SIZE: usize = 72;

/// The size of the settings this library knows (grows when fields are appended).
pub const SETTINGS_KNOWN_SIZE: usize = std::mem::size_of::<NixlTelemetrySettings>();

const _: () = assert!(SETTINGS_KNOWN_SIZE >= SETTINGS_V1_SIZE);

impl NixlTelemetrySettings {
    /// Every field zero or NULL: the defaults, telemetry off. A caller's
    /// struct is copied over it, so fields an older caller does not have
    /// keep these values.
    pub const UNSET: NixlTelemetrySettings = NixlTelemetrySettings {
        struct_size: 0,
        enabled: 0,
        buffer_size: 0,
        run_interval_ms: 0,
        exporter: std::ptr::null(),
        ring_directory: std::ptr::null(),
        output_path: std::ptr::null(),
        plugin_dirs: std::ptr::null(),
        enabled_metrics: std::ptr::null(),
        ring_version: std::ptr::null(),
    };
}

/// The largest `struct_size` looked at (a guard against garbage in the field).
pub const MAX_STRUCT_SIZE: usize = 4096;

/// The alignment of every sized struct of the C API (they hold 64-bit fields),
/// so the `sizeof` of any version of them is a multiple of it: a size that is
/// not ends inside a field (or its padding).
pub const STRUCT_ALIGN: usize = 8;

const _: () = assert!(std::mem::align_of::<NixlTelemetrySettings>() == STRUCT_ALIGN);

/// Checks a caller's `struct_size`: the `sizeof` some version of the struct
/// can have — a multiple of [`STRUCT_ALIGN`] from `minimum` (version 1) to
/// [`MAX_STRUCT_SIZE`]. Any other size would end inside a field, whose bytes
/// would be half the caller's and half not.
pub fn check_struct_size(
    what: &'static str,
    size: u32,
    minimum: usize,
) -> Result<usize, CapiError> {
    let size = size as usize;
    if (minimum..=MAX_STRUCT_SIZE).contains(&size) && size.is_multiple_of(STRUCT_ALIGN) {
        Ok(size)
    } else {
        Err(CapiError::InvalidArgument {
            what,
            value: size.to_string(),
            accepted: format!("sizeof the struct as declared by nixl_telemetry.h: a multiple of {STRUCT_ALIGN} from {minimum} (version 1) to {MAX_STRUCT_SIZE}"),
        })
    }
}

/// The error for a larger settings struct whose unknown tail is not zero.
pub fn unknown_fields_set(size: usize) -> CapiError {
    CapiError::InvalidArgument {
        what: "settings.struct_size",
        value: size.to_string(),
        accepted: format!(
            "a struct of {SETTINGS_V1_SIZE} to {SETTINGS_KNOWN_SIZE} bytes, or a larger one whose bytes past {SETTINGS_KNOWN_SIZE} are zero (fields this library does not know must be left unset)"
        ),
    }
}

/// The text fields of a settings struct, read from C.
#[derive(Debug, Default, Clone, Copy)]
pub struct SettingsText<'a> {
    /// `exporter`.
    pub exporter: Option<&'a [u8]>,
    /// `ring_directory`.
    pub ring_directory: Option<&'a [u8]>,
    /// `output_path`.
    pub output_path: Option<&'a [u8]>,
    /// `plugin_dirs`.
    pub plugin_dirs: Option<&'a [u8]>,
    /// `enabled_metrics`.
    pub enabled_metrics: Option<&'a [u8]>,
    /// `ring_version`.
    pub ring_version: Option<&'a [u8]>,
}

/// The configuration a settings struct describes, every field checked; an
/// error names the field, the value and what is accepted.
pub fn to_config(
    settings: &NixlTelemetrySettings,
    text: SettingsText<'_>,
) -> Result<TelemetryConfig, CapiError> {
    let buffer_size = match settings.buffer_size {
        0 => DEFAULT_BUFFER_SIZE,
        n => check_buffer_size(
            "settings.buffer_size",
            usize::try_from(n).unwrap_or(usize::MAX),
        )
        .map_err(nixl_telemetry::TelemetryError::from)?,
    };
    let run_interval = match settings.run_interval_ms {
        0 => DEFAULT_RUN_INTERVAL,
        ms => check_run_interval("settings.run_interval_ms", Duration::from_millis(ms))
            .map_err(nixl_telemetry::TelemetryError::from)?,
    };
    let exporter = setting_text("settings.exporter", text.exporter)?.map(str::trim);
    let ring_directory = setting_text("settings.ring_directory", text.ring_directory)?;
    let output_path = setting_text("settings.output_path", text.output_path)?;
    let plugin_dirs = setting_text("settings.plugin_dirs", text.plugin_dirs)?;
    let enabled_metrics = setting_text("settings.enabled_metrics", text.enabled_metrics)?;
    let ring_layout = match setting_text("settings.ring_version", text.ring_version)?
        .map(str::trim)
        .filter(|v| !v.is_empty())
    {
        None => DEFAULT_RING_LAYOUT,
        Some(version) => parse_ring_version(version).map_err(|e| CapiError::InvalidArgument {
            what: "settings.ring_version",
            value: version.to_owned(),
            accepted: e.to_string(),
        })?,
    };
    let exporter = match exporter.filter(|e| !e.is_empty()) {
        None => ring_directory.map_or(ExporterChoice::None, |dir| ExporterChoice::Buffer {
            dir: PathBuf::from(dir),
        }),
        Some("buffer" | "BUFFER") => match ring_directory {
            Some(dir) => ExporterChoice::Buffer {
                dir: PathBuf::from(dir),
            },
            None => {
                return Err(CapiError::InvalidArgument {
                    what: "settings.ring_directory",
                    value: "NULL".to_owned(),
                    accepted: "a directory: settings.exporter=\"buffer\" writes its ring there"
                        .to_owned(),
                })
            }
        },
        Some("nop" | "NOP") => ExporterChoice::Nop,
        Some(name) => {
            check_plugin_name("settings.exporter", name)
                .map_err(nixl_telemetry::TelemetryError::from)?;
            ExporterChoice::Plugin {
                name: name.to_owned(),
            }
        }
    };
    Ok(TelemetryConfig {
        enabled: settings.enabled != 0,
        buffer_size,
        run_interval,
        exporter,
        ring_layout,
        output_path: output_path.map(str::to_owned),
        plugin_dirs: plugin_dirs
            .map(|dirs| {
                dirs.split(':')
                    .filter(|d| !d.is_empty())
                    .map(PathBuf::from)
                    .collect()
            })
            .unwrap_or_default(),
        nixl_plugin_dir: None,
        environment_libdir: None,
        enabled_metrics: enabled_metrics.and_then(MetricFilter::parse),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status;

    fn settings() -> NixlTelemetrySettings {
        NixlTelemetrySettings {
            struct_size: SETTINGS_V1_SIZE as u32,
            enabled: 1,
            ..NixlTelemetrySettings::UNSET
        }
    }

    #[test]
    fn zero_and_null_mean_the_defaults() {
        let config = to_config(&settings(), SettingsText::default()).unwrap();
        assert!(config.enabled);
        assert_eq!(config.buffer_size, DEFAULT_BUFFER_SIZE);
        assert_eq!(config.run_interval, DEFAULT_RUN_INTERVAL);
        assert_eq!(config.exporter, ExporterChoice::None);
        assert!(config.enabled_metrics.is_none() && config.plugin_dirs.is_empty());
    }

    #[test]
    fn exporter_choice() {
        let text = SettingsText {
            ring_directory: Some(b"/tmp/rings"),
            ..SettingsText::default()
        };
        assert_eq!(
            to_config(&settings(), text).unwrap().exporter,
            ExporterChoice::Buffer {
                dir: "/tmp/rings".into()
            }
        );
        let nop = SettingsText {
            exporter: Some(b"nop"),
            plugin_dirs: Some(b"/a::/b"),
            enabled_metrics: Some(b"agent_*"),
            ..text
        };
        let config = to_config(&settings(), nop).unwrap();
        assert_eq!(config.exporter, ExporterChoice::Nop);
        assert_eq!(
            config.plugin_dirs,
            vec![PathBuf::from("/a"), PathBuf::from("/b")]
        );
        assert!(config.enabled_metrics.unwrap().allows("agent_tx_bytes"));
        let plugin = SettingsText {
            exporter: Some(b"csv"),
            output_path: Some(b"/tmp/x.csv"),
            ..SettingsText::default()
        };
        let config = to_config(&settings(), plugin).unwrap();
        assert_eq!(
            config.exporter,
            ExporterChoice::Plugin { name: "csv".into() }
        );
        assert_eq!(config.output_path.as_deref(), Some("/tmp/x.csv"));
    }

    #[test]
    fn bad_settings_name_their_field() {
        let cases: Vec<(NixlTelemetrySettings, SettingsText, i32, &str)> = vec![
            (
                NixlTelemetrySettings {
                    buffer_size: 1000,
                    ..settings()
                },
                SettingsText::default(),
                status::ERR_CONFIG,
                "settings.buffer_size=\"1000\"",
            ),
            (
                NixlTelemetrySettings {
                    buffer_size: u64::MAX,
                    ..settings()
                },
                SettingsText::default(),
                status::ERR_CONFIG,
                "settings.buffer_size",
            ),
            (
                settings(),
                SettingsText {
                    exporter: Some(b"buffer"),
                    ..SettingsText::default()
                },
                status::ERR_INVALID_ARGUMENT,
                "settings.ring_directory",
            ),
            (
                settings(),
                SettingsText {
                    exporter: Some(b"../evil"),
                    ..SettingsText::default()
                },
                status::ERR_CONFIG,
                "settings.exporter",
            ),
            (
                settings(),
                SettingsText {
                    output_path: Some(b"\xff"),
                    ..SettingsText::default()
                },
                status::ERR_INVALID_ARGUMENT,
                "settings.output_path",
            ),
        ];
        for (s, text, code, needle) in cases {
            let err = to_config(&s, text).unwrap_err();
            assert_eq!(err.status(), code, "{err}");
            let msg = err.to_string();
            assert!(msg.contains(needle) && msg.contains("accepted"), "{msg}");
        }
    }

    #[test]
    fn every_accepted_size_up_to_the_known_one_ends_a_field() {
        use std::mem::{offset_of, size_of};
        let ends = [
            offset_of!(NixlTelemetrySettings, struct_size) + size_of::<u32>(),
            offset_of!(NixlTelemetrySettings, enabled) + size_of::<u32>(),
            offset_of!(NixlTelemetrySettings, buffer_size) + size_of::<u64>(),
            offset_of!(NixlTelemetrySettings, run_interval_ms) + size_of::<u64>(),
            offset_of!(NixlTelemetrySettings, exporter) + size_of::<usize>(),
            offset_of!(NixlTelemetrySettings, ring_directory) + size_of::<usize>(),
            offset_of!(NixlTelemetrySettings, output_path) + size_of::<usize>(),
            offset_of!(NixlTelemetrySettings, plugin_dirs) + size_of::<usize>(),
            offset_of!(NixlTelemetrySettings, enabled_metrics) + size_of::<usize>(),
            offset_of!(NixlTelemetrySettings, ring_version) + size_of::<usize>(),
        ];
        for size in 0..=SETTINGS_KNOWN_SIZE as u32 {
            if check_struct_size("s", size, SETTINGS_V1_SIZE).is_ok() {
                assert!(ends.contains(&(size as usize)), "{size} ends no field");
            }
        }
    }

    #[test]
    fn struct_sizes() {
        assert_eq!(SETTINGS_KNOWN_SIZE, SETTINGS_V2_SIZE);
        assert!(check_struct_size("s", 64, 64).is_ok());
        assert!(check_struct_size("s", 128, 64).is_ok());
        for bad in [0, 63, 65, 71, 76, 4097, 4100, u32::MAX] {
            let err = check_struct_size("settings.struct_size", bad, 64).unwrap_err();
            assert_eq!(err.status(), status::ERR_INVALID_ARGUMENT);
            assert!(
                err.to_string()
                    .contains(&format!("settings.struct_size={bad}")),
                "{err}"
            );
        }
    }
}
