//! A directory of ring files, one per agent: which files are rings to read,
//! in which order, what changed since the last look, and which files were
//! refused and why. The one place these rules live; the readers
//! (`telemetry_reader`, the Python package) and the `export` sidecar scan
//! through it.
//!
//! ```no_run
//! use nixl_telemetry::ring::{ReadMode, RingDirectory, ScanRules};
//!
//! let mut dir = RingDirectory::new("/dev/shm/nixl", ScanRules::Confined);
//! let scan = dir.scan()?;
//! for refused in scan.refused.iter().filter(|r| r.new) {
//!     eprintln!("warning: {}", refused.message);
//! }
//! for file in &scan.appeared {
//!     match dir.open_reader(file, ReadMode::Consume) {
//!         Ok(reader) => println!("{}: {} slots", file.agent(), reader.capacity()),
//!         Err(err) => {
//!             let cause = nixl_telemetry::ring::RefusalCause::of(&err);
//!             if dir.refuse(&file.name, cause, err.to_string()) {
//!                 eprintln!("warning: {err}");
//!             }
//!         }
//!     }
//! }
//! # Ok::<(), nixl_telemetry::ring::DirectoryError>(())
//! ```

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};

use super::error::RingError;
use super::reader::{ReadMode, RingReader};

/// Which files of a directory count as rings, and how they are reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanRules {
    /// The readers' rules (`telemetry_reader`, the Python package): the user
    /// named the directory, so a symbolic link is followed wherever it leads;
    /// entries that are no regular file (FIFOs, devices, sockets, dangling
    /// links) are passed over silently; every name is a ring of its own.
    Readers,
    /// The rules for a directory other users can write to (the `export`
    /// sidecar): a symbolic link is followed only to a file inside the
    /// directory (resolved by the kernel, `openat2` with `RESOLVE_BENEATH`;
    /// refused where the kernel lacks it); every entry that is no regular file
    /// is refused with its cause; a file reached under several names (hard
    /// links, links to a sibling, a ring renamed while followed) is one ring,
    /// under the name it was first seen by.
    Confined,
}

/// What identifies a file whatever its name: its device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileIdentity {
    /// The device (`st_dev`).
    pub device: u64,
    /// The inode (`st_ino`).
    pub inode: u64,
}

impl FileIdentity {
    /// The identity of an open file.
    pub fn of_file(file: &File) -> io::Result<FileIdentity> {
        use std::os::unix::fs::MetadataExt;
        let meta = file.metadata()?;
        Ok(FileIdentity {
            device: meta.dev(),
            inode: meta.ino(),
        })
    }

    fn of_stat(stat: &rustix::fs::Stat) -> FileIdentity {
        FileIdentity {
            device: stat.st_dev,
            inode: stat.st_ino,
        }
    }
}

/// A directory entry that may be a ring: a regular file (or a link the
/// rules follow to one) whose name is not a writer's temporary file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RingFile {
    /// The entry's name in the directory.
    pub name: OsString,
    /// The directory's path joined with the name.
    pub path: PathBuf,
    /// The file the name led to when the directory was scanned.
    pub identity: FileIdentity,
    /// Whether the name is a symbolic link (followed within the directory).
    pub via_link: bool,
    /// The file's size and modification time when the directory was
    /// scanned: a file refused once need not be looked at again until they
    /// change.
    pub stamp: FileStamp,
}

/// A file's size and modification time (ns since the Unix epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FileStamp {
    /// `st_size`.
    pub size: u64,
    /// `st_mtime` in nanoseconds.
    pub modified_ns: i128,
}

impl FileStamp {
    fn of_stat(stat: &rustix::fs::Stat) -> FileStamp {
        FileStamp {
            size: stat.st_size as u64,
            modified_ns: i128::from(stat.st_mtime) * 1_000_000_000 + i128::from(stat.st_mtime_nsec),
        }
    }

    /// The stamp of the file `path` names now (a link itself, not followed).
    pub fn of_path(path: &Path) -> Option<FileStamp> {
        rustix::fs::lstat(path).ok().map(|s| FileStamp::of_stat(&s))
    }
}

impl RingFile {
    /// The agent's name: the file name, invalid UTF-8 replaced with U+FFFD.
    pub fn agent(&self) -> String {
        agent_name(&self.name)
    }
}

/// The agent name of a ring file name: the name, invalid UTF-8 replaced with
/// U+FFFD.
pub fn agent_name(file_name: &OsStr) -> String {
    String::from_utf8_lossy(file_name.as_bytes()).into_owned()
}

/// Why a directory entry is not read as a ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum RefusalCause {
    /// A FIFO, device, socket, or a link to one.
    NotRegularFile,
    /// A symbolic link that is not followed: it leads out of the directory,
    /// nowhere, or the kernel cannot keep it inside.
    Symlink,
    /// The same file as another name already read.
    Duplicate,
    /// The file may not be opened (no permission).
    Permission,
    /// Shorter than the 40-byte header.
    TooShort,
    /// A header version other than 1–4.
    UnknownVersion,
    /// A header that does not describe a ring this file holds (capacity,
    /// mask, positions, size).
    BadHeader,
    /// Truncated while it was being read.
    Truncated,
    /// Any other failure to open or read it.
    Unreadable,
    /// Past a limit on the number of rings the caller follows.
    Limit,
}

impl RefusalCause {
    /// Every cause, in a fixed order.
    pub const ALL: [RefusalCause; 10] = [
        RefusalCause::NotRegularFile,
        RefusalCause::Symlink,
        RefusalCause::Duplicate,
        RefusalCause::Permission,
        RefusalCause::TooShort,
        RefusalCause::UnknownVersion,
        RefusalCause::BadHeader,
        RefusalCause::Truncated,
        RefusalCause::Unreadable,
        RefusalCause::Limit,
    ];

    /// A short snake_case name (for series and logs).
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalCause::NotRegularFile => "not_regular_file",
            RefusalCause::Symlink => "symlink",
            RefusalCause::Duplicate => "duplicate",
            RefusalCause::Permission => "permission",
            RefusalCause::TooShort => "too_short",
            RefusalCause::UnknownVersion => "unknown_version",
            RefusalCause::BadHeader => "bad_header",
            RefusalCause::Truncated => "truncated",
            RefusalCause::Unreadable => "unreadable",
            RefusalCause::Limit => "limit",
        }
    }

    /// The cause a ring error gives a file.
    pub fn of(err: &RingError) -> RefusalCause {
        match err {
            RingError::Open { source, .. } if source.kind() == io::ErrorKind::PermissionDenied => {
                RefusalCause::Permission
            }
            RingError::Symlink { .. } => RefusalCause::Symlink,
            RingError::NotRegularFile { .. } => RefusalCause::NotRegularFile,
            RingError::TooShort { .. } => RefusalCause::TooShort,
            RingError::WrongVersion { .. } => RefusalCause::UnknownVersion,
            RingError::BadCapacity { .. }
            | RingError::BadMask { .. }
            | RingError::CapacityBeyondFile { .. }
            | RingError::AmbiguousLayout { .. }
            | RingError::PositionOutOfRange { .. } => RefusalCause::BadHeader,
            RingError::Truncated { .. } => RefusalCause::Truncated,
            _ => RefusalCause::Unreadable,
        }
    }
}

impl std::fmt::Display for RefusalCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refused entry: its name, the cause and a message naming the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The entry's name in the directory.
    pub name: OsString,
    /// Why it is refused.
    pub cause: RefusalCause,
    /// The message, naming the file and the reason.
    pub message: String,
    /// Whether this refusal is news: the name was not refused before, or for
    /// another reason (warn about it once).
    pub new: bool,
}

/// The directory could not be listed.
#[derive(Debug, thiserror::Error)]
#[error("{path}: cannot list the directory: {source}")]
pub struct DirectoryError {
    /// The directory.
    pub path: PathBuf,
    /// The cause (`NotFound` when the directory is gone).
    #[source]
    pub source: io::Error,
}

/// What one [`RingDirectory::scan`] found.
#[derive(Debug, Default)]
pub struct DirectoryScan {
    /// Every file that may be a ring, in the readers' order
    /// ([`python_sort_key`]).
    pub files: Vec<RingFile>,
    /// Files under names the previous scan did not have (or had refused).
    pub appeared: Vec<RingFile>,
    /// Files of the previous scan whose name is gone or no longer leads to a
    /// possible ring.
    pub removed: Vec<RingFile>,
    /// Names that lead to another file than at the previous scan: (the
    /// previous file, the new one). A restarted producer's new ring.
    pub replaced: Vec<(RingFile, RingFile)>,
    /// Entries this scan refused (only [`ScanRules::Confined`] refuses
    /// entries; the readers' rules pass over them silently).
    pub refused: Vec<Refusal>,
}

/// A directory of ring files, scanned again and again.
///
/// Each [`RingDirectory::scan`] lists the directory and says which files
/// may be rings ([`DirectoryScan::files`], in the order Python sorts their
/// names, the readers' order) and what changed since the previous scan. A
/// writer's file in the making (`.nixl-ring.<pid>.<µs>.<n>.tmp`, any
/// `.<anything>.tmp`) and subdirectories are never rings. Opening and
/// validating a file is the caller's next step ([`RingDirectory::open_reader`]);
/// a file it refuses is remembered with [`RingDirectory::refuse`], which says
/// whether the refusal is news, so that each file is warned about once per
/// reason. A name's refusal is forgotten when the name leaves the directory
/// (or leads to something the rules pass over).
#[derive(Debug)]
pub struct RingDirectory {
    path: PathBuf,
    rules: ScanRules,
    /// The directory, opened at the last scan: files are opened through it.
    handle: Option<OwnedFd>,
    previous: Vec<RingFile>,
    refusals: Vec<(OsString, RefusalCause, String)>,
}

/// Whether `name` is a ring writer's temporary file
/// (`.nixl-ring.<pid>.<µs>.<n>.tmp`, renamed into place once initialised):
/// any name starting with `.` and ending in `.tmp`. Producers refuse agent
/// names of that form, so no ring is ever passed over.
pub fn is_writer_temp_file(name: &OsStr) -> bool {
    let bytes = name.as_bytes();
    bytes.starts_with(b".") && bytes.ends_with(b".tmp")
}

/// The order Python sorts file names in (the readers' order): by code point,
/// an undecodable byte `b` counting as U+DC00 + `b` (its surrogate escape).
pub fn python_sort_key(name: &OsStr) -> Vec<u32> {
    let mut key = Vec::with_capacity(name.len());
    for chunk in name.as_bytes().utf8_chunks() {
        key.extend(chunk.valid().chars().map(u32::from));
        key.extend(chunk.invalid().iter().map(|&b| 0xDC00 + u32::from(b)));
    }
    key
}

/// What one directory entry is.
enum Entry {
    /// A possible ring.
    File(RingFile),
    /// Passed over silently (a subdirectory; under the readers' rules anything
    /// that is no regular file).
    Ignored,
    /// Refused, with its cause and reason.
    Refused(RefusalCause, String),
}

impl RingDirectory {
    /// A directory to scan under `rules`. Nothing is read until
    /// [`RingDirectory::scan`].
    pub fn new(path: impl Into<PathBuf>, rules: ScanRules) -> RingDirectory {
        RingDirectory {
            path: path.into(),
            rules,
            handle: None,
            previous: Vec::new(),
            refusals: Vec::new(),
        }
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The rules it is scanned under.
    pub fn rules(&self) -> ScanRules {
        self.rules
    }

    /// The files the last scan found, in the readers' order.
    pub fn files(&self) -> &[RingFile] {
        &self.previous
    }

    /// Lists the directory: see [`DirectoryScan`].
    pub fn scan(&mut self) -> Result<DirectoryScan, DirectoryError> {
        let failed = |source| DirectoryError {
            path: self.path.clone(),
            source,
        };
        let handle = rustix::fs::open(
            &self.path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| failed(e.into()))?;
        let listing = std::fs::read_dir(&self.path).map_err(failed)?;
        let mut names: Vec<(Vec<u32>, OsString)> = listing
            .flatten()
            .map(|entry| entry.file_name())
            .filter(|name| !is_writer_temp_file(name))
            .map(|name| (python_sort_key(&name), name))
            .collect();
        names.sort();

        let mut scan = DirectoryScan::default();
        let mut refused = Vec::new();
        for (_, name) in &names {
            match self.classify(&handle, name) {
                Entry::File(file) => scan.files.push(file),
                Entry::Ignored => {}
                Entry::Refused(cause, message) => refused.push((name.clone(), cause, message)),
            }
        }
        if self.rules == ScanRules::Confined {
            self.one_name_per_file(&mut scan.files, &mut refused);
        }

        // A refusal is forgotten when its name no longer leads to a possible
        // ring nor to an entry refused here (gone, or passed over).
        self.refusals.retain(|(name, _, _)| {
            scan.files.iter().any(|f| f.name == *name) || refused.iter().any(|(n, _, _)| n == name)
        });
        for (name, cause, message) in refused {
            let new = self.refuse(&name, cause, message.clone());
            scan.refused.push(Refusal {
                name,
                cause,
                message,
                new,
            });
        }

        for file in &scan.files {
            match self.previous.iter().find(|p| p.name == file.name) {
                None => scan.appeared.push(file.clone()),
                Some(old) if old.identity != file.identity => {
                    scan.replaced.push((old.clone(), file.clone()))
                }
                Some(_) => {}
            }
        }
        for old in &self.previous {
            if !scan.files.iter().any(|f| f.name == old.name) {
                scan.removed.push(old.clone());
            }
        }
        self.previous = scan.files.clone();
        self.handle = Some(handle);
        Ok(scan)
    }

    fn classify(&self, handle: &OwnedFd, name: &OsStr) -> Entry {
        let path = self.path.join(name);
        match self.rules {
            ScanRules::Readers => match rustix::fs::statat(handle, name, AtFlags::empty()) {
                Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile => {
                    let via_link = rustix::fs::statat(handle, name, AtFlags::SYMLINK_NOFOLLOW)
                        .is_ok_and(|l| FileType::from_raw_mode(l.st_mode) == FileType::Symlink);
                    Entry::File(RingFile {
                        name: name.to_owned(),
                        path,
                        identity: FileIdentity::of_stat(&stat),
                        via_link,
                        stamp: FileStamp::of_stat(&stat),
                    })
                }
                _ => Entry::Ignored,
            },
            ScanRules::Confined => {
                let stat = match rustix::fs::statat(handle, name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(stat) => stat,
                    // Gone between the listing and now.
                    Err(rustix::io::Errno::NOENT) => return Entry::Ignored,
                    Err(e) => {
                        return Entry::Refused(
                            RefusalCause::Unreadable,
                            format!(
                                "{}: cannot look at it ({})",
                                path.display(),
                                io::Error::from(e)
                            ),
                        )
                    }
                };
                match FileType::from_raw_mode(stat.st_mode) {
                    FileType::RegularFile => Entry::File(RingFile {
                        name: name.to_owned(),
                        path,
                        identity: FileIdentity::of_stat(&stat),
                        via_link: false,
                        stamp: FileStamp::of_stat(&stat),
                    }),
                    FileType::Directory => Entry::Ignored,
                    FileType::Symlink => self.classify_link(handle, name, path),
                    other => Entry::Refused(
                        RefusalCause::NotRegularFile,
                        format!(
                            "{}: not a regular file ({}); expected a NIXL ring file (version 1 to 4)",
                            path.display(),
                            type_words(other)
                        ),
                    ),
                }
            }
        }
    }

    /// A symbolic link under the confined rules: followed by the kernel only
    /// beneath the directory.
    fn classify_link(&self, handle: &OwnedFd, name: &OsStr, path: PathBuf) -> Entry {
        let refused = |reason: String| {
            Entry::Refused(
                RefusalCause::Symlink,
                format!("{}: symbolic link {reason}; not followed", path.display()),
            )
        };
        let target = match rustix::fs::openat2(
            handle,
            name,
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        ) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::XDEV) => {
                return refused("leading out of the directory".to_owned())
            }
            Err(rustix::io::Errno::NOENT) => return refused("to nothing (dangling)".to_owned()),
            Err(rustix::io::Errno::NOSYS) => {
                return refused(
                    "(this kernel has no openat2 to keep it inside the directory)".to_owned(),
                )
            }
            Err(e) => return refused(format!("that cannot be resolved ({})", io::Error::from(e))),
        };
        match rustix::fs::fstat(&target) {
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile => {
                Entry::File(RingFile {
                    name: name.to_owned(),
                    path,
                    identity: FileIdentity::of_stat(&stat),
                    via_link: true,
                    stamp: FileStamp::of_stat(&stat),
                })
            }
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Directory => {
                Entry::Ignored
            }
            Ok(stat) => Entry::Refused(
                RefusalCause::NotRegularFile,
                format!(
                    "{}: symbolic link to something that is not a regular file ({}); expected a \
                     NIXL ring file (version 1 to 4)",
                    path.display(),
                    type_words(FileType::from_raw_mode(stat.st_mode))
                ),
            ),
            Err(e) => refused(format!("that cannot be resolved ({})", io::Error::from(e))),
        }
    }

    /// Keeps one name per file: the name already known for it, else the
    /// first that is no link, else the first (`files` is in the readers'
    /// order, and stays so).
    fn one_name_per_file(
        &self,
        files: &mut Vec<RingFile>,
        refused: &mut Vec<(OsString, RefusalCause, String)>,
    ) {
        let mut names_of: HashMap<FileIdentity, Vec<usize>> = HashMap::new();
        for (i, file) in files.iter().enumerate() {
            names_of.entry(file.identity).or_default().push(i);
        }
        let mut dropped = vec![false; files.len()];
        for same in names_of.values().filter(|same| same.len() > 1) {
            let known = same.iter().copied().find(|&i| {
                self.previous
                    .iter()
                    .any(|p| p.name == files[i].name && p.identity == files[i].identity)
            });
            let chosen = known
                .or_else(|| same.iter().copied().find(|&i| !files[i].via_link))
                .unwrap_or(same[0]);
            for &i in same.iter().filter(|&&i| i != chosen) {
                dropped[i] = true;
                refused.push((
                    files[i].name.clone(),
                    RefusalCause::Duplicate,
                    format!(
                        "{}: the same file as {} (a hard or symbolic link); read once, as agent {}",
                        files[i].path.display(),
                        files[chosen].path.display(),
                        files[chosen].agent()
                    ),
                ));
            }
        }
        let mut index = 0;
        files.retain(|_| {
            index += 1;
            !dropped[index - 1]
        });
    }

    /// Remembers that the file at `name` is refused for `cause`, with
    /// `message`; returns whether that is news (the name was not refused, or
    /// for another message), i.e. whether to warn.
    pub fn refuse(&mut self, name: &OsStr, cause: RefusalCause, message: String) -> bool {
        match self.refusals.iter_mut().find(|(n, _, _)| n == name) {
            Some((_, _, last)) if *last == message => false,
            Some((_, last_cause, last)) => {
                *last_cause = cause;
                *last = message;
                true
            }
            None => {
                self.refusals.push((name.to_owned(), cause, message));
                true
            }
        }
    }

    /// Forgets the refusal of `name` (its file has become a ring).
    pub fn accept(&mut self, name: &OsStr) {
        self.refusals.retain(|(n, _, _)| n != name);
    }

    /// The names refused now, with their cause and message.
    pub fn refusals(&self) -> impl Iterator<Item = (&OsStr, RefusalCause, &str)> {
        self.refusals
            .iter()
            .map(|(name, cause, message)| (name.as_os_str(), *cause, message.as_str()))
    }

    /// Opens a file of the last scan as a ring. Under the readers' rules, its
    /// path is opened (links followed). Under the confined rules, it is
    /// opened through the directory scanned, by the kernel's resolution
    /// beneath it (never a link out of it; a name that was no link is opened
    /// without following one), without blocking on a FIFO swapped in and
    /// without becoming a controlling terminal; it must still be the file the
    /// scan saw, or the error is [`RingError::Changed`] (the next scan tells
    /// what became of the name).
    pub fn open_reader(&self, file: &RingFile, mode: ReadMode) -> Result<RingReader, RingError> {
        if self.rules == ScanRules::Readers {
            return RingReader::open(&file.path, mode);
        }
        let open_failed = |source: io::Error| RingError::Open {
            path: file.path.clone(),
            source,
        };
        let Some(handle) = &self.handle else {
            return Err(open_failed(io::Error::new(
                io::ErrorKind::NotFound,
                "the directory was not scanned yet",
            )));
        };
        let mut flags = OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
        flags |= match mode {
            ReadMode::Consume => OFlags::RDWR,
            ReadMode::Peek => OFlags::RDONLY,
        };
        let resolve = if file.via_link {
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS
        } else {
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS
        };
        let fd = match rustix::fs::openat2(handle, &file.name, flags, Mode::empty(), resolve) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOSYS) if !file.via_link => {
                // No openat2: one path component, not followed if a link.
                rustix::fs::openat(handle, &file.name, flags | OFlags::NOFOLLOW, Mode::empty())
                    .map_err(|e| open_failed(e.into()))?
            }
            Err(rustix::io::Errno::LOOP | rustix::io::Errno::XDEV) => {
                return Err(RingError::Symlink {
                    path: file.path.clone(),
                })
            }
            Err(e) => return Err(open_failed(e.into())),
        };
        let opened = File::from(fd);
        let identity =
            FileIdentity::of_file(&opened).map_err(|e| RingError::io(&file.path, "stat", e))?;
        if identity != file.identity {
            return Err(RingError::Changed {
                path: file.path.clone(),
            });
        }
        RingReader::from_file(opened, &file.path, mode)
    }
}

fn type_words(file_type: FileType) -> &'static str {
    match file_type {
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symbolic link",
        FileType::RegularFile => "a regular file",
        _ => "of an unknown type",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_order_of_names() {
        let mut names: Vec<OsString> = vec![
            OsStr::from_bytes(b"b").into(),
            OsStr::from_bytes(b"\xff").into(),
            OsStr::from_bytes("\u{e000}".as_bytes()).into(),
            OsStr::from_bytes("é".as_bytes()).into(),
            OsStr::from_bytes(b"a").into(),
        ];
        names.sort_by_cached_key(|n| python_sort_key(n));
        let want: Vec<&[u8]> = vec![b"a", b"b", "é".as_bytes(), b"\xff", "\u{e000}".as_bytes()];
        assert_eq!(names.iter().map(|n| n.as_bytes()).collect::<Vec<_>>(), want);
    }

    #[test]
    fn temp_files_are_recognised() {
        assert!(is_writer_temp_file(OsStr::new(".nixl-ring.123.456.0.tmp")));
        assert!(is_writer_temp_file(OsStr::new(".initiator.123.456.tmp")));
        assert!(!is_writer_temp_file(OsStr::new("initiator")));
        assert!(!is_writer_temp_file(OsStr::new(".hidden")));
    }

    #[test]
    fn refusals_are_news_once_per_message() {
        let mut dir = RingDirectory::new("/nonexistent", ScanRules::Confined);
        let name = OsStr::new("x");
        assert!(dir.refuse(name, RefusalCause::TooShort, "short".into()));
        assert!(!dir.refuse(name, RefusalCause::TooShort, "short".into()));
        assert!(dir.refuse(name, RefusalCause::UnknownVersion, "version 9".into()));
        assert_eq!(dir.refusals().count(), 1);
        dir.accept(name);
        assert_eq!(dir.refusals().count(), 0);
        assert!(dir.refuse(name, RefusalCause::UnknownVersion, "version 9".into()));
    }
}
