//! The multi-process exporter's store files, as the collecting process reads
//! them from a shared directory anyone in it can write: the input is the file's
//! head (zero-padded to the store size, or cut short when the first byte says so;
//! when it says so, the magic, version, header length and size fields are made
//! valid so that the series and texts behind them are reached). Properties: no
//! panic; a refused file is a `Skip` with a reason; only a file whose publish
//! sequence is odd (a writer mid-update) is reported busy; a reading's texts fit
//! their fields.

#![no_main]
#![forbid(unsafe_code)]

use std::fs::{self, OpenOptions};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use nixl_telemetry_prometheus_mp::layout::{self, off, text_len, FILE_SIZE};
use nixl_telemetry_prometheus_mp::scan::{open_store, read_store, Skip};

fn store_path() -> &'static (PathBuf, u32) {
    static PATH: OnceLock<(PathBuf, u32)> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("nixl-fuzz-mp-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("temporary directory");
        let uid = fs::metadata(&dir).expect("the directory's owner").uid();
        (dir.join("store"), uid)
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, head)) = data.split_first() else {
        return;
    };
    let mut bytes = head.to_vec();
    if flags & 1 != 0 {
        bytes.resize(bytes.len().max(off::SERIES), 0);
        bytes[off::MAGIC..off::MAGIC + 8].copy_from_slice(&layout::MAGIC);
        bytes[off::VERSION..off::VERSION + 4].copy_from_slice(&layout::VERSION.to_ne_bytes());
        bytes[off::HEADER_LEN..off::HEADER_LEN + 4]
            .copy_from_slice(&(off::SERIES as u32).to_ne_bytes());
        bytes[off::FILE_SIZE..off::FILE_SIZE + 8]
            .copy_from_slice(&(FILE_SIZE as u64).to_ne_bytes());
        if flags & 4 == 0 {
            bytes[off::SEQ] &= !1;
        }
    }
    let size = if flags & 2 != 0 {
        bytes.len().min(FILE_SIZE)
    } else {
        FILE_SIZE
    };
    bytes.resize(size, 0);
    let (path, uid) = store_path();
    {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .expect("create the store file");
        file.write_all_at(&bytes, 0).expect("write the store file");
    }
    let file = match open_store(path, *uid) {
        Ok(file) => file,
        Err(skip) => {
            assert!(!format!("{skip:?}").is_empty());
            return;
        }
    };
    match read_store(&file) {
        Ok(reading) => {
            assert!(reading.listen.len() < text_len::LISTEN);
            if let Some(rank) = &reading.local_rank {
                assert!(rank.len() < text_len::RANK);
            }
        }
        Err(Skip::Busy) => {
            assert!(bytes[off::SEQ] & 1 == 1, "a store at rest reported busy");
        }
        Err(skip) => assert!(!format!("{skip:?}").is_empty()),
    }
});
