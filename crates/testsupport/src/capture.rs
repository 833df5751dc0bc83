//! A `tracing` subscriber that keeps every event of one thread, for tests of
//! what is logged.
//!
//! Scoped dispatchers (`tracing::subscriber::with_default`) are not reliable
//! for this when the code under test has threads of its own: `tracing-core`
//! caches each call site's interest process-wide, and a call site first
//! reached by a thread without a subscriber can be cached as "never", hiding
//! it from the capturing thread too (the capture then misses events at random).
//! So [`Capture`] installs one process-wide router as the global default the
//! first time it runs; the router tells `tracing` to ask it about every event
//! and hands each one to the capture running on the event's thread, if any.

use std::cell::RefCell;
use std::sync::{Arc, Mutex, OnceLock};

/// One `tracing` event seen by [`Capture`].
#[derive(Debug, Clone)]
pub struct Captured {
    /// Its level.
    pub level: tracing::Level,
    /// Its fields as `name=value` pairs separated by spaces, message included.
    pub text: String,
}

/// Keeps every `tracing` event of the thread that calls [`Capture::run`],
/// while `run` lasts.
#[derive(Clone, Default)]
pub struct Capture {
    events: Arc<Mutex<Vec<Captured>>>,
}

thread_local! {
    /// The capture running on this thread.
    static CURRENT: RefCell<Option<Capture>> = const { RefCell::new(None) };
}

/// Whether the router is the global default (false: another subscriber was
/// installed first, and captures fall back to scoped dispatchers).
static ROUTER_INSTALLED: OnceLock<bool> = OnceLock::new();

/// Puts the thread's previous capture back when `run` ends, panics included.
struct Restore(Option<Capture>);

impl Drop for Restore {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

impl Capture {
    /// The events so far.
    pub fn events(&self) -> Vec<Captured> {
        self.events.lock().unwrap().clone()
    }

    /// Runs `f`, keeping every event the current thread logs meanwhile.
    pub fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        let routed = *ROUTER_INSTALLED
            .get_or_init(|| tracing::subscriber::set_global_default(Router).is_ok());
        if !routed {
            return tracing::subscriber::with_default(Keep(self.clone()), f);
        }
        let previous = CURRENT.with(|c| c.borrow_mut().replace(self.clone()));
        let _restore = Restore(previous);
        f()
    }

    fn keep(&self, event: &tracing::Event<'_>) {
        let mut fields = Fields(String::new());
        event.record(&mut fields);
        self.events.lock().unwrap().push(Captured {
            level: *event.metadata().level(),
            text: fields.0,
        });
    }
}

struct Fields(String);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write;
        let _ = write!(self.0, "{}={:?} ", field.name(), value);
    }
}

/// Subscriber methods every capturing subscriber here shares: no spans.
macro_rules! without_spans {
    () => {
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    };
}

/// The global default: every event goes to the capture of its thread.
struct Router;

impl tracing::Subscriber for Router {
    fn register_callsite(
        &self,
        _: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        // Whether an event is wanted depends on its thread: ask every time.
        tracing::subscriber::Interest::sometimes()
    }
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        CURRENT.with(|c| c.borrow().is_some())
    }
    fn event(&self, event: &tracing::Event<'_>) {
        let capture = CURRENT.with(|c| c.borrow().clone());
        if let Some(capture) = capture {
            capture.keep(event);
        }
    }
    without_spans!();
}

/// A scoped subscriber for one capture, when the router cannot be installed.
struct Keep(Capture);

impl tracing::Subscriber for Keep {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn event(&self, event: &tracing::Event<'_>) {
        self.0.keep(event);
    }
    without_spans!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_this_threads_events_and_not_other_threads() {
        let capture = Capture::default();
        capture.run(|| {
            tracing::warn!(n = 1, "here");
            std::thread::spawn(|| tracing::warn!(n = 2, "elsewhere"))
                .join()
                .unwrap();
        });
        tracing::warn!(n = 3, "after");
        let texts: Vec<_> = capture.events().into_iter().map(|c| c.text).collect();
        assert_eq!(texts, ["message=here n=1 "]);
    }

    #[test]
    fn a_call_site_first_reached_by_another_thread_is_still_captured() {
        fn log(n: u32) {
            tracing::warn!(n, "shared call site");
        }
        let capture = Capture::default();
        capture.run(|| {
            std::thread::spawn(|| log(0)).join().unwrap();
            log(1);
        });
        let texts: Vec<_> = capture.events().into_iter().map(|c| c.text).collect();
        assert_eq!(texts, ["message=shared call site n=1 "]);
    }
}
