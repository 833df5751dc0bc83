//! The service's log lines, as the tests see them: one subscriber for the whole
//! test binary writes every INFO-or-worse line into a buffer the tests search.

use std::io::Write;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

static LINES: Mutex<Vec<u8>> = Mutex::new(Vec::new());
static INSTALLED: OnceLock<()> = OnceLock::new();

struct Buffer;

impl Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        LINES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Starts capturing the log (once for the whole binary).
pub fn capture() {
    INSTALLED.get_or_init(|| {
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .with_writer(|| Buffer)
            .finish();
        tracing::subscriber::set_global_default(subscriber)
            .expect("no other log subscriber in the tests");
    });
}

/// The first captured line that contains `text`, waiting up to `limit` for it.
pub fn line_containing(text: &str, limit: Duration) -> Option<String> {
    let until = Instant::now() + limit;
    loop {
        let found = {
            let lines = LINES.lock().unwrap_or_else(|e| e.into_inner());
            String::from_utf8_lossy(&lines)
                .lines()
                .find(|line| line.contains(text))
                .map(str::to_owned)
        };
        if found.is_some() || Instant::now() >= until {
            return found;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
