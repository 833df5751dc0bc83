//! Which ring files `top` and `report` read: the files named on the command
//! line, and the rings of the directories named there, listed again at
//! every scan (agents come and go) through the library's
//! [`RingDirectory`].

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use nixl_telemetry::ring::{
    agent_name, FileIdentity, FileStamp, ReadMode, RingDirectory, RingError, RingFile, RingReader,
    ScanRules,
};

/// A file that may be a ring, and where it was found.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The file.
    pub file: RingFile,
    /// The directory it was found in (an index into the directories), or
    /// `None` for a file named on the command line.
    dir: Option<usize>,
}

impl Candidate {
    /// The agent the ring belongs to: its file name.
    pub fn agent(&self) -> String {
        self.file.agent()
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.file.path
    }
}

/// What one [`RingSources::scan`] found.
#[derive(Debug, Default)]
pub struct SourcesScan {
    /// The files that may be rings: the files named, then each directory's
    /// in the readers' order.
    pub files: Vec<Candidate>,
    /// Entries of the directories that are refused, with the message naming
    /// the file and the reason.
    pub refused: Vec<(PathBuf, String)>,
    /// Directories that could not be listed (removed, no permission), with
    /// the message; their rings are left out of `files`.
    pub unlisted: Vec<(PathBuf, String)>,
}

/// What the command line named: ring files and directories of them.
pub struct RingSources {
    files: Vec<PathBuf>,
    dirs: Vec<RingDirectory>,
    /// The named files' and directories' own stamps just before the last
    /// scan, and the time then (ns since the epoch): see
    /// [`RingSources::unchanged_since_scan`].
    stamps: Option<(Vec<PathStamp>, i128)>,
}

/// A path's identity and modification time (ns since the epoch), when it
/// can be looked at.
type PathStamp = Option<(FileIdentity, i128)>;

/// How long before a scan a stamp must be for a change after the scan to be
/// sure to show in it: a file system stamps modifications with a coarse
/// clock (a jiffy, up to 10 ms).
const STAMP_MARGIN_NS: i128 = 100_000_000;

/// A path's identity and modification time (links followed), if it can be
/// looked at.
fn stamp_of(path: &Path) -> PathStamp {
    let meta = std::fs::metadata(path).ok()?;
    Some((
        FileIdentity {
            device: meta.dev(),
            inode: meta.ino(),
        },
        i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
    ))
}

impl RingSources {
    /// Sorts `paths` into directories (scanned under `rules`) and files. A
    /// path that does not exist is an error naming it; whether a file is a
    /// ring is for [`RingSources::open`] to say.
    pub fn new(paths: &[PathBuf], rules: ScanRules) -> Result<RingSources, String> {
        let mut files = Vec::new();
        let mut dirs = Vec::new();
        for path in paths {
            match std::fs::metadata(path) {
                Ok(meta) if meta.is_dir() => dirs.push(RingDirectory::new(path, rules)),
                Ok(_) => files.push(path.clone()),
                Err(e) => {
                    return Err(format!(
                        "{}: {e}; expected a ring file or a directory of ring files",
                        path.display()
                    ))
                }
            }
        }
        Ok(RingSources {
            files,
            dirs,
            stamps: None,
        })
    }

    /// Every file that may be a ring now. A file named on the command line
    /// that has gone is left out (its agent vanished), and so are the rings
    /// of a directory that cannot be listed ([`SourcesScan::unlisted`]).
    pub fn scan(&mut self) -> SourcesScan {
        // Stamped before the listing: a change made while it runs is newer.
        let now_ns = i128::from(nixl_telemetry::clock::system_now_us()) * 1000;
        self.stamps = Some((self.current_stamps(), now_ns));
        let mut out = SourcesScan::default();
        for path in &self.files {
            if let Ok(meta) = std::fs::metadata(path) {
                let name = path.file_name().unwrap_or(path.as_os_str()).to_owned();
                out.files.push(Candidate {
                    file: RingFile {
                        name,
                        path: path.clone(),
                        identity: FileIdentity {
                            device: meta.dev(),
                            inode: meta.ino(),
                        },
                        via_link: false,
                        stamp: FileStamp {
                            size: meta.len(),
                            modified_ns: i128::from(meta.mtime()) * 1_000_000_000
                                + i128::from(meta.mtime_nsec()),
                        },
                    },
                    dir: None,
                });
            }
        }
        for (at, dir) in self.dirs.iter_mut().enumerate() {
            let scan = match dir.scan() {
                Ok(scan) => scan,
                Err(e) => {
                    out.unlisted.push((
                        dir.path().to_owned(),
                        format!("{e}; expected a readable directory of ring files"),
                    ));
                    continue;
                }
            };
            out.files
                .extend(scan.files.into_iter().map(|file| Candidate {
                    file,
                    dir: Some(at),
                }));
            out.refused.extend(
                scan.refused
                    .into_iter()
                    .map(|r| (dir.path().join(&r.name), r.message)),
            );
        }
        out
    }

    fn current_stamps(&self) -> Vec<PathStamp> {
        self.files
            .iter()
            .map(PathBuf::as_path)
            .chain(self.dirs.iter().map(RingDirectory::path))
            .map(stamp_of)
            .collect()
    }

    /// Whether a scan now would list the same names as the last one: no
    /// directory named was modified (a ring created, removed or renamed in
    /// it), and no file named replaced, since well before the last scan.
    /// Asks one `stat` per path named, not one per ring. What it cannot see
    /// is a file that changed in place (a ring a producer is still writing
    /// its header to): a scan every so often, whatever this says, sees that.
    pub fn unchanged_since_scan(&self) -> bool {
        let Some((stamps, scanned_ns)) = &self.stamps else {
            return false;
        };
        stamps
            .iter()
            .all(|s| s.is_some_and(|(_, mtime)| mtime < scanned_ns - STAMP_MARGIN_NS))
            && self.current_stamps() == *stamps
    }

    /// Opens a file of the last scan as a ring (a directory's through the
    /// directory, under its rules).
    pub fn open(&self, candidate: &Candidate, mode: ReadMode) -> Result<RingReader, RingError> {
        match candidate.dir {
            Some(at) => self.dirs[at].open_reader(&candidate.file, mode),
            None => RingReader::open(&candidate.file.path, mode),
        }
    }
}

/// An agent's name from a path's file name.
pub fn agent_of(path: &Path) -> String {
    agent_name(path.file_name().unwrap_or(path.as_os_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_files_and_directories() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b"), b"x").unwrap();
        std::fs::write(dir.path().join("a"), b"x").unwrap();
        std::fs::write(dir.path().join(".nixl-ring.1.2.0.tmp"), b"x").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("link")).unwrap();
        let lone = tempfile::NamedTempFile::new().unwrap();
        let mut sources = RingSources::new(
            &[lone.path().to_owned(), dir.path().to_owned()],
            ScanRules::Confined,
        )
        .unwrap();
        let scan = sources.scan();
        let agents: Vec<String> = scan.files.iter().map(Candidate::agent).collect();
        assert_eq!(agents, [agent_of(lone.path()), "a".into(), "b".into()]);
        assert_eq!(scan.refused.len(), 1, "{:?}", scan.refused);
        assert!(
            scan.refused[0].1.contains("leading out of the directory"),
            "{:?}",
            scan.refused
        );
    }

    #[test]
    fn an_unchanged_directory_is_told_without_listing_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), b"x").unwrap();
        let age = |seconds| {
            let then = std::time::SystemTime::now() - std::time::Duration::from_secs(seconds);
            std::fs::File::open(dir.path())
                .unwrap()
                .set_modified(then)
                .unwrap();
        };
        let mut sources = RingSources::new(&[dir.path().to_owned()], ScanRules::Confined).unwrap();
        assert!(!sources.unchanged_since_scan(), "never scanned");
        // Modified just now: a change in the same tick would not show.
        sources.scan();
        assert!(!sources.unchanged_since_scan());
        age(10);
        sources.scan();
        assert!(sources.unchanged_since_scan());
        // A ring created, then one removed: each tells.
        std::fs::write(dir.path().join("b"), b"x").unwrap();
        assert!(!sources.unchanged_since_scan());
        age(10);
        sources.scan();
        assert!(sources.unchanged_since_scan());
        std::fs::remove_file(dir.path().join("a")).unwrap();
        assert!(!sources.unchanged_since_scan());
    }

    #[test]
    fn a_missing_path_is_named() {
        let err = RingSources::new(&[PathBuf::from("/nonexistent/ring")], ScanRules::Readers)
            .err()
            .unwrap();
        assert!(err.contains("/nonexistent/ring"), "{err}");
        assert!(err.contains("expected a ring file"), "{err}");
    }
}
