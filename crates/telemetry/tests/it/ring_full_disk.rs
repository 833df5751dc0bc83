//! A ring on a full file system is refused at creation, never a crash later.
//!
//! A shared mapping of a sparse file needs a disk block the first time each
//! page is written; on a full tmpfs that write is a SIGBUS, which ends the
//! host. The writer reserves the blocks when it creates the file, so the full
//! file system is an error there. The test mounts a 64 KiB tmpfs, which needs
//! root: CI runs as root. Without root the test fails and says why (it never
//! passes without checking); skip it there with `--skip a_ring_larger_than_the_free_space`.

use nixl_telemetry::ring::{RingError, RingWriter};
use nixl_telemetry::{Category, Event};
use std::process::Command;

struct Mounted(std::path::PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_ring_larger_than_the_free_space_is_an_error_not_a_sigbus() {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(
        euid, 0,
        "this test mounts a 64 KiB tmpfs and needs root (CI runs as root); \
         run it as root, or skip it with `cargo test -- --skip a_ring_larger_than_the_free_space`"
    );
    let dir = tempfile::tempdir().unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(dir.path())
        .status()
        .expect("mount runs");
    assert!(mounted.success(), "mount -t tmpfs failed as root");
    let _unmount = Mounted(dir.path().to_owned());

    // 40 + 56 × 4096 bytes: more than three times the space there is.
    let err = RingWriter::create(dir.path(), "agent", 4096).err().expect(
        "creating a 229 KB ring on a 64 KiB file system fails (unreserved, the first \
         write past the free space would be a SIGBUS)",
    );
    let text = err.to_string();
    assert!(matches!(err, RingError::Io { .. }), "{err:?}");
    assert!(text.contains("reserve disk space"), "{text}");
    assert!(text.contains("No space left"), "{text}");
    // Nothing is left behind, and a ring that fits still works.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    let mut w = RingWriter::create(dir.path(), "small", 64).unwrap();
    w.push_batch(&[Event::new(1, Category::CUSTOM, "fits", 1)]);
}
