//! The run's directory and the names of what lives in it.
//!
//! Stores are `nixl-mp.<pid>.<instance>.<nanoseconds>.store`; the owner's
//! lock file for an address is `nixl-mp-owner.<address>.lock`. Every file is
//! opened with `O_NOFOLLOW` and created 0600.

use std::fs::{File, OpenOptions};
use std::io;
use std::net::SocketAddr;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

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
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
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
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
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
