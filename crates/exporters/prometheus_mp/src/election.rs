//! Which process serves the run: the one holding the `flock` of the lock file
//! named after the address. Every exporter tries to take it when created and
//! again at the end of each flush pass (at most once per
//! [`TAKEOVER_INTERVAL`]); the holder binds the address and serves
//! every store of the directory until it ends (its lock is released with its
//! descriptor, so a killed owner and a clean exit look the same).

use std::fs::File;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use nixl_telemetry_prometheus::external::{serve, HttpServer};
use nixl_telemetry_prometheus::ServerLimits;

use crate::error::MpError;
use crate::files;
use crate::scan::Collector;

/// Wait before binding again after the address could not be bound.
const BIND_BACKOFF: Duration = Duration::from_secs(1);
/// The most often a writer tries the owner lock (a system call): a takeover
/// happens at the first flush pass this long after the previous attempt.
pub const TAKEOVER_INTERVAL: Duration = Duration::from_millis(100);

/// The owner's endpoint.
#[derive(Debug)]
struct Serving {
    #[allow(dead_code, reason = "held: dropping it stops the endpoint")]
    server: HttpServer,
    addr: SocketAddr,
}

/// One exporter's part in the election.
#[derive(Debug)]
pub struct Election {
    // Dropped first: the listener closes before the lock is released.
    serving: Option<Serving>,
    lock: File,
    lock_path: PathBuf,
    listen: SocketAddr,
    limits: ServerLimits,
    collector: Arc<Collector>,
    /// No attempt before this time (ms since the epoch, the stores' clock).
    next_attempt_ms: u64,
    warned_bind: bool,
}

impl Election {
    /// Opens the lock file of `listen` in `dir` (creating it 0600); does not
    /// take it yet.
    pub fn new(
        dir: &Path,
        listen: SocketAddr,
        limits: ServerLimits,
        collector: Arc<Collector>,
        uid: u32,
    ) -> Result<Election, MpError> {
        let lock_path = dir.join(files::lock_name(&listen));
        let lock = files::open_lock_file(&lock_path, uid)?;
        Ok(Election {
            serving: None,
            lock,
            lock_path,
            listen,
            limits,
            collector,
            next_attempt_ms: 0,
            warned_bind: false,
        })
    }

    /// Whether this exporter serves the run.
    pub fn is_owner(&self) -> bool {
        self.serving.is_some()
    }

    /// The address served, if this exporter is the owner.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.serving.as_ref().map(|s| s.addr)
    }

    /// Becomes the owner if no live process is: takes the lock, binds,
    /// serves. `now_ms`: the current time, ms since the epoch (the caller
    /// has just read the clock). A wait that reaches further ahead than the
    /// longest one means the clock went back: then it is not honoured.
    pub fn try_take(&mut self, now_ms: u64) {
        if self.serving.is_some() {
            return;
        }
        let ahead = self.next_attempt_ms.saturating_sub(now_ms);
        if ahead > 0 && ahead <= BIND_BACKOFF.as_millis() as u64 {
            return;
        }
        match self.lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                self.next_attempt_ms = now_ms + TAKEOVER_INTERVAL.as_millis() as u64;
                return;
            }
            Err(std::fs::TryLockError::Error(e)) => {
                self.backoff(now_ms);
                if !std::mem::replace(&mut self.warned_bind, true) {
                    tracing::warn!(lock = %self.lock_path.display(), error = %e, "prometheus_mp cannot lock its owner lock file; this process only writes");
                }
                return;
            }
        }
        let started = std::net::TcpListener::bind(self.listen).and_then(|listener| {
            let addr = listener.local_addr()?;
            let source = Arc::clone(&self.collector) as Arc<_>;
            Ok(Serving {
                server: serve(listener, self.limits, source)?,
                addr,
            })
        });
        match started {
            Ok(serving) => {
                tracing::info!(address = %serving.addr, lock = %self.lock_path.display(), "prometheus_mp: this process serves every rank of the directory");
                self.serving = Some(serving);
                self.warned_bind = false;
            }
            Err(e) => {
                // Held from outside the run: let go, so a sibling can try.
                let _ = self.lock.unlock();
                self.backoff(now_ms);
                if !std::mem::replace(&mut self.warned_bind, true) {
                    tracing::warn!(address = %self.listen, error = %e, "prometheus_mp elected this process but cannot bind the address; retrying");
                }
            }
        }
    }

    fn backoff(&mut self, now_ms: u64) {
        self.next_attempt_ms = now_ms + BIND_BACKOFF.as_millis() as u64;
    }
}

/// Fails if a live owner serves `dir` on an address other than `ours`: two
/// runs (or two ports) share one directory.
pub fn check_other_runs(dir: &Path, ours: &SocketAddr, uid: u32) -> Result<(), MpError> {
    let ours_text = ours.to_string();
    let entries = std::fs::read_dir(dir).map_err(|e| MpError::Directory {
        path: dir.to_owned(),
        reason: format!("cannot list it: {e}"),
    })?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(other) = name.to_str().and_then(files::lock_address) else {
            continue;
        };
        if other == ours_text {
            continue;
        }
        let path = entry.path();
        let Ok(file) = files::open_untrusted(&path) else {
            continue;
        };
        let trusted = file
            .metadata()
            .is_ok_and(|m| m.is_file() && std::os::unix::fs::MetadataExt::uid(&m) == uid);
        if trusted && matches!(file.try_lock(), Err(std::fs::TryLockError::WouldBlock)) {
            return Err(MpError::Misconfigured {
                dir: dir.to_owned(),
                other: other.to_owned(),
                lock: path,
                ours: ours_text,
            });
        }
    }
    Ok(())
}
