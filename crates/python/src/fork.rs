//! Fork detection: a child process must not record into, flush to, or close the
//! telemetry it inherited (the flush thread does not exist in the child, its locks
//! may be held forever, and the ring belongs to the parent).
//!
//! A `pthread_atfork` child handler bumps a process-wide generation; every object
//! remembers the generation it was created in and does nothing once it differs.
//! The check on the hot path is one relaxed atomic load.
//!
//! The crate's only unsafe code is here: registering the handler (and, in the
//! unit test, forking).

#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

static GENERATION: AtomicU64 = AtomicU64::new(0);
static REGISTER: Once = Once::new();

extern "C" fn after_fork_in_child() {
    // Only an atomic add: async-signal-safe, no lock, no allocation.
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// Installs the child handler (once per process; idempotent).
pub fn install() {
    REGISTER.call_once(|| {
        // SAFETY: `after_fork_in_child` is a plain `extern "C"` function that lives
        // as long as the process (this library is never unloaded by CPython) and
        // only performs an atomic add, which is allowed after fork in a
        // multi-threaded process.
        let rc = unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
        if rc != 0 {
            tracing::warn!(
                rc,
                "pthread_atfork failed; telemetry inherited through fork is not disabled"
            );
        }
    });
}

/// The generation of the running process: it changes in a forked child.
#[inline(always)]
pub fn current() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_sees_another_generation() {
        install();
        let before = current();
        // SAFETY: the child only reads an atomic and calls `_exit`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let code = if current() != before { 0 } else { 1 };
            // SAFETY: leaving the child without running the parent's destructors.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waiting for the child just forked.
        let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(waited, pid);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        assert_eq!(current(), before, "the parent keeps its generation");
    }
}
