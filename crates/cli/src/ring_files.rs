//! Which ring files `top` and `report` read: the files named on the command
//! line, and the ring files of the directories named there, found again at
//! every scan (agents come and go).
//!
//! The directory rule lives behind [`RingDirectory`], so that the commands do
//! not care how a directory is listed.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// One ring file found: the agent it belongs to and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RingFile {
    /// The agent's name: the file name (invalid UTF-8 replaced).
    pub agent: String,
    /// The file.
    pub path: PathBuf,
    /// Device and inode: a file put in place of another under the same name
    /// (a restarted producer's new ring) is another ring.
    pub identity: (u64, u64),
}

/// A directory of ring files, listed again on every scan.
pub trait RingDirectory {
    /// The directory.
    fn path(&self) -> &Path;
    /// The candidate ring files in it now, by file name. Whether each one is
    /// a valid ring is for the reader that opens it to say.
    fn scan(&mut self) -> std::io::Result<Vec<RingFile>>;
}

/// The candidates of a directory: its regular files, minus the files a ring
/// writer is still making (`.<anything>.tmp`, renamed into place once
/// initialised). Symbolic links are not followed (a ring directory is often
/// world-writable shared memory: a link could point anywhere).
#[derive(Debug, Clone)]
pub struct ListedDirectory {
    path: PathBuf,
}

impl ListedDirectory {
    /// The directory at `path`.
    pub fn new(path: &Path) -> ListedDirectory {
        ListedDirectory {
            path: path.to_owned(),
        }
    }
}

/// Whether a directory entry is a ring writer's file in the making.
fn is_writer_temp_file(name: &OsStr) -> bool {
    let bytes = name.as_bytes();
    bytes.starts_with(b".") && bytes.ends_with(b".tmp")
}

impl RingDirectory for ListedDirectory {
    fn path(&self) -> &Path {
        &self.path
    }

    fn scan(&mut self) -> std::io::Result<Vec<RingFile>> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&self.path)? {
            let Ok(entry) = entry else { continue };
            let name = entry.file_name();
            if is_writer_temp_file(&name) {
                continue;
            }
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if !meta.file_type().is_file() {
                continue;
            }
            found.push(RingFile {
                agent: agent_name(&name),
                path,
                identity: (meta.dev(), meta.ino()),
            });
        }
        found.sort_by(|a, b| a.path.file_name().cmp(&b.path.file_name()));
        Ok(found)
    }
}

/// An agent's name from its ring's file name.
pub fn agent_name(file_name: &OsStr) -> String {
    String::from_utf8_lossy(file_name.as_bytes()).into_owned()
}

/// What the command line named: ring files and directories of them.
pub struct RingSources {
    files: Vec<PathBuf>,
    dirs: Vec<Box<dyn RingDirectory>>,
}

impl RingSources {
    /// Sorts `paths` into directories and files. A path that does not exist
    /// is an error naming it; whether a file is a ring is checked when it is
    /// opened.
    pub fn new(paths: &[PathBuf]) -> Result<RingSources, String> {
        let mut files = Vec::new();
        let mut dirs: Vec<Box<dyn RingDirectory>> = Vec::new();
        for path in paths {
            match std::fs::metadata(path) {
                Ok(meta) if meta.is_dir() => dirs.push(Box::new(ListedDirectory::new(path))),
                Ok(_) => files.push(path.clone()),
                Err(e) => {
                    return Err(format!(
                        "{}: {e}; expected a ring file or a directory of ring files",
                        path.display()
                    ))
                }
            }
        }
        Ok(RingSources { files, dirs })
    }

    /// Every candidate ring file now: the files named, then each directory's.
    /// A file named on the command line that has gone is left out (its agent
    /// vanished); a directory that cannot be listed is an error.
    pub fn scan(&mut self) -> Result<Vec<RingFile>, String> {
        let mut out = Vec::new();
        for path in &self.files {
            if let Ok(meta) = std::fs::metadata(path) {
                out.push(RingFile {
                    agent: agent_name(path.file_name().unwrap_or(path.as_os_str())),
                    path: path.clone(),
                    identity: (meta.dev(), meta.ino()),
                });
            }
        }
        for dir in &mut self.dirs {
            let found = dir.scan().map_err(|e| {
                format!(
                    "{}: cannot list the directory ({e}); expected a readable directory of ring files",
                    dir.path().display()
                )
            })?;
            out.extend(found);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_lists_regular_files_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b"), b"x").unwrap();
        std::fs::write(dir.path().join("a"), b"x").unwrap();
        std::fs::write(dir.path().join(".nixl-ring.1.2.0.tmp"), b"x").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("link")).unwrap();
        let found = ListedDirectory::new(dir.path()).scan().unwrap();
        let agents: Vec<&str> = found.iter().map(|f| f.agent.as_str()).collect();
        assert_eq!(agents, ["a", "b"]);
    }

    #[test]
    fn sources_name_a_missing_path() {
        let err = RingSources::new(&[PathBuf::from("/nonexistent/ring")])
            .err()
            .unwrap();
        assert!(err.contains("/nonexistent/ring"), "{err}");
        assert!(err.contains("expected a ring file"), "{err}");
    }
}
