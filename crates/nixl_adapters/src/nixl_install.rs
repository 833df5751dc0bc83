//! A NIXL installation: where its libraries and plug-ins are, which release it
//! is, and which generation of the exporter interface it speaks.
//!
//! The interface is read from `libnixl.so`'s dynamic symbols, the facts the
//! adapters themselves check when NIXL loads them: the signature of
//! `nixlTelemetry::updateData` (how events are passed) and the size of the
//! virtual table of NIXL's own exporter (how many functions an exporter has).
//! The release, when the installation is a Python package, comes from its
//! metadata; the two must agree.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::elf_symbols::{defined_dynamic_symbols, ElfError};
use crate::generations::{generation_of_release, EventLayout, Generation, GENERATIONS};

/// `nixlTelemetry::updateData(const std::string &, nixl_telemetry_category_t, unsigned long)`.
pub const NAMED_UPDATE: &str = "_ZN13nixlTelemetry10updateDataERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE25nixl_telemetry_category_tm";
/// `nixlTelemetry::updateData(nixl_telemetry_event_type_t, nixl_telemetry_category_t, unsigned long)`.
pub const TYPED_WITH_CATEGORY_UPDATE: &str =
    "_ZN13nixlTelemetry10updateDataE27nixl_telemetry_event_type_t25nixl_telemetry_category_tm";
/// `nixlTelemetry::updateData(nixl_telemetry_event_type_t, unsigned long)`.
pub const TYPED_UPDATE: &str = "_ZN13nixlTelemetry10updateDataE27nixl_telemetry_event_type_tm";
/// The virtual table of NIXL's own exporter, `nixlTelemetryBufferExporter`.
pub const BUFFER_EXPORTER_VTABLE: &str = "_ZTV27nixlTelemetryBufferExporter";

/// Why an installation cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum InstallationError {
    /// Python could not be asked.
    #[error("cannot run {python} to find NIXL: {reason}")]
    Python {
        /// The interpreter.
        python: String,
        /// What went wrong.
        reason: String,
    },
    /// No NIXL package in that Python.
    #[error("{python} has no NIXL package (looked for the modules nixl_cu12, nixl_cu13 and nixl with their .<module>.mesonpy.libs directory): install NIXL there (pip install nixl-cu12), name the Python that has it with --python PY, or give NIXL's library directory with --nixl-lib DIR")]
    NoPackage {
        /// The interpreter.
        python: String,
    },
    /// The library directory lacks what NIXL installs.
    #[error("{dir} is not a NIXL library directory: {missing} is missing (a NIXL library directory holds libnixl.so and the plug-in directory plugins/)")]
    NotNixl {
        /// The directory.
        dir: String,
        /// What is missing.
        missing: String,
    },
    /// `libnixl.so` cannot be read.
    #[error(transparent)]
    Elf(#[from] ElfError),
    /// No generation fits.
    #[error("{0}")]
    Generation(String),
}

/// What `libnixl.so` shows of its exporter interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InterfaceFacts {
    /// How events are passed (named covers both named layouts).
    pub events: Option<EventLayout>,
    /// Entries of an exporter's virtual table (less offset-to-top and type info).
    pub exporter_functions: Option<u32>,
}

impl InterfaceFacts {
    /// The generations these facts allow (two for named events: up to 1.0
    /// and 1.1 differ in their API version and event size, which no symbol shows).
    pub fn candidates(&self) -> Vec<&'static Generation> {
        GENERATIONS
            .iter()
            .filter(|g| {
                let events = match (self.events, g.events) {
                    (
                        Some(EventLayout::Named),
                        EventLayout::NamedWithTimestamp | EventLayout::Named,
                    ) => true,
                    (Some(found), wanted) => found == wanted,
                    (None, _) => false,
                };
                events && self.exporter_functions == Some(g.exporter_functions)
            })
            .collect()
    }
}

/// A NIXL installation.
#[derive(Debug, Clone)]
pub struct Installation {
    /// The directory holding `libnixl.so`.
    pub lib_dir: PathBuf,
    /// NIXL's plug-in directory (`<lib_dir>/plugins`).
    pub plugin_dir: PathBuf,
    /// The package and release, when installed with pip (`nixl-cu12`, `1.5.1`).
    pub package: Option<(String, String)>,
}

const FIND_NIXL: &str = r#"
import importlib.metadata, importlib.util, json, os
found = None
for module, dist in (("nixl_cu12", "nixl-cu12"), ("nixl_cu13", "nixl-cu13"), ("nixl", "nixl")):
    try:
        spec = importlib.util.find_spec(module)
    except Exception:
        continue
    if spec is None or not spec.submodule_search_locations:
        continue
    site = os.path.dirname(list(spec.submodule_search_locations)[0])
    libs = os.path.join(site, "." + module + ".mesonpy.libs")
    if not os.path.isdir(libs):
        continue
    try:
        version = importlib.metadata.version(dist)
    except Exception:
        version = None
    found = {"libs": libs, "dist": dist, "version": version}
    break
print(json.dumps(found))
"#;

impl Installation {
    /// The NIXL package of the Python interpreter `python` (found without
    /// importing it).
    pub fn from_python(python: &Path) -> Result<Installation, InstallationError> {
        let shown = python.display().to_string();
        let output = Command::new(python)
            .args(["-c", FIND_NIXL])
            .output()
            .map_err(|e| InstallationError::Python {
                python: shown.clone(),
                reason: e.to_string(),
            })?;
        if !output.status.success() {
            return Err(InstallationError::Python {
                python: shown,
                reason: format!(
                    "{}: {}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr).trim()
                ),
            });
        }
        let answer: serde_json::Value =
            serde_json::from_slice(&output.stdout).map_err(|e| InstallationError::Python {
                python: shown.clone(),
                reason: format!("unexpected answer: {e}"),
            })?;
        if answer.is_null() {
            return Err(InstallationError::NoPackage { python: shown });
        }
        let field = |name: &str| answer.get(name).and_then(|v| v.as_str()).map(str::to_owned);
        let libs = field("libs").ok_or_else(|| InstallationError::Python {
            python: shown.clone(),
            reason: format!("unexpected answer {answer}"),
        })?;
        let mut installation = Installation::from_lib_dir(Path::new(&libs))?;
        installation.package = field("dist").zip(field("version"));
        Ok(installation)
    }

    /// The installation whose `libnixl.so` is in `dir` (a source build's
    /// library directory, or a wheel's `.nixl_cu12.mesonpy.libs`).
    pub fn from_lib_dir(dir: &Path) -> Result<Installation, InstallationError> {
        let lib_dir = std::fs::canonicalize(dir).map_err(|_| InstallationError::NotNixl {
            dir: dir.display().to_string(),
            missing: "the directory itself".to_owned(),
        })?;
        for needed in ["libnixl.so", "plugins"] {
            if !lib_dir.join(needed).exists() {
                return Err(InstallationError::NotNixl {
                    dir: lib_dir.display().to_string(),
                    missing: needed.to_owned(),
                });
            }
        }
        Ok(Installation {
            plugin_dir: lib_dir.join("plugins"),
            lib_dir,
            package: None,
        })
    }

    /// What `libnixl.so` shows of its exporter interface.
    pub fn interface(&self) -> Result<InterfaceFacts, InstallationError> {
        let symbols = defined_dynamic_symbols(&self.lib_dir.join("libnixl.so"))?;
        Ok(facts_from_symbols(|name| symbols.get(name).copied()))
    }

    /// The generation of this installation. `chosen` (an id) settles what the
    /// files cannot: it must be one the facts allow.
    pub fn generation(
        &self,
        chosen: Option<&str>,
    ) -> Result<&'static Generation, InstallationError> {
        let facts = self.interface()?;
        let candidates = facts.candidates();
        let list = |gs: &[&Generation]| gs.iter().map(|g| g.id).collect::<Vec<_>>().join(", ");
        let release = self.package.as_ref().map(|(_, v)| v.as_str());
        if candidates.is_empty() {
            return Err(InstallationError::Generation(format!(
                "{} shows an exporter interface no adapter serves ({facts:?}){}; adapters exist for: {}",
                self.lib_dir.join("libnixl.so").display(),
                release.map(|r| format!(", release {r}")).unwrap_or_default(),
                list(&GENERATIONS.iter().collect::<Vec<_>>())
            )));
        }
        if let Some(id) = chosen {
            return candidates
                .iter()
                .copied()
                .find(|g| g.id == id)
                .ok_or_else(|| {
                    InstallationError::Generation(format!(
                        "generation {id} does not fit {}: its interface allows {}",
                        self.lib_dir.display(),
                        list(&candidates)
                    ))
                });
        }
        if let Some(release) = release {
            if let Some(g) = generation_of_release(release) {
                return if candidates.contains(&g) {
                    Ok(g)
                } else {
                    Err(InstallationError::Generation(format!(
                        "release {release} should be {} but its libnixl.so allows only {}: a damaged or mixed installation",
                        g.id,
                        list(&candidates)
                    )))
                };
            }
        }
        match candidates.as_slice() {
            [one] => Ok(one),
            several => Err(InstallationError::Generation(format!(
                "{} has named events, the interface of both {} (API version 1 up to 1.0.x, 2 in 1.1.0), and no release number says which; choose with --generation",
                self.lib_dir.join("libnixl.so").display(),
                list(several)
            ))),
        }
    }
}

/// The interface facts from a symbol lookup (`size` of a defined symbol).
pub fn facts_from_symbols(size: impl Fn(&str) -> Option<u64>) -> InterfaceFacts {
    let events = if size(TYPED_UPDATE).is_some() {
        Some(EventLayout::Typed)
    } else if size(TYPED_WITH_CATEGORY_UPDATE).is_some() {
        Some(EventLayout::TypedWithCategory)
    } else if size(NAMED_UPDATE).is_some() {
        Some(EventLayout::Named)
    } else {
        None
    };
    let exporter_functions = size(BUFFER_EXPORTER_VTABLE)
        .filter(|&bytes| bytes >= 16 && bytes % 8 == 0)
        .and_then(|bytes| u32::try_from(bytes / 8 - 2).ok());
    InterfaceFacts {
        events,
        exporter_functions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(symbols: &[(&str, u64)]) -> InterfaceFacts {
        facts_from_symbols(|name| symbols.iter().find(|(n, _)| *n == name).map(|(_, s)| *s))
    }

    fn ids(facts: InterfaceFacts) -> Vec<&'static str> {
        facts.candidates().iter().map(|g| g.id).collect()
    }

    #[test]
    fn facts_pick_the_generations_they_allow() {
        let vt3 = (BUFFER_EXPORTER_VTABLE, 40);
        let vt5 = (BUFFER_EXPORTER_VTABLE, 56);
        assert_eq!(
            ids(facts(&[(NAMED_UPDATE, 1), vt3])),
            ["nixl-0.9-1.0", "nixl-1.1"]
        );
        assert_eq!(
            ids(facts(&[(TYPED_WITH_CATEGORY_UPDATE, 1), vt3])),
            ["nixl-1.2"]
        );
        assert_eq!(ids(facts(&[(TYPED_UPDATE, 1), vt3])), ["nixl-1.3-1.4"]);
        assert_eq!(ids(facts(&[(TYPED_UPDATE, 1), vt5])), ["nixl-1.5"]);
        // A future NIXL with more exporter functions, or none of these symbols: none.
        assert!(ids(facts(&[(TYPED_UPDATE, 1), (BUFFER_EXPORTER_VTABLE, 72)])).is_empty());
        assert!(ids(facts(&[vt3])).is_empty());
        assert!(ids(facts(&[(TYPED_UPDATE, 1)])).is_empty());
    }
}
