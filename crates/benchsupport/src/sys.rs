//! The one call `rustix` does not offer: the real-time scheduling policy.

#![allow(unsafe_code)]

use std::io;

/// Runs the calling thread under `SCHED_RR` at `priority`.
pub(crate) fn set_round_robin(priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param
    // that outlives the call, which only reads it.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_RR, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
