//! Knowing when the ring directory changed: inotify through the `notify`
//! crate, or polling where the directory cannot be watched (no inotify, its
//! limits reached, a file system without it).
//!
//! A ring may live for less than one listing interval (a short job: created,
//! written, closed and removed within milliseconds). So a file that appears
//! (`IN_CREATE`, or `IN_MOVED_TO` for a ring renamed into place) is opened at
//! once, on the watcher's thread, and its descriptor handed to the sidecar
//! ([`OpenedEarly`]): once open, the file stays readable after it is
//! removed. Closed-after-writing (`IN_CLOSE_WRITE`), removed and renamed
//! files wake the sidecar to list the directory. An overflowed inotify queue
//! (`IN_Q_OVERFLOW`) asks for a full listing at once.

use std::ffi::OsString;
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nixl_telemetry::ring::is_writer_temp_file;
use notify::event::{AccessKind, AccessMode, ModifyKind, RenameMode};
use notify::{EventKind, RecursiveMode, Watcher};
use rustix::fs::{FileType, Mode, OFlags};

/// How often the directory is listed anyway while it is watched: a change
/// the watch missed (an overflowed queue) is seen within this time.
pub const SAFETY_RESCAN: Duration = Duration::from_secs(5);

/// The most notices waiting for the sidecar; beyond, a new file's
/// descriptor is not kept (the next listing finds the file, if it is still
/// there). Bounds the descriptors a flood of created files can hold.
pub const MAX_WAITING: usize = 256;

/// A file the watch saw appear, opened at once.
#[derive(Debug)]
pub struct OpenedEarly {
    /// Its name in the directory.
    pub name: OsString,
    /// The file, opened read-write (to consume it) where allowed, else
    /// read-only.
    pub file: File,
    /// Whether it was opened read-write.
    pub writable: bool,
    /// When it was seen.
    pub seen: Instant,
}

/// What the watcher's thread tells the sidecar: a file that appeared and
/// was opened, or a wake-up to look at the [`Flags`].
enum Notice {
    Wake,
    Opened(OpenedEarly),
}

/// Changes told by flags, not one notice each: however many events come
/// while the sidecar is busy, they hold one place in the channel, and
/// never push a file opened early out of it.
#[derive(Default)]
struct Flags {
    /// Something in the directory changed: list it (at most once an interval).
    changed: AtomicBool,
    /// Changes were lost (the queue overflowed): list it at once.
    rescan: AtomicBool,
}

impl Flags {
    /// Sets `flag`, and wakes the sidecar if it was not set.
    fn raise(tx: &SyncSender<Notice>, flag: &AtomicBool) {
        if !flag.swap(true, Ordering::AcqRel) {
            let _ = tx.try_send(Notice::Wake);
        }
    }
}

/// A directory's changes, waited for.
pub struct DirectoryWatch {
    /// `None` when polling.
    watcher: Option<(notify::RecommendedWatcher, Receiver<Notice>)>,
    flags: Arc<Flags>,
    changed: bool,
    rescan: bool,
    opened: Vec<OpenedEarly>,
}

impl DirectoryWatch {
    /// Watches `dir`; falls back to polling when it cannot (`why` says why).
    pub fn new(dir: &Path) -> (DirectoryWatch, Option<String>) {
        let (tx, rx) = sync_channel(MAX_WAITING);
        let shown = dir.display().to_string();
        let flags = Arc::new(Flags::default());
        let raised = Arc::clone(&flags);
        let made = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            notice(&tx, &raised, res, &shown);
        })
        .and_then(|mut watcher| {
            watcher.watch(dir, RecursiveMode::NonRecursive)?;
            Ok(watcher)
        });
        let mut watch = DirectoryWatch::polling();
        match made {
            Ok(watcher) => {
                watch.watcher = Some((watcher, rx));
                watch.flags = flags;
                (watch, None)
            }
            Err(e) => (watch, Some(e.to_string())),
        }
    }

    /// Polling only: the directory is listed every interval.
    pub fn polling() -> DirectoryWatch {
        DirectoryWatch {
            watcher: None,
            flags: Arc::default(),
            changed: true,
            rescan: false,
            opened: Vec::new(),
        }
    }

    /// Tries again to watch `dir` when it is polled (it may exist now);
    /// returns whether it is watched.
    pub fn try_again(&mut self, dir: &Path) -> bool {
        if self.watcher.is_none() {
            if let (
                DirectoryWatch {
                    watcher: Some(w),
                    flags,
                    ..
                },
                None,
            ) = DirectoryWatch::new(dir)
            {
                self.watcher = Some(w);
                self.flags = flags;
            }
        }
        self.is_watching()
    }

    /// Whether the directory is watched (otherwise it is polled).
    pub fn is_watching(&self) -> bool {
        self.watcher.is_some()
    }

    /// Takes one notice, and the flags.
    fn take(&mut self, notice: Notice) {
        if let Notice::Opened(file) = notice {
            self.changed = true;
            self.opened.push(file);
        }
        self.take_flags();
    }

    fn take_flags(&mut self) {
        if self.flags.changed.swap(false, Ordering::AcqRel) {
            self.changed = true;
        }
        if self.flags.rescan.swap(false, Ordering::AcqRel) {
            self.changed = true;
            self.rescan = true;
        }
    }

    /// Takes the notices waiting, without waiting.
    fn take_waiting(&mut self) {
        let mut disconnected = false;
        if let Some((_, rx)) = &self.watcher {
            let mut notices = Vec::new();
            loop {
                match rx.try_recv() {
                    Ok(notice) => notices.push(notice),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        disconnected = true;
                        break;
                    }
                }
            }
            for notice in notices {
                self.take(notice);
            }
        }
        self.take_flags();
        if disconnected {
            self.watcher = None;
        }
    }

    /// Waits until `deadline`, waking early when the directory changes or
    /// `stop()` becomes true (checked every 20 ms).
    pub fn wait_until(&mut self, deadline: Instant, stop: impl Fn() -> bool) {
        loop {
            if stop() {
                return;
            }
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            let slice = (deadline - now).min(Duration::from_millis(20));
            let received = match &self.watcher {
                Some((_, rx)) => rx.recv_timeout(slice),
                None => {
                    std::thread::sleep(slice);
                    continue;
                }
            };
            match received {
                Ok(notice) => {
                    self.take(notice);
                    self.take_waiting();
                    return;
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => self.watcher = None,
            }
        }
    }

    /// Whether the directory should be listed now: it changed since the last
    /// listing (or, polling, always), and takes the change.
    pub fn take_change(&mut self) -> bool {
        if self.watcher.is_none() {
            return true;
        }
        self.take_waiting();
        std::mem::take(&mut self.changed)
    }

    /// Whether changes were lost (the inotify queue overflowed): the
    /// directory must be listed at once, whatever the interval.
    pub fn take_rescan(&mut self) -> bool {
        self.take_waiting();
        std::mem::take(&mut self.rescan)
    }

    /// The files seen to appear since the last call, opened.
    pub fn take_opened(&mut self) -> Vec<OpenedEarly> {
        self.take_waiting();
        std::mem::take(&mut self.opened)
    }
}

/// On the watcher's thread: what an inotify event means for the sidecar.
fn notice(tx: &SyncSender<Notice>, flags: &Flags, res: notify::Result<notify::Event>, dir: &str) {
    let event = match res {
        Ok(event) => event,
        Err(_) => return Flags::raise(tx, &flags.changed),
    };
    if event.need_rescan() {
        tracing::debug!("{dir}: the inotify queue overflowed: listing the directory again");
        return Flags::raise(tx, &flags.rescan);
    }
    match event.kind {
        EventKind::Create(_) | EventKind::Modify(ModifyKind::Name(RenameMode::To)) => {
            for path in &event.paths {
                if let Some(opened) = open_early(path) {
                    // Full: the descriptor is closed; the listing finds it.
                    let _ = tx.try_send(Notice::Opened(opened));
                }
            }
            Flags::raise(tx, &flags.changed);
        }
        // The `To` half was told already.
        EventKind::Modify(ModifyKind::Name(RenameMode::Both)) => {}
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => {
            Flags::raise(tx, &flags.changed);
        }
        // Opening, reading and closing files unwritten (the sidecar's own
        // reads among them) changes nothing that matters here.
        EventKind::Access(_) => {}
        _ => Flags::raise(tx, &flags.changed),
    }
}

/// Opens a file that just appeared, as the confined directory rules allow:
/// a regular file (no link followed, no FIFO or device opened), not a
/// writer's temporary file; read-write where allowed, else read-only.
/// `None` when it is none of these or already gone (the listing decides and
/// warns).
fn open_early(path: &Path) -> Option<OpenedEarly> {
    let name = path.file_name()?;
    if is_writer_temp_file(name) || name.as_bytes().is_empty() {
        return None;
    }
    let seen = Instant::now();
    let before = rustix::fs::lstat(path).ok()?;
    if FileType::from_raw_mode(before.st_mode) != FileType::RegularFile {
        return None;
    }
    let flags = OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::NOFOLLOW;
    let (fd, writable) = match rustix::fs::open(path, flags | OFlags::RDWR, Mode::empty()) {
        Ok(fd) => (fd, true),
        Err(rustix::io::Errno::ACCESS | rustix::io::Errno::ROFS | rustix::io::Errno::PERM) => (
            rustix::fs::open(path, flags | OFlags::RDONLY, Mode::empty()).ok()?,
            false,
        ),
        Err(_) => return None,
    };
    let after = rustix::fs::fstat(&fd).ok()?;
    if FileType::from_raw_mode(after.st_mode) != FileType::RegularFile
        || (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino)
    {
        return None;
    }
    Some(OpenedEarly {
        name: name.to_owned(),
        file: File::from(fd),
        writable,
        seen,
    })
}
