//! Knowing when the ring directory changed: inotify through the `notify`
//! crate, or polling where the directory cannot be watched (no inotify, its
//! limits reached, a file system without it).

use std::path::Path;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use notify::{EventKind, RecursiveMode, Watcher};

/// How often the directory is listed anyway while it is watched: a change
/// the watch missed (an overflowed queue) is seen within this time.
pub const SAFETY_RESCAN: Duration = Duration::from_secs(5);

/// A directory's changes, waited for.
pub struct DirectoryWatch {
    /// `None` when polling.
    watcher: Option<(notify::RecommendedWatcher, Receiver<()>)>,
    changed: bool,
}

impl DirectoryWatch {
    /// Watches `dir`; falls back to polling when it cannot (`why` says why).
    pub fn new(dir: &Path) -> (DirectoryWatch, Option<String>) {
        let (tx, rx) = channel();
        let made = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            // Opening, reading and closing files (the sidecar's own reads
            // among them) changes nothing that matters here.
            let relevant = match res {
                Ok(event) => !matches!(event.kind, EventKind::Access(_)),
                Err(_) => true,
            };
            if relevant {
                let _ = tx.send(());
            }
        })
        .and_then(|mut watcher| {
            watcher.watch(dir, RecursiveMode::NonRecursive)?;
            Ok(watcher)
        });
        match made {
            Ok(watcher) => (
                DirectoryWatch {
                    watcher: Some((watcher, rx)),
                    changed: true,
                },
                None,
            ),
            Err(e) => (
                DirectoryWatch {
                    watcher: None,
                    changed: true,
                },
                Some(e.to_string()),
            ),
        }
    }

    /// Polling only: the directory is listed every interval.
    pub fn polling() -> DirectoryWatch {
        DirectoryWatch {
            watcher: None,
            changed: true,
        }
    }

    /// Tries again to watch `dir` when it is polled (it may exist now);
    /// returns whether it is watched.
    pub fn try_again(&mut self, dir: &Path) -> bool {
        if self.watcher.is_none() {
            if let (
                DirectoryWatch {
                    watcher: Some(w), ..
                },
                None,
            ) = DirectoryWatch::new(dir)
            {
                self.watcher = Some(w);
            }
        }
        self.is_watching()
    }

    /// Whether the directory is watched (otherwise it is polled).
    pub fn is_watching(&self) -> bool {
        self.watcher.is_some()
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
            match &self.watcher {
                Some((_, rx)) => match rx.recv_timeout(slice) {
                    Ok(()) => {
                        self.changed = true;
                        while rx.try_recv().is_ok() {}
                        return;
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => {
                        self.watcher = None;
                    }
                },
                None => std::thread::sleep(slice),
            }
        }
    }

    /// Whether the directory should be listed now: it changed since the last
    /// listing (or, polling, always), and takes the change.
    pub fn take_change(&mut self) -> bool {
        if let Some((_, rx)) = &self.watcher {
            while rx.try_recv().is_ok() {
                self.changed = true;
            }
            std::mem::take(&mut self.changed)
        } else {
            true
        }
    }
}
