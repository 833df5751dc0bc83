//! The endpoint's HTTP thread runs at the lowest CPU priority.
//!
//! Rendering and compressing a scrape is the exporter's only real work outside
//! the host's flush thread. On a busy machine it must not take CPU from the
//! host's own threads: the server thread lowers its own nice value to
//! [`SERVER_NICE`] (Linux: per thread), so the scheduler gives the host's
//! threads precedence and scrapes use what is left. A scraper waits a little
//! longer on a saturated machine; Prometheus's timeouts are seconds.

/// The nice value of the endpoint's server thread (the lowest priority).
pub(crate) const SERVER_NICE: i32 = 19;

/// Lowers the calling thread's priority to [`SERVER_NICE`]. Returns the OS
/// error when it cannot (the thread then runs at its inherited priority).
pub(crate) fn lower_current_thread() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        // On Linux, PRIO_PROCESS with a thread id changes that thread alone.
        rustix::process::setpriority_process(Some(rustix::thread::gettid()), SERVER_NICE)?;
    }
    Ok(())
}
