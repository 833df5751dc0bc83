//! Where plug-ins are looked for.
//!
//! The search path, in order (duplicates after the first are skipped):
//!
//! 1. every directory of `NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR` (`:`-separated),
//! 2. `NIXL_PLUGIN_DIR`,
//! 3. `<exe dir>/../lib/nixl/telemetry_exporters`, where `<exe dir>` is the
//!    directory of the running executable (symlinks resolved): the layout of an
//!    installed prefix, `<prefix>/bin/app` next to `<prefix>/lib`,
//! 4. `<environment libdir>/nixl/telemetry_exporters`, when the host names the
//!    `lib` directory of its environment (the Python package gives
//!    `<sys.prefix>/lib`: a virtual environment's `python` resolves to an
//!    interpreter outside it, so 3. misses the plug-ins a wheel installed there),
//! 5. `<libdir>/nixl/telemetry_exporters`, where `<libdir>` is fixed when this
//!    crate is compiled: `$NIXL_TELEMETRY_LIBDIR` if that variable is set at
//!    build time, else `/usr/local/lib`.
//!
//! The first directory holding a file `libtelemetry_exporter_<name>.so`
//! (a regular file or a symlink to one) wins; a file that is found but cannot
//! be loaded is an error, the search does not go on past it. One kind of file
//! is passed over: a NIXL adapter (it exports `nixl_telemetry_nixl_adapter`),
//! which serves NIXL's own plug-in interface and sits in NIXL's plug-in
//! directory under one of our plug-ins' names.

use nixl_telemetry_abi::env::{EXPORTER_PLUGIN_DIR, NIXL_PLUGIN_DIR};
use std::fmt;
use std::path::{Path, PathBuf};

use nixl_telemetry_abi::c_abi::library_file_name;

use crate::config::TelemetryConfig;

/// The compile-time library directory: `$NIXL_TELEMETRY_LIBDIR` at build time,
/// else `/usr/local/lib`.
pub const INSTALL_LIBDIR: &str = match option_env!("NIXL_TELEMETRY_LIBDIR") {
    Some(dir) => dir,
    None => "/usr/local/lib",
};

/// The directory below a libdir that holds exporter plug-ins.
pub const PLUGIN_SUBDIR: &str = "nixl/telemetry_exporters";

/// Which setting put a directory on the search path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SearchOrigin {
    /// `NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR`.
    PluginDirVariable,
    /// `NIXL_PLUGIN_DIR`.
    NixlPluginDir,
    /// `<exe dir>/../lib/nixl/telemetry_exporters`.
    ExecutableLibdir,
    /// `<environment libdir>/nixl/telemetry_exporters` (the host's environment,
    /// e.g. a Python virtual environment).
    EnvironmentLibdir,
    /// The compile-time `<libdir>/nixl/telemetry_exporters`.
    InstallLibdir,
}

impl fmt::Display for SearchOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SearchOrigin::PluginDirVariable => EXPORTER_PLUGIN_DIR,
            SearchOrigin::NixlPluginDir => NIXL_PLUGIN_DIR,
            SearchOrigin::ExecutableLibdir => "next to the executable",
            SearchOrigin::EnvironmentLibdir => "the host's environment",
            SearchOrigin::InstallLibdir => "install libdir",
        })
    }
}

/// One candidate path and why it was tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchedPath {
    /// The full path of the candidate file.
    pub path: PathBuf,
    /// The setting that named its directory.
    pub origin: SearchOrigin,
    /// The file is a NIXL adapter (not a plug-in of this ABI) and was passed over.
    pub nixl_adapter: bool,
}

impl fmt::Display for SearchedPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}", self.path.display(), self.origin)?;
        if self.nixl_adapter {
            f.write_str("; a NIXL adapter, passed over")?;
        }
        f.write_str(")")
    }
}

/// The directories searched for plug-ins under `config`, in order, without duplicates.
pub fn search_dirs(config: &TelemetryConfig) -> Vec<(PathBuf, SearchOrigin)> {
    let mut dirs: Vec<(PathBuf, SearchOrigin)> = Vec::new();
    let mut push = |dir: PathBuf, origin| {
        if !dir.as_os_str().is_empty() && !dirs.iter().any(|(d, _)| *d == dir) {
            dirs.push((dir, origin));
        }
    };
    for dir in &config.plugin_dirs {
        push(dir.clone(), SearchOrigin::PluginDirVariable);
    }
    if let Some(dir) = &config.nixl_plugin_dir {
        push(dir.clone(), SearchOrigin::NixlPluginDir);
    }
    if let Some(dir) = executable_libdir() {
        push(dir.join(PLUGIN_SUBDIR), SearchOrigin::ExecutableLibdir);
    }
    if let Some(dir) = &config.environment_libdir {
        push(dir.join(PLUGIN_SUBDIR), SearchOrigin::EnvironmentLibdir);
    }
    push(
        Path::new(INSTALL_LIBDIR).join(PLUGIN_SUBDIR),
        SearchOrigin::InstallLibdir,
    );
    dirs
}

/// `<dir of the running executable>/../lib`, symlinks resolved.
fn executable_libdir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
    let bin = exe.parent()?;
    Some(bin.parent()?.join("lib"))
}

/// The outcome of a search.
#[derive(Debug)]
pub struct Search {
    /// The file found, if any.
    pub found: Option<PathBuf>,
    /// The candidates tried, in order; the last one is the file found, if any.
    pub searched: Vec<SearchedPath>,
}

/// Looks for `libtelemetry_exporter_<name>.so` along [`search_dirs`], passing
/// over the files of `nixl_adapters` (found to be NIXL adapters by an earlier
/// search).
pub fn locate(name: &str, config: &TelemetryConfig, nixl_adapters: &[PathBuf]) -> Search {
    let file = library_file_name(name);
    let mut searched = Vec::new();
    for (dir, origin) in search_dirs(config) {
        let path = dir.join(&file);
        let nixl_adapter = nixl_adapters.contains(&path);
        let is_file = !nixl_adapter && std::fs::metadata(&path).is_ok_and(|m| m.is_file());
        searched.push(SearchedPath {
            path: path.clone(),
            origin,
            nixl_adapter,
        });
        if is_file {
            return Search {
                found: Some(path),
                searched,
            };
        }
    }
    Search {
        found: None,
        searched,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(plugin_dirs: &[&str], nixl: Option<&str>) -> TelemetryConfig {
        TelemetryConfig {
            plugin_dirs: plugin_dirs.iter().map(PathBuf::from).collect(),
            nixl_plugin_dir: nixl.map(PathBuf::from),
            ..TelemetryConfig::default()
        }
    }

    #[test]
    fn order_is_variables_then_nixl_then_install_dirs() {
        let dirs = search_dirs(&config(&["/a", "/b", "/a"], Some("/c")));
        let origins: Vec<_> = dirs.iter().map(|(_, o)| *o).collect();
        assert_eq!(dirs[0].0, PathBuf::from("/a"));
        assert_eq!(dirs[1].0, PathBuf::from("/b"));
        assert_eq!(dirs[2].0, PathBuf::from("/c"));
        assert_eq!(
            &origins[..3],
            &[
                SearchOrigin::PluginDirVariable,
                SearchOrigin::PluginDirVariable,
                SearchOrigin::NixlPluginDir
            ]
        );
        assert_eq!(origins.last(), Some(&SearchOrigin::InstallLibdir));
        assert_eq!(
            dirs.last().unwrap().0,
            Path::new(INSTALL_LIBDIR).join("nixl/telemetry_exporters")
        );
        let exe_dir = dirs
            .iter()
            .find(|(_, o)| *o == SearchOrigin::ExecutableLibdir)
            .expect("the executable's libdir is searched");
        assert!(exe_dir.0.ends_with("lib/nixl/telemetry_exporters"));
        assert!(
            !origins.contains(&SearchOrigin::EnvironmentLibdir),
            "no environment libdir unless the host names one"
        );
    }

    #[test]
    fn the_hosts_environment_comes_after_the_executable_and_before_the_install_dir() {
        let cfg = TelemetryConfig {
            environment_libdir: Some(PathBuf::from("/venv/lib")),
            ..config(&["/a"], None)
        };
        let dirs = search_dirs(&cfg);
        let at = |origin| dirs.iter().position(|(_, o)| *o == origin).unwrap();
        assert_eq!(
            dirs[at(SearchOrigin::EnvironmentLibdir)].0,
            PathBuf::from("/venv/lib/nixl/telemetry_exporters")
        );
        assert!(at(SearchOrigin::ExecutableLibdir) < at(SearchOrigin::EnvironmentLibdir));
        assert!(at(SearchOrigin::EnvironmentLibdir) < at(SearchOrigin::InstallLibdir));
    }

    #[test]
    fn first_match_wins_and_the_trail_ends_there() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let c = tempfile::tempdir().unwrap();
        let file = library_file_name("x");
        std::fs::write(b.path().join(&file), b"").unwrap();
        std::fs::write(c.path().join(&file), b"").unwrap();
        // A directory of that name is not a match.
        std::fs::create_dir(a.path().join(&file)).unwrap();
        let cfg = config(
            &[a.path().to_str().unwrap(), b.path().to_str().unwrap()],
            Some(c.path().to_str().unwrap()),
        );
        let search = locate("x", &cfg, &[]);
        assert_eq!(search.found, Some(b.path().join(&file)));
        assert_eq!(search.searched.len(), 2);
        assert_eq!(search.searched[1].path, b.path().join(&file));

        let search = locate("y", &cfg, &[]);
        assert_eq!(search.found, None);
        assert!(search.searched.len() >= 4);
        assert_eq!(
            search.searched[2].to_string(),
            format!(
                "{} (NIXL_PLUGIN_DIR)",
                c.path().join(library_file_name("y")).display()
            )
        );

        // A file known to be a NIXL adapter is passed over, and the trail says so.
        let search = locate("x", &cfg, &[b.path().join(&file)]);
        assert_eq!(search.found, Some(c.path().join(&file)));
        assert_eq!(search.searched.len(), 3);
        assert!(search.searched[1].nixl_adapter);
        assert!(search.searched[1]
            .to_string()
            .ends_with("(NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR; a NIXL adapter, passed over)"));
    }
}
