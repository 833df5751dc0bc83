//! The run's directory, the names of what lives in it, and how its files are
//! opened.
//!
//! Stores are `nixl-mp.<pid>.<instance>.<nanoseconds>.store`; the owner's
//! lock file for an address is `nixl-mp-owner.<address>.lock`. Every file is
//! opened with `O_NOFOLLOW` and `O_CLOEXEC` and created 0600 (through
//! `rustix`, without unsafe code).

use std::fs::File;
use std::io;
use std::net::SocketAddr;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags, CWD};
use rustix::io::Errno;

use crate::error::MpError;

/// Prefix of store file names.
pub const STORE_PREFIX: &str = "nixl-mp.";
/// Suffix of store file names.
pub const STORE_SUFFIX: &str = ".store";
/// Prefix of lock file names.
pub const LOCK_PREFIX: &str = "nixl-mp-owner.";
/// Suffix of lock file names.
pub const LOCK_SUFFIX: &str = ".lock";

/// Makes sure `dir` is a usable directory: created 0700 if missing; refused
/// if it is not a directory; warned about if group- or world-writable or
/// owned by another user.
pub fn prepare_directory(dir: &Path) -> Result<(), MpError> {
    let fail = |reason: String| MpError::Directory {
        path: dir.to_owned(),
        reason,
    };
    match std::fs::metadata(dir) {
        Ok(meta) if !meta.is_dir() => {
            return Err(fail("it exists and is not a directory".to_owned()))
        }
        Ok(meta) => {
            let mode = meta.permissions().mode();
            if mode & 0o022 != 0 {
                tracing::warn!(
                    dir = %dir.display(),
                    mode = format!("{:o}", mode & 0o7777),
                    "the prometheus_mp directory is writable by group or others: another user can plant files there (they are skipped, never trusted); use a private directory (0700)"
                );
            }
            let uid = std::fs::metadata("/proc/self").map(|m| m.uid()).ok();
            if uid.is_some_and(|u| u != meta.uid()) {
                tracing::warn!(
                    dir = %dir.display(),
                    owner = meta.uid(),
                    "the prometheus_mp directory belongs to another user; use a directory of your own (0700)"
                );
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| fail(format!("cannot create it: {e}")))?;
        }
        Err(e) => return Err(fail(e.to_string())),
    }
    Ok(())
}

/// The lock file name of `addr`.
pub fn lock_name(addr: &SocketAddr) -> String {
    format!("{LOCK_PREFIX}{addr}{LOCK_SUFFIX}")
}

/// The address a lock file name is for, if it is one.
pub fn lock_address(name: &str) -> Option<&str> {
    name.strip_prefix(LOCK_PREFIX)?.strip_suffix(LOCK_SUFFIX)
}

/// Whether `name` has the form of a store's name.
pub fn is_store_name(name: &str) -> bool {
    name.len() > STORE_PREFIX.len() + STORE_SUFFIX.len()
        && name.starts_with(STORE_PREFIX)
        && name.ends_with(STORE_SUFFIX)
}

/// A fresh store name for this process's exporter `instance`.
pub fn store_name(pid: u32, instance: u32) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{STORE_PREFIX}{pid}.{instance}.{nanos}{STORE_SUFFIX}")
}

/// Opens (creating 0600 if missing) the lock file at `path`, without
/// following a symbolic link; refuses anything but a regular file owned by
/// `uid`.
pub fn open_lock_file(path: &Path, uid: u32) -> Result<File, MpError> {
    let file = open(
        path,
        OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK,
    )
    .map_err(|source| MpError::File {
        action: "open the owner lock file",
        path: path.to_owned(),
        source,
    })?;
    let meta = file.metadata().map_err(|source| MpError::File {
        action: "inspect the owner lock file",
        path: path.to_owned(),
        source,
    })?;
    if !meta.is_file() || meta.uid() != uid {
        return Err(MpError::Directory {
            path: path.parent().map(Path::to_owned).unwrap_or_default(),
            reason: format!(
                "the owner lock file {path:?} is not a regular file owned by this user (uid {uid}); remove it"
            ),
        });
    }
    Ok(file)
}

/// Opens an existing file for reading without following a symbolic link,
/// without blocking on a FIFO and without becoming a controlling terminal.
pub fn open_untrusted(path: &Path) -> io::Result<File> {
    open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY,
    )
}

/// Opens `path` with `flags` and `O_CLOEXEC`, creating it 0600 if asked.
fn open(path: &Path, flags: OFlags) -> io::Result<File> {
    let fd = rustix::fs::open(path, flags | OFlags::CLOEXEC, Mode::RUSR | Mode::WUSR)?;
    Ok(File::from(fd))
}

/// Creates the file `path` (0600), failing if anything is there already, a
/// symbolic link included.
pub fn create_new(path: &Path) -> io::Result<File> {
    open(
        path,
        OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW,
    )
}

/// Creates an unnamed file (`O_TMPFILE`, 0600) in `dir`, or `None` where
/// the filesystem cannot.
pub fn create_unnamed(dir: &Path) -> io::Result<Option<File>> {
    let flags = OFlags::RDWR | OFlags::TMPFILE | OFlags::CLOEXEC;
    match rustix::fs::openat(CWD, dir, flags, Mode::RUSR | Mode::WUSR) {
        Ok(fd) => Ok(Some(File::from(fd))),
        Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL | Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Gives the unnamed file `file` (from [`create_unnamed`]) the name `path`;
/// fails with `AlreadyExists` if the name is taken.
pub fn link_unnamed(file: &File, path: &Path) -> io::Result<()> {
    let through_proc = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(file));
    let error = match rustix::fs::linkat(CWD, &through_proc, CWD, path, AtFlags::SYMLINK_FOLLOW) {
        Ok(()) => return Ok(()),
        Err(Errno::EXIST) => return Err(Errno::EXIST.into()),
        Err(e) => e,
    };
    // Without /proc: linking the descriptor itself needs CAP_DAC_READ_SEARCH.
    rustix::fs::linkat(file, "", CWD, path, AtFlags::EMPTY_PATH).map_err(|_| error.into())
}

/// Everything in `dir` named like a store, with its path.
pub fn store_paths(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_name().to_str().is_some_and(is_store_name) {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let addr: SocketAddr = "127.0.0.1:9090".parse().unwrap();
        assert_eq!(lock_name(&addr), "nixl-mp-owner.127.0.0.1:9090.lock");
        assert_eq!(lock_address(&lock_name(&addr)), Some("127.0.0.1:9090"));
        assert_eq!(lock_address("other.lock"), None);
        let name = store_name(42, 1);
        assert!(
            name.starts_with("nixl-mp.42.1.") && is_store_name(&name),
            "{name}"
        );
        assert!(!is_store_name("nixl-mp..store"));
        assert!(!is_store_name("nixl-mp-owner.x.lock"));
    }

    #[test]
    fn a_missing_directory_is_created_private_and_a_file_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("a/b");
        prepare_directory(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let file = base.path().join("f");
        std::fs::write(&file, b"").unwrap();
        let e = prepare_directory(&file).unwrap_err().to_string();
        assert!(e.contains("not a directory"), "{e}");
    }

    #[test]
    fn lock_files_refuse_links_and_foreign_kinds() {
        let dir = tempfile::tempdir().unwrap();
        let uid = std::fs::metadata(dir.path()).unwrap().uid();
        let target = dir.path().join("target");
        std::fs::write(&target, b"").unwrap();
        let link = dir.path().join("link.lock");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(open_lock_file(&link, uid).is_err());
        let sub = dir.path().join("sub.lock");
        std::fs::create_dir(&sub).unwrap();
        assert!(open_lock_file(&sub, uid).is_err());
        assert!(open_lock_file(&target, uid + 1).is_err());
        let fresh = dir.path().join("fresh.lock");
        open_lock_file(&fresh, uid).unwrap();
        let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}
