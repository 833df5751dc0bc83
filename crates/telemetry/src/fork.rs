//! `fork()` without `exec`: which telemetry belongs to the running process.
//!
//! A forked child is a copy of its parent's memory with a single thread. The
//! telemetry it inherited is the parent's: its flush thread does not exist in
//! the child, a lock another thread of the parent held at the fork stays held
//! forever, and its ring or plug-in belongs to the parent. A host that may be
//! forked records each object's [`generation`] when it creates it and leaves
//! an object alone once the generation differs (the C API and the Python
//! package do). Telemetry the child creates itself works as anywhere else.
//!
//! [`install`] registers the `pthread_atfork` handlers, once per process;
//! creating telemetry does it. Besides counting the generation, they keep the
//! process-wide clock consistent across the fork (no calibration half written
//! or lock held in the child), so that the child's own telemetry and
//! [`crate::clock::now_us`] work there.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

use crate::clock;

static GENERATION: AtomicU64 = AtomicU64::new(0);
static REGISTER: Once = Once::new();

/// Before `fork` returns anywhere: the clock is made quiescent.
extern "C" fn before_fork() {
    clock::before_fork();
}

/// In the parent once `fork` is done (or failed).
extern "C" fn after_fork_in_parent() {
    clock::after_fork();
}

/// In the child, its only thread: a new generation; the clock is released.
extern "C" fn after_fork_in_child() {
    GENERATION.fetch_add(1, Ordering::Relaxed);
    clock::after_fork();
}

/// Registers the fork handlers (once per process; later calls return at once).
pub fn install() {
    REGISTER.call_once(|| {
        // SAFETY: the three handlers are plain `extern "C"` functions of this
        // library that never unwind (no code they run panics) and stay mapped:
        // a library holding telemetry is not unloaded while it can fork, and
        // the Rust crates of this workspace are never unloaded at all.
        let rc = unsafe {
            libc::pthread_atfork(
                Some(before_fork),
                Some(after_fork_in_parent),
                Some(after_fork_in_child),
            )
        };
        if rc != 0 {
            tracing::warn!(
                rc,
                "pthread_atfork failed: telemetry inherited through fork() is not told apart"
            );
        }
    });
}

/// The generation of the running process: 0 in a process that was not forked
/// since [`install`], one more in each forked child. One relaxed atomic load.
#[inline(always)]
pub fn generation() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_sees_another_generation_and_a_working_clock() {
        install();
        clock::init();
        let before = generation();
        // SAFETY: the child reads an atomic and the clock, then leaves by `_exit`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let moved = generation() == before + 1;
            clock::recalibrate();
            let ticks = clock::now_us() > 0;
            // SAFETY: leaving the child without running the parent's destructors.
            unsafe { libc::_exit(if moved && ticks { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: waiting for the child just forked.
        let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(waited, pid);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        assert_eq!(generation(), before, "the parent keeps its generation");
    }
}
