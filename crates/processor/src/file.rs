//! Reading the files the processor is configured with (attribute registries) and the
//! state files the `process` command keeps: regular files only, bounded in size, never
//! blocking on a FIFO or reading a device without end.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::Path;

use crate::error::FileError;

/// The largest attribute registry file read, in bytes (1 MiB).
pub const MAX_REGISTRY_BYTES: u64 = 1 << 20;

/// The largest metrics state file read, in bytes (256 MiB).
pub const MAX_STATE_BYTES: u64 = 256 << 20;

/// Reads a whole regular file of at most `limit` bytes as UTF-8 text. `what` names the
/// file's role in errors (`attribute registry`, `state file`).
///
/// Symbolic links are followed. Anything that is not a regular file once opened — a
/// FIFO, a device such as `/dev/zero`, a directory, a socket — is refused without
/// reading it (a FIFO is opened without waiting for a writer), and so is a file longer
/// than `limit` (at most `limit + 1` bytes are read).
pub fn read_regular_file(path: &Path, limit: u64, what: &'static str) -> Result<String, FileError> {
    let io = |source| FileError::Io {
        path: path.to_owned(),
        what,
        source,
    };
    let file = open_without_blocking(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(FileError::NotRegular {
            path: path.to_owned(),
            what,
            found: file_kind(&meta.file_type()),
        });
    }
    let too_large = || FileError::TooLarge {
        path: path.to_owned(),
        what,
        limit,
    };
    if meta.len() > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    String::from_utf8(bytes).map_err(|e| FileError::NotUtf8 {
        path: path.to_owned(),
        what,
        offset: e.utf8_error().valid_up_to() as u64,
    })
}

/// Opens for reading; a FIFO is opened without waiting for a writer (the caller then
/// refuses it).
fn open_without_blocking(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NONBLOCK);
    }
    options.open(path)
}

/// What kind of file this is, for messages (`a FIFO`, `a character device`).
pub(crate) fn file_kind(file_type: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if file_type.is_fifo() {
            return "a FIFO";
        }
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_symlink() {
        "a symbolic link"
    } else if file_type.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_directories_and_long_files_are_refused() {
        let err = read_regular_file(Path::new("/dev/zero"), 100, "state file").unwrap_err();
        assert!(err.to_string().contains("a character device"), "{err}");
        let dir = std::env::temp_dir();
        let err = read_regular_file(&dir, 100, "state file").unwrap_err();
        assert!(err.to_string().contains("a directory"), "{err}");
        let path = dir.join(format!("nixl-processor-file-test-{}", std::process::id()));
        std::fs::write(&path, "x".repeat(101)).unwrap();
        let err = read_regular_file(&path, 100, "state file").unwrap_err();
        assert!(err.to_string().contains("100 bytes"), "{err}");
        assert_eq!(
            read_regular_file(&path, 101, "state file").unwrap().len(),
            101
        );
        std::fs::write(&path, b"ok\xff").unwrap();
        let err = read_regular_file(&path, 101, "state file").unwrap_err();
        assert!(err.to_string().contains("byte 2"), "{err}");
        std::fs::remove_file(&path).unwrap();
    }
}
