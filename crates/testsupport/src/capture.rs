//! A `tracing` subscriber that keeps every event, for tests of what is logged.

use std::sync::Mutex;

/// One `tracing` event seen by [`Capture`].
#[derive(Debug, Clone)]
pub struct Captured {
    /// Its level.
    pub level: tracing::Level,
    /// Its fields as `name=value` pairs separated by spaces, message included.
    pub text: String,
}

/// A `tracing` subscriber that keeps every event, for tests of what is logged.
#[derive(Clone, Default)]
pub struct Capture {
    events: std::sync::Arc<Mutex<Vec<Captured>>>,
}

impl Capture {
    /// The events so far.
    pub fn events(&self) -> Vec<Captured> {
        self.events.lock().unwrap().clone()
    }

    /// Runs `f` with this subscriber as the current thread's default.
    pub fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        tracing::subscriber::with_default(self.clone(), f)
    }
}

struct Fields(String);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write;
        let _ = write!(self.0, "{}={:?} ", field.name(), value);
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = Fields(String::new());
        event.record(&mut fields);
        self.events.lock().unwrap().push(Captured {
            level: *event.metadata().level(),
            text: fields.0,
        });
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
