//! The `--state` file of `nixl-telemetry process`: locked for the whole run, read
//! bounded, and replaced atomically with its mode and owner kept.
//!
//! * **Lock.** A run takes an exclusive `flock` on `.<name>.lock` beside the state file
//!   before reading it and keeps it until the new state is in place, so concurrent runs
//!   on one state file take turns (the second says it waits) and no update is lost.
//!   The lock file stays (removing it would race with a run about to lock it).
//! * **Symbolic links** are followed on purpose: the state is the link's target, which
//!   is replaced in its own directory, and the link stays. A link whose target does not
//!   exist is refused.
//! * **Regular files only**, of at most [`MAX_STATE_BYTES`]: a FIFO, a device or a
//!   directory is refused before anything is read or created.
//! * **Replacement**: a temporary `.<name>.<16 hex digits>.tmp` in the target's
//!   directory gets the old file's permission bits and owner (a new state file gets the
//!   default mode under the umask), is written and flushed to disk, renamed over the
//!   target, and the directory is flushed: a reader, or a crash at any moment, sees the
//!   old state or the new one, never part of either.
//! * **Stale temporaries** left by a run that was killed are removed by the next run,
//!   under the lock (no other run can be writing one then).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use nixl_telemetry_processor::{read_regular_file, FileError, Metrics, MAX_STATE_BYTES};

/// A locked state file: the lock is released when it is dropped.
#[must_use = "the state file is unlocked when this is dropped"]
pub struct StateFile {
    /// As given on the command line (for messages).
    given: PathBuf,
    /// The file that holds the state (the link's target when `given` is a link).
    target: PathBuf,
    dir: PathBuf,
    name: String,
    /// Holds the lock until dropped.
    _lock: File,
}

impl StateFile {
    /// Resolves `path`, refuses what cannot be a state file, takes the lock (waiting
    /// for another run that holds it) and removes stale temporaries.
    pub fn lock(path: &Path) -> anyhow::Result<StateFile> {
        let target = resolve(path)?;
        let dir = match target.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
            _ => PathBuf::from("."),
        };
        let Some(name) = target.file_name().and_then(|n| n.to_str()) else {
            bail!(
                "state file {} must name a file (UTF-8, not `..`)",
                path.display()
            );
        };
        let name = name.to_owned();
        let lock_path = dir.join(format!(".{name}.lock"));
        // Readable by whoever may read the state (the umask applies); a user who may
        // not write an existing lock file locks it through a read-only descriptor
        // (flock needs no write access).
        let open = |write: bool| {
            OpenOptions::new()
                .read(true)
                .write(write)
                .create(write)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .mode(0o666)
                .open(&lock_path)
        };
        let lock = open(true)
            .or_else(|e| match e.kind() {
                io::ErrorKind::PermissionDenied => open(false),
                _ => Err(e),
            })
            .with_context(|| {
                format!(
                    "cannot open the lock file {} of state {}",
                    lock_path.display(),
                    path.display()
                )
            })?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                eprintln!(
                    "nixl-telemetry process: state {} is in use by another run; waiting for it",
                    path.display()
                );
                lock.lock()
                    .with_context(|| format!("cannot lock {}", lock_path.display()))?;
            }
            Err(fs::TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("cannot lock {}", lock_path.display()))
            }
        }
        let state = StateFile {
            given: path.to_owned(),
            target,
            dir,
            name,
            _lock: lock,
        };
        state.remove_stale_temporaries();
        Ok(state)
    }

    /// The metrics in the file; a missing file is empty metrics.
    pub fn load(&self) -> anyhow::Result<Metrics> {
        let text = match read_regular_file(&self.target, MAX_STATE_BYTES, "state file") {
            Ok(text) => text,
            Err(FileError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                return Ok(Metrics::new())
            }
            Err(e) => return Err(e.into()),
        };
        Metrics::from_json_str(&text)
            .with_context(|| format!("state file {} cannot be loaded", self.given.display()))
    }

    /// Replaces the file with `bytes` (see the module's description).
    pub fn replace(&self, bytes: &[u8]) -> anyhow::Result<()> {
        let old = match fs::metadata(&self.target) {
            Ok(meta) => Some(meta),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e).context("cannot inspect the old state"),
        };
        let (tmp_path, mut tmp) = self.create_temporary(old.is_some())?;
        let written = (|| -> anyhow::Result<()> {
            if let Some(old) = &old {
                keep_owner(&tmp, old, &self.given)?;
                tmp.set_permissions(fs::Permissions::from_mode(old.mode() & 0o7777))
                    .context("cannot give the new state the old one's permissions")?;
            }
            tmp.write_all(bytes)?;
            tmp.sync_all()?;
            fs::rename(&tmp_path, &self.target)?;
            Ok(())
        })();
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp_path);
            return Err(e);
        }
        File::open(&self.dir)?.sync_all()?;
        Ok(())
    }

    /// A new temporary file beside the target. A brand-new state file gets the
    /// default mode under the umask; one that replaces a file starts private and is
    /// given the old file's mode before any byte is written.
    fn create_temporary(&self, replacing: bool) -> anyhow::Result<(PathBuf, File)> {
        let mode = if replacing { 0o600 } else { 0o666 };
        let seed = std::process::id() as u64;
        for attempt in 0u64..64 {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            let tag = (seed << 40) ^ nanos ^ attempt.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let path = self.dir.join(format!(".{}.{tag:016x}.tmp", self.name));
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .mode(mode)
                .open(&path)
            {
                Ok(file) => return Ok((path, file)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!("cannot create a temporary file in {}", self.dir.display())
                    })
                }
            }
        }
        bail!(
            "cannot create a temporary file in {}: every name tried exists",
            self.dir.display()
        )
    }

    /// Removes temporaries a killed run left (`.<name>.<letters or digits>.tmp`,
    /// regular files only). Runs under the lock, so none of them is being written.
    fn remove_stale_temporaries(&self) {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        let prefix = format!(".{}.", self.name);
        let mut removed = 0u32;
        for entry in entries.flatten() {
            let file_name = entry.file_name();
            let Some(file_name) = file_name.to_str() else {
                continue;
            };
            let Some(middle) = file_name
                .strip_prefix(&prefix)
                .and_then(|rest| rest.strip_suffix(".tmp"))
            else {
                continue;
            };
            let ours = !middle.is_empty()
                && middle.len() <= 32
                && middle.bytes().all(|b| b.is_ascii_alphanumeric());
            let regular = entry.file_type().is_ok_and(|t| t.is_file());
            if ours && regular && fs::remove_file(entry.path()).is_ok() {
                removed += 1;
            }
        }
        if removed > 0 {
            eprintln!(
                "nixl-telemetry process: removed {removed} temporary file(s) of state {} left by an interrupted run",
                self.given.display()
            );
        }
    }
}

/// The file that holds the state: `path` itself, or the target of the symbolic link
/// `path`. Refuses a dangling link and anything that exists but is not a regular file.
fn resolve(path: &Path) -> anyhow::Result<PathBuf> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(path.to_owned()),
        Err(e) => {
            return Err(e).with_context(|| format!("cannot inspect state {}", path.display()))
        }
    };
    let target = if meta.file_type().is_symlink() {
        match fs::canonicalize(path) {
            Ok(target) => target,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let link = fs::read_link(path).unwrap_or_default();
                bail!(
                    "state file {} is a symbolic link to {}, which does not exist; create the target or remove the link",
                    path.display(),
                    link.display()
                );
            }
            Err(e) => {
                return Err(e).with_context(|| format!("cannot resolve state {}", path.display()))
            }
        }
    } else {
        path.to_owned()
    };
    let meta = fs::metadata(&target)
        .with_context(|| format!("cannot inspect state {}", target.display()))?;
    if !meta.is_file() {
        bail!(
            "state file {} is {}, not a regular file; accepted: a regular file (or a symbolic link to one) of at most {MAX_STATE_BYTES} bytes, or a path that does not exist yet",
            path.display(),
            kind(&meta.file_type())
        );
    }
    Ok(target)
}

fn kind(file_type: &fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Gives the temporary file the old state's owner and group when they differ from
/// ours. Changing the owner needs privileges: without them the new state is ours, and
/// we say so.
fn keep_owner(tmp: &File, old: &fs::Metadata, given: &Path) -> anyhow::Result<()> {
    let ours = tmp.metadata()?;
    let uid = (ours.uid() != old.uid()).then_some(old.uid());
    let gid = (ours.gid() != old.gid()).then_some(old.gid());
    if uid.is_none() && gid.is_none() {
        return Ok(());
    }
    let changed = std::os::unix::fs::fchown(tmp, uid, gid).or_else(|e| match gid {
        // Without the right to give the file away, the group may still be ours to set.
        Some(gid) if uid.is_some() => std::os::unix::fs::fchown(tmp, None, Some(gid)).and(Err(e)),
        _ => Err(e),
    });
    if let Err(e) = changed {
        eprintln!(
            "nixl-telemetry process: warning: the new state {} cannot keep owner {}:{} ({e}); it is owned by {}:{}",
            given.display(),
            old.uid(),
            old.gid(),
            ours.uid(),
            ours.gid()
        );
    }
    Ok(())
}
