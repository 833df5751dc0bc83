//! A plug-in's log messages, sent to the host's log.
//!
//! A plug-in built as a `cdylib` carries its own copy of `tracing`, with no
//! subscriber of its own: without this module, every warning it logs (a
//! collector that refuses its requests, say) goes nowhere. [`install`]
//! (called by [`export_plugin!`](crate::export_plugin)'s init) makes
//! [`Forwarder`] the plug-in's subscriber. It turns each event of level INFO
//! or more severe into one line of text and hands it
//!
//! * to the host's callback, when the host gave one through
//!   `nixl_telemetry_exporter_set_log` ([`set_log`]);
//! * else to stderr, as `nixl-telemetry plug-in <name>: WARN: <message>`
//!   (a host built before the callback existed never gives one).
//!
//! Each place in the code that logs (each callsite) passes at most
//! [`BURST`] messages every [`WINDOW`]; the first message after a window in
//! which some were held back says how many. [`LogRate`] is that rule, also
//! used by hosts on what any plug-in sends them.

use core::ffi::c_void;
use std::collections::HashMap;
use std::ffi::CString;
use std::fmt::Write as _;
use std::hash::Hash;
use std::io::Write as _;
use std::sync::{Mutex, OnceLock, PoisonError, RwLock};
use std::time::{Duration, Instant};

use tracing_core::callsite::Identifier;
use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::{Level, LevelFilter, Metadata, Subscriber};

use crate::c_abi::{LogFn, LOG_DEBUG, LOG_ERROR, LOG_INFO, LOG_TRACE, LOG_WARN};

/// How long a rate-limit window lasts.
pub const WINDOW: Duration = Duration::from_secs(10);
/// The most messages of one callsite passed in one [`WINDOW`].
pub const BURST: u32 = 5;
/// The most callsites tracked; later ones share one budget.
const MAX_KEYS: usize = 256;

/// What [`LogRate::check`] decided about one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateVerdict {
    /// Pass it; `held_back` messages of the same key were not passed in the
    /// window before (say so with it).
    Pass {
        /// Messages held back in the previous window.
        held_back: u64,
    },
    /// Hold it back (it is counted).
    HoldBack,
}

#[derive(Debug, Clone, Copy)]
struct KeyState {
    window_start: Instant,
    passed: u32,
    held_back: u64,
}

/// At most `burst` messages per key every `window`; the rest are counted and
/// the count is reported with the first message passed after its window.
#[derive(Debug)]
pub struct LogRate<K> {
    window: Duration,
    burst: u32,
    keys: HashMap<Option<K>, KeyState>,
}

impl<K: Hash + Eq + Clone> LogRate<K> {
    /// A limit of `burst` messages per key every `window`.
    pub fn new(window: Duration, burst: u32) -> LogRate<K> {
        LogRate {
            window,
            burst,
            keys: HashMap::new(),
        }
    }

    /// Decides about one message of `key` at `now`.
    pub fn check(&mut self, key: K, now: Instant) -> RateVerdict {
        let key = if self.keys.len() >= MAX_KEYS && !self.keys.contains_key(&Some(key.clone())) {
            None
        } else {
            Some(key)
        };
        let state = self.keys.entry(key).or_insert(KeyState {
            window_start: now,
            passed: 0,
            held_back: 0,
        });
        let mut carried = 0;
        if now.saturating_duration_since(state.window_start) >= self.window {
            carried = state.held_back;
            *state = KeyState {
                window_start: now,
                passed: 0,
                held_back: 0,
            };
        }
        if state.passed < self.burst {
            state.passed += 1;
            RateVerdict::Pass { held_back: carried }
        } else {
            state.held_back += 1;
            state.held_back += carried;
            RateVerdict::HoldBack
        }
    }
}

/// The host's callback and its context.
#[derive(Clone, Copy)]
struct HostLog {
    log: LogFn,
    context: usize,
}

/// The callback the host gave, if any. Read-locked while it is called, so
/// that [`set_log`] returns only once no call of the old one is under way.
static HOST_LOG: RwLock<Option<HostLog>> = RwLock::new(None);
/// The plug-in's name, for lines written to stderr.
static PLUGIN_NAME: OnceLock<&'static str> = OnceLock::new();
/// The rate limit of every message of this plug-in, per callsite.
static RATE: Mutex<Option<LogRate<Identifier>>> = Mutex::new(None);

/// `nixl_telemetry_exporter_set_log`: keeps the host's callback (or forgets
/// it, `log` NULL). Returns once no call of the previous callback is under
/// way. Used by [`export_plugin!`](crate::export_plugin).
///
/// # Safety
/// `log`, when not NULL, must stay callable with `context` from any thread
/// until `set_log` is called again; see [`crate::c_abi::SetLogFn`].
pub unsafe extern "C" fn set_log(log: Option<LogFn>, context: *mut c_void) {
    crate::rust_plugin::guard(
        || (),
        || {
            let mut host = HOST_LOG.write().unwrap_or_else(PoisonError::into_inner);
            *host = log.map(|log| HostLog {
                log,
                context: context as usize,
            });
        },
    )
}

/// Names the plug-in in the lines written to stderr.
pub fn set_plugin_name(plugin_name: &'static str) {
    let _ = PLUGIN_NAME.set(plugin_name);
}

/// Frees what the rate limit holds (called by the fini function
/// [`export_plugin!`](crate::export_plugin) defines, before the library may
/// be unloaded).
pub fn release() {
    *RATE.lock().unwrap_or_else(PoisonError::into_inner) = None;
}

/// Makes [`Forwarder`] the subscriber of this copy of `tracing` (once; when
/// one is already set, as in a program that links the plug-in's code
/// directly, that one stays). Called by the init function
/// [`export_plugin!`](crate::export_plugin) defines, for a plug-in whose
/// [`RustPluginExporter::LOGS_WITH_TRACING`](crate::rust_plugin::RustPluginExporter::LOGS_WITH_TRACING)
/// is true. `tracing-core` never frees a global subscriber: a few bytes stay
/// behind when the library is unloaded.
pub fn install(plugin_name: &'static str) {
    set_plugin_name(plugin_name);
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ =
            tracing_core::dispatcher::set_global_default(tracing_core::Dispatch::new(Forwarder));
    });
}

/// The ABI's number for `level`.
pub fn level_number(level: Level) -> i32 {
    match level {
        Level::ERROR => LOG_ERROR,
        Level::WARN => LOG_WARN,
        Level::INFO => LOG_INFO,
        Level::DEBUG => LOG_DEBUG,
        _ => LOG_TRACE,
    }
}

/// The level name of an ABI level number (other numbers are WARN).
pub fn level_name(level: i32) -> &'static str {
    match level {
        LOG_ERROR => "ERROR",
        LOG_INFO => "INFO",
        LOG_DEBUG => "DEBUG",
        LOG_TRACE => "TRACE",
        _ => "WARN",
    }
}

/// Sends one message to the host's callback, or to stderr without one.
/// Not rate-limited (the subscriber limits before calling it).
pub fn deliver(level: i32, message: &str) {
    let host = HOST_LOG.read().unwrap_or_else(PoisonError::into_inner);
    match *host {
        Some(HostLog { log, context }) => {
            let text = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
            // SAFETY: the host gave this callback for any thread and keeps it
            // callable until set_log replaces it, which waits for this read
            // lock; `text` lives across the call.
            unsafe { log(context as *mut c_void, level, text.as_ptr()) };
        }
        None => {
            let name = PLUGIN_NAME.get().copied().unwrap_or("?");
            let line = format!(
                "nixl-telemetry plug-in {name}: {}: {message}\n",
                level_name(level)
            );
            // One write of the whole line, so that lines of threads do not mix.
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
        }
    }
}

/// The subscriber [`install`] sets in a plug-in: events of level INFO and
/// above, rate-limited per callsite, to the host's log.
#[derive(Debug, Clone, Copy, Default)]
pub struct Forwarder;

/// Collects an event's message and fields as one line.
#[derive(Default)]
struct Line {
    message: String,
    fields: String,
}

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let sep = if self.fields.is_empty() { "" } else { ", " };
            let _ = write!(self.fields, "{sep}{}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            let sep = if self.fields.is_empty() { "" } else { ", " };
            let _ = write!(self.fields, "{sep}{}={value}", field.name());
        }
    }
}

/// `text` on one line: control characters escaped (`\n`, `\u{1b}`…).
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// The text of a held-back count, appended to the message passed after it.
pub fn held_back_note(held_back: u64) -> String {
    format!(
        " ({held_back} more like this in the {} s before were not shown)",
        WINDOW.as_secs()
    )
}

impl Subscriber for Forwarder {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        *metadata.level() <= Level::INFO
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(LevelFilter::INFO)
    }

    fn new_span(&self, _span: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _span: &Id, _values: &Record<'_>) {}

    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}

    fn event(&self, event: &tracing_core::Event<'_>) {
        let metadata = event.metadata();
        let verdict = {
            let mut rate = RATE.lock().unwrap_or_else(PoisonError::into_inner);
            rate.get_or_insert_with(|| LogRate::new(WINDOW, BURST))
                .check(metadata.callsite(), Instant::now())
        };
        let RateVerdict::Pass { held_back } = verdict else {
            return;
        };
        let mut line = Line::default();
        event.record(&mut line);
        let mut text = line.message;
        if !line.fields.is_empty() {
            let _ = write!(text, " ({})", line.fields);
        }
        if held_back > 0 {
            text.push_str(&held_back_note(held_back));
        }
        deliver(level_number(*metadata.level()), &one_line(&text));
    }

    fn enter(&self, _span: &Id) {}

    fn exit(&self, _span: &Id) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_passes_a_burst_per_window_and_the_next_window_says_how_many_were_held() {
        let mut rate = LogRate::new(Duration::from_secs(10), 3);
        let t0 = Instant::now();
        for i in 0..3 {
            assert_eq!(
                rate.check("a", t0 + Duration::from_millis(i)),
                RateVerdict::Pass { held_back: 0 }
            );
        }
        for i in 0..7 {
            assert_eq!(
                rate.check("a", t0 + Duration::from_secs(1 + i)),
                RateVerdict::HoldBack
            );
        }
        // Another key has its own budget.
        assert_eq!(rate.check("b", t0), RateVerdict::Pass { held_back: 0 });
        assert_eq!(
            rate.check("a", t0 + Duration::from_secs(10)),
            RateVerdict::Pass { held_back: 7 }
        );
        assert_eq!(
            rate.check("a", t0 + Duration::from_secs(11)),
            RateVerdict::Pass { held_back: 0 }
        );
    }

    #[test]
    fn keys_past_the_bound_share_one_budget() {
        let mut rate = LogRate::new(Duration::from_secs(10), 1);
        let t0 = Instant::now();
        for k in 0..MAX_KEYS {
            assert_eq!(rate.check(k, t0), RateVerdict::Pass { held_back: 0 });
        }
        assert_eq!(rate.check(MAX_KEYS, t0), RateVerdict::Pass { held_back: 0 });
        assert_eq!(rate.check(MAX_KEYS + 1, t0), RateVerdict::HoldBack);
        assert!(rate.keys.len() <= MAX_KEYS + 1);
    }

    #[test]
    fn lines_have_no_control_characters() {
        assert_eq!(one_line("a\nb\r\u{1b}[2J\tc"), "a\\nb\\r\\u{1b}[2J\\tc");
    }
}
