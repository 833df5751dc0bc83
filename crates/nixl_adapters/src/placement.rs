//! Putting adapters where a NIXL installation finds them.
//!
//! * [`stage`]: the built adapters copied under every exporter's name,
//!   `<root>/<generation>/libtelemetry_exporter_<name>.so` (install time);
//! * [`link`]: symbolic links to one generation's adapters in NIXL's own
//!   plug-in directory, so that `NIXL_TELEMETRY_EXPORTER=<name>` is all a job
//!   sets; [`unlink`] takes them away again;
//! * [`overlay`]: a directory for `NIXL_PLUGIN_DIR` with links to NIXL's own
//!   plug-ins and to the adapters, for jobs that opt in. It must sit beside
//!   NIXL's plug-in directory: NIXL's plug-ins find their libraries relative
//!   to the directory they are loaded from (`$ORIGIN/..` in their run path),
//!   and a link elsewhere would leave UCX and the others without them.
//!
//! A file is known to be an adapter by the mark it exports
//! (`nixl_telemetry_nixl_adapter`); NIXL's own files are never replaced.

use std::path::{Path, PathBuf};

use crate::elf_symbols::defined_dynamic_symbols;
use crate::generations::{nixl_name, Generation, GENERATIONS};

/// The symbol every adapter exports.
pub const ADAPTER_MARK: &str = "nixl_telemetry_nixl_adapter";
/// The file name of an exporter plug-in: `libtelemetry_exporter_<name>.so`.
pub fn plugin_file_name(name: &str) -> String {
    format!("libtelemetry_exporter_{name}.so")
}
/// The built adapter's file name in a generation's build directory.
pub const BUILT_ADAPTER: &str = "nixl_adapter.so";

/// Why adapters could not be put in place.
#[derive(Debug, thiserror::Error)]
pub enum PlacementError {
    /// A file operation failed.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The system's reason.
        source: std::io::Error,
    },
    /// A file of NIXL (or of someone else) is in the way.
    #[error("{path} exists and is not a nixl-telemetry adapter: refusing to replace it{hint}")]
    Occupied {
        /// The file.
        path: PathBuf,
        /// What to do.
        hint: String,
    },
    /// The request cannot work.
    #[error("{0}")]
    Refused(String),
}

fn io<'a>(
    what: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> PlacementError + 'a {
    move |source| PlacementError::Io {
        what,
        path: path.to_owned(),
        source,
    }
}

/// Whether the file at `path` (links followed) is an adapter.
pub fn is_adapter(path: &Path) -> bool {
    defined_dynamic_symbols(path).is_ok_and(|symbols| symbols.contains_key(ADAPTER_MARK))
}

/// Copies `<built>/<generation>/nixl_adapter.so` of every generation to
/// `<root>/<generation>/libtelemetry_exporter_<nixl name>.so` for each of our
/// plug-ins in `exporters` (each a file of its own: the dynamic loader shares
/// one image per file, and an adapter learns its exporter from its file name).
/// Files are replaced by renaming, so running processes keep the old ones.
pub fn stage(
    built: &Path,
    root: &Path,
    exporters: &[String],
) -> Result<Vec<PathBuf>, PlacementError> {
    let mut written = Vec::new();
    for generation in GENERATIONS {
        let source = built.join(generation.id).join(BUILT_ADAPTER);
        let dir = root.join(generation.id);
        std::fs::create_dir_all(&dir).map_err(io("cannot create", &dir))?;
        for ours in exporters {
            let target = dir.join(plugin_file_name(&nixl_name(ours)));
            let partial = dir.join(format!(".{}.partial", plugin_file_name(&nixl_name(ours))));
            std::fs::copy(&source, &partial).map_err(io("cannot copy the adapter to", &partial))?;
            std::fs::rename(&partial, &target).map_err(io("cannot install", &target))?;
            written.push(target);
        }
    }
    Ok(written)
}

/// The adapter files of `generation` under `root`, sorted.
pub fn adapter_files(root: &Path, generation: &Generation) -> Result<Vec<PathBuf>, PlacementError> {
    let dir = root.join(generation.id);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(io("cannot list the adapters in", &dir))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libtelemetry_exporter_") && n.ends_with(".so"))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(PlacementError::Refused(format!(
            "{} holds no adapters (libtelemetry_exporter_*.so); install them with scripts/install.sh",
            dir.display()
        )));
    }
    Ok(files)
}

/// Makes `link` a symbolic link to `target`, replacing a link that is there
/// (atomically: a new link renamed over the old one).
fn symlink_over(target: &Path, link: &Path) -> Result<(), PlacementError> {
    let name = link
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("adapter");
    let partial = link.with_file_name(format!(".{name}.partial"));
    let _ = std::fs::remove_file(&partial);
    std::os::unix::fs::symlink(target, &partial).map_err(io("cannot create the link", &partial))?;
    std::fs::rename(&partial, link).map_err(io("cannot place the link", link))
}

/// Whether `path` is a link this crate may replace or remove: to an adapter,
/// or dangling into an adapters directory (an uninstalled adapter).
fn is_our_link(path: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    if !meta.file_type().is_symlink() {
        return false;
    }
    if path.exists() {
        return is_adapter(path);
    }
    std::fs::read_link(path).is_ok_and(|t| t.components().any(|c| c.as_os_str() == "nixl_adapters"))
}

/// Links each of `adapters` into `plugin_dir` under its own file name.
pub fn link(plugin_dir: &Path, adapters: &[PathBuf]) -> Result<Vec<PathBuf>, PlacementError> {
    let mut linked = Vec::new();
    for adapter in adapters {
        let name = adapter.file_name().ok_or_else(|| {
            PlacementError::Refused(format!("{} has no file name", adapter.display()))
        })?;
        let place = plugin_dir.join(name);
        if std::fs::symlink_metadata(&place).is_ok() && !is_our_link(&place) {
            return Err(PlacementError::Occupied {
                path: place,
                hint: " (NIXL ships an exporter of this name)".to_owned(),
            });
        }
        let target = std::fs::canonicalize(adapter).map_err(io("cannot find", adapter))?;
        symlink_over(&target, &place)?;
        linked.push(place);
    }
    Ok(linked)
}

/// Removes the links to adapters from `plugin_dir`.
pub fn unlink(plugin_dir: &Path) -> Result<Vec<PathBuf>, PlacementError> {
    let mut removed = Vec::new();
    for entry in std::fs::read_dir(plugin_dir).map_err(io("cannot list", plugin_dir))? {
        let path = entry.map_err(io("cannot list", plugin_dir))?.path();
        if is_our_link(&path) {
            std::fs::remove_file(&path).map_err(io("cannot remove", &path))?;
            removed.push(path);
        }
    }
    removed.sort();
    Ok(removed)
}

/// Makes `overlay` a directory of links to every file of NIXL's `plugin_dir`
/// and to `adapters`, for `NIXL_PLUGIN_DIR`. `overlay` must be new, a previous
/// overlay (links only), and beside `plugin_dir`.
pub fn overlay(
    overlay: &Path,
    plugin_dir: &Path,
    adapters: &[PathBuf],
) -> Result<Vec<PathBuf>, PlacementError> {
    let nixl_parent = std::fs::canonicalize(plugin_dir)
        .map_err(io("cannot find", plugin_dir))?
        .parent()
        .map(Path::to_path_buf);
    let parent = overlay
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let parent = std::fs::canonicalize(parent).map_err(io("cannot find", parent))?;
    if Some(&parent) != nixl_parent.as_ref() {
        return Err(PlacementError::Refused(format!(
            "{} must be beside NIXL's plug-in directory {} (in {}): NIXL's plug-ins find their \
             libraries relative to the directory they are loaded from",
            overlay.display(),
            plugin_dir.display(),
            nixl_parent.as_deref().unwrap_or(Path::new("/")).display()
        )));
    }
    if overlay.exists() {
        for entry in std::fs::read_dir(overlay).map_err(io("cannot list", overlay))? {
            let path = entry.map_err(io("cannot list", overlay))?.path();
            let is_link =
                std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
            if !is_link {
                return Err(PlacementError::Occupied {
                    path,
                    hint: format!(
                        " ({} is not an overlay made by this command)",
                        overlay.display()
                    ),
                });
            }
        }
        for entry in std::fs::read_dir(overlay).map_err(io("cannot list", overlay))? {
            let path = entry.map_err(io("cannot list", overlay))?.path();
            std::fs::remove_file(&path).map_err(io("cannot remove", &path))?;
        }
    } else {
        std::fs::create_dir(overlay).map_err(io("cannot create", overlay))?;
    }
    let mut placed = Vec::new();
    let mut nixl_files: Vec<PathBuf> = std::fs::read_dir(plugin_dir)
        .map_err(io("cannot list", plugin_dir))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && !is_adapter(p))
        .collect();
    nixl_files.sort();
    for file in &nixl_files {
        let place = overlay.join(file.file_name().expect("a listed file has a name"));
        let target = std::fs::canonicalize(file).map_err(io("cannot find", file))?;
        symlink_over(&target, &place)?;
        placed.push(place);
    }
    for adapter in adapters {
        let name = adapter.file_name().expect("an adapter file has a name");
        let place = overlay.join(name);
        if placed.contains(&place) {
            return Err(PlacementError::Occupied {
                path: plugin_dir.join(name),
                hint: " (NIXL ships an exporter of this name)".to_owned(),
            });
        }
        let target = std::fs::canonicalize(adapter).map_err(io("cannot find", adapter))?;
        symlink_over(&target, &place)?;
        placed.push(place);
    }
    Ok(placed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A NIXL-like layout: <lib>/plugins with a file of NIXL's, and staged adapters.
    fn fixture() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let plugins = dir.path().join("lib/plugins");
        std::fs::create_dir_all(&plugins).unwrap();
        std::fs::write(plugins.join("libplugin_UCX.so"), b"not ours").unwrap();
        std::fs::write(plugins.join(plugin_file_name("prometheus")), b"NIXL's own").unwrap();
        let root = dir.path().join("prefix/lib/nixl/nixl_adapters");
        let names = ["otlp".to_owned(), "csv".to_owned(), "prometheus".to_owned()];
        stage(&crate::build_dir(), &root, &names).unwrap();
        (dir, plugins, root)
    }

    #[test]
    fn staged_adapters_carry_each_exporters_name_and_the_mark() {
        let (_dir, _plugins, root) = fixture();
        for generation in GENERATIONS {
            let files = adapter_files(&root, &generation).unwrap();
            let names: Vec<_> = files
                .iter()
                .map(|f| f.file_name().unwrap().to_str().unwrap().to_owned())
                .collect();
            assert_eq!(
                names,
                [
                    "libtelemetry_exporter_csv.so",
                    "libtelemetry_exporter_nixl_telemetry_prometheus.so",
                    "libtelemetry_exporter_otlp.so"
                ]
            );
            assert!(files.iter().all(|f| is_adapter(f)));
        }
    }

    #[test]
    fn link_and_unlink_touch_only_adapters() {
        let (_dir, plugins, root) = fixture();
        let g = &GENERATIONS[4];
        let files = adapter_files(&root, g).unwrap();
        let linked = link(&plugins, &files).unwrap();
        assert_eq!(linked.len(), 3);
        // Again: the links are replaced, nothing else changes.
        link(&plugins, &files).unwrap();
        assert_eq!(
            std::fs::read(plugins.join("libplugin_UCX.so")).unwrap(),
            b"not ours"
        );
        // A file of NIXL's under an adapter's name is never replaced.
        let mut clash = files.clone();
        let nixl_named = root.join(g.id).join(plugin_file_name("prometheus"));
        std::fs::copy(&files[0], &nixl_named).unwrap();
        clash.push(nixl_named);
        let err = link(&plugins, &clash).unwrap_err();
        assert!(matches!(err, PlacementError::Occupied { .. }), "{err}");
        assert!(
            err.to_string()
                .contains("NIXL ships an exporter of this name"),
            "{err}"
        );
        assert_eq!(
            std::fs::read(plugins.join(plugin_file_name("prometheus"))).unwrap(),
            b"NIXL's own"
        );
        let removed = unlink(&plugins).unwrap();
        assert_eq!(removed.len(), 3);
        let left: Vec<_> = std::fs::read_dir(&plugins)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 2, "{left:?}");
    }

    #[test]
    fn an_overlay_sits_beside_nixls_plugins_and_holds_both() {
        let (dir, plugins, root) = fixture();
        let files = adapter_files(&root, &GENERATIONS[0]).unwrap();
        let err = overlay(&dir.path().join("elsewhere"), &plugins, &files).unwrap_err();
        assert!(
            err.to_string()
                .contains("must be beside NIXL's plug-in directory"),
            "{err}"
        );
        let place = dir.path().join("lib/plugins-nixl-telemetry");
        let placed = overlay(&place, &plugins, &files).unwrap();
        assert_eq!(placed.len(), 5);
        assert_eq!(
            std::fs::read(place.join("libplugin_UCX.so")).unwrap(),
            b"not ours"
        );
        assert!(is_adapter(&place.join("libtelemetry_exporter_otlp.so")));
        // Made again (another generation): the old links go.
        let placed = overlay(
            &place,
            &plugins,
            &adapter_files(&root, &GENERATIONS[4]).unwrap(),
        )
        .unwrap();
        assert_eq!(placed.len(), 5);
        // Not over a directory of real files.
        let err = overlay(&plugins, &plugins, &files);
        assert!(err.is_err());
    }
}
