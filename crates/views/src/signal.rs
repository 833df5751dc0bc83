//! SIGINT and SIGTERM as a flag: the first signal asks the running command to
//! stop at its next check; nothing is interrupted in the middle of a write.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Set once SIGINT or SIGTERM has arrived.
#[derive(Debug, Clone)]
pub struct StopFlag(Arc<AtomicBool>);

static INSTALLED: OnceLock<Result<StopFlag, String>> = OnceLock::new();
/// What a second signal does, once a command said ([`StopFlag::on_second_signal`]).
static SECOND_SIGNAL: OnceLock<Box<dyn Fn() + Send + Sync>> = OnceLock::new();

impl StopFlag {
    /// Installs the handler (once per process) and returns the flag it sets.
    pub fn install() -> Result<StopFlag, String> {
        INSTALLED
            .get_or_init(|| {
                let flag = StopFlag(Arc::new(AtomicBool::new(false)));
                let handler_flag = flag.clone();
                ctrlc::set_handler(move || {
                    if handler_flag.0.swap(true, Ordering::SeqCst) {
                        if let Some(action) = SECOND_SIGNAL.get() {
                            action();
                        }
                    }
                })
                .map(|()| flag)
                .map_err(|e| format!("cannot install the SIGINT/SIGTERM handler: {e}"))
            })
            .clone()
    }

    /// Sets what a second SIGINT or SIGTERM does (a command whose stop may
    /// wait on others ends at once); without it, a second signal is the
    /// first again. Only the first call counts.
    pub fn on_second_signal(action: impl Fn() + Send + Sync + 'static) {
        let _ = SECOND_SIGNAL.set(Box::new(action));
    }

    /// Whether a stop was asked for.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// Sleeps for `duration`, waking early (within 10 ms) when a stop is asked
    /// for. Returns whether a stop was asked for.
    pub fn sleep(&self, duration: Duration) -> bool {
        let end = Instant::now() + duration;
        loop {
            if self.is_set() {
                return true;
            }
            let now = Instant::now();
            if now >= end {
                return false;
            }
            std::thread::sleep((end - now).min(Duration::from_millis(10)));
        }
    }
}
