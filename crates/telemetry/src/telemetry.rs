//! The agent-facing handle.

use std::sync::Arc;
use std::thread::JoinHandle;

use nixl_telemetry_abi::event::encode_name;
use nixl_telemetry_abi::{Category, Event, EVENT_NAME_CAPACITY};

use crate::clock;
use crate::collector::Collector;
use crate::config::{
    check_agent_name, check_buffer_size, check_run_interval, ExporterChoice, TelemetryConfig,
};
use crate::error::TelemetryError;
use crate::exporter::{self, Exporter};
use crate::filter::MetricFilter;
use crate::staging::{QueueKey, When};
use crate::stats::TelemetryStats;

pub use nixl_telemetry_abi::names::{
    MEMORY_DEREGISTERED, MEMORY_REGISTERED, RX_BYTES, RX_REQUESTS, TX_BYTES, TX_REQUESTS,
    XFER_POST_TIME, XFER_TIME,
};

/// The direction of a completed transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Data left this agent (NIXL WRITE): `agent_tx_*`.
    Write,
    /// Data came to this agent (NIXL READ): `agent_rx_*`.
    Read,
}

struct Shared {
    agent: String,
    collector: Collector,
    filter: Option<MetricFilter>,
}

/// A pre-resolved (category, name) pair: its [`record`](EventHandle::record)
/// takes the cheap clock and writes one event into the calling thread's
/// staging queue — no hashing, no allocation, no lock, no system call.
///
/// A handle of disabled telemetry, or of a name the allowlist filters out,
/// records nothing at the cost of one predictable branch.
///
/// A handle is cache-line aligned (64 bytes, its size too): wherever it is
/// kept, a record reads it from one line. A handle that straddled two lines
/// cost about 1.5 ns more a record (`crates/bench/results/suite.md`).
#[derive(Clone)]
#[repr(align(64))]
pub struct EventHandle {
    shared: Option<Arc<Shared>>,
    /// The key of `shared`'s staging queues (meaningless when `shared` is
    /// `None`): read from the handle, the queue lookup does not wait for a
    /// load through `shared`.
    key: QueueKey,
    category: Category,
    name: [u8; EVENT_NAME_CAPACITY],
}

impl EventHandle {
    /// A handle that records nothing (usable in a `const` or `static`).
    ///
    /// ```
    /// use nixl_telemetry::{Category, EventHandle};
    ///
    /// static NOT_YET: EventHandle = EventHandle::noop(Category::CUSTOM, "not_yet_wired");
    /// NOT_YET.record(1);
    /// assert!(!NOT_YET.is_enabled());
    /// ```
    pub const fn noop(category: Category, name: &str) -> EventHandle {
        EventHandle {
            shared: None,
            key: QueueKey::NONE,
            category,
            name: encode_name(name),
        }
    }

    /// Records `value` now.
    #[inline(always)]
    pub fn record(&self, value: u64) {
        if let Some(shared) = &self.shared {
            shared.collector.staging.push_event_keyed(
                self.key,
                When::Now,
                self.category,
                || self.name,
                value,
            );
        }
    }

    /// Records `value` with a timestamp the caller took (µs since the epoch).
    #[inline(always)]
    pub fn record_at(&self, timestamp_us: u64, value: u64) {
        if let Some(shared) = &self.shared {
            shared.collector.staging.push_event_keyed(
                self.key,
                When::At(timestamp_us),
                self.category,
                || self.name,
                value,
            );
        }
    }

    /// Whether records through this handle reach the collector.
    pub fn is_enabled(&self) -> bool {
        self.shared.is_some()
    }
}

impl std::fmt::Debug for EventHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ev = Event::with_encoded_name(0, self.category, self.name, 0);
        f.debug_struct("EventHandle")
            .field("category", &self.category)
            .field("name", &ev.name())
            .field("enabled", &self.is_enabled())
            .finish()
    }
}

struct BuiltIn {
    memory_registered: EventHandle,
    memory_deregistered: EventHandle,
    tx_bytes: EventHandle,
    rx_bytes: EventHandle,
    tx_requests: EventHandle,
    rx_requests: EventHandle,
    xfer_time: EventHandle,
    post_time: EventHandle,
}

/// Telemetry of one agent: records events and flushes them to one exporter.
///
/// Create it with [`Telemetry::from_env`] (as a NIXL host does) or
/// [`Telemetry::builder`]. Dropping it flushes everything still staged, stops
/// the flush thread and closes the exporter.
///
/// ```
/// use nixl_telemetry::{Category, Direction, Telemetry};
///
/// let dir = tempfile::tempdir().unwrap();
/// let telemetry = Telemetry::builder("initiator")
///     .ring_directory(dir.path())
///     .build()
///     .unwrap();
/// telemetry.memory_registered(64 << 20);
/// telemetry.transfer_completed(120, Direction::Write, 4096);
/// let writes = telemetry.handle(Category::BACKEND, "ucx_rdma_writes");
/// writes.record(1);
/// telemetry.flush();
/// assert_eq!(telemetry.stats().delivered, 5);
/// ```
#[must_use = "dropping the telemetry flushes what is staged and stops its flush thread"]
pub struct Telemetry {
    shared: Option<Arc<Shared>>,
    builtin: BuiltIn,
    thread: Option<JoinHandle<()>>,
}

impl Telemetry {
    /// Telemetry for `agent` configured from the `NIXL_TELEMETRY_*` variables.
    pub fn from_env(agent: &str) -> Result<Telemetry, TelemetryError> {
        Telemetry::new(agent, TelemetryConfig::from_env()?)
    }

    /// A builder starting from [`TelemetryConfig::default`] (enabled, collect only).
    pub fn builder(agent: &str) -> TelemetryBuilder {
        TelemetryBuilder {
            agent: agent.to_owned(),
            config: TelemetryConfig::default(),
        }
    }

    /// Telemetry for `agent` with `config`.
    pub fn new(agent: &str, config: TelemetryConfig) -> Result<Telemetry, TelemetryError> {
        check_agent_name(agent)?;
        check_buffer_size("buffer_size", config.buffer_size)?;
        check_run_interval("run_interval", config.run_interval)?;
        if !config.enabled {
            return Ok(Telemetry::disabled());
        }
        let exporter = exporter::create(&config, agent)?;
        Telemetry::with_exporter_box(agent, config, exporter)
    }

    /// Telemetry for `agent` sending to an exporter built by the caller (the
    /// configured exporter choice is ignored).
    pub fn with_exporter(
        agent: &str,
        config: TelemetryConfig,
        exporter: Box<dyn Exporter>,
    ) -> Result<Telemetry, TelemetryError> {
        check_agent_name(agent)?;
        check_buffer_size("buffer_size", config.buffer_size)?;
        check_run_interval("run_interval", config.run_interval)?;
        if !config.enabled {
            return Ok(Telemetry::disabled());
        }
        Telemetry::with_exporter_box(agent, config, Some(exporter))
    }

    fn with_exporter_box(
        agent: &str,
        config: TelemetryConfig,
        exporter: Option<Box<dyn Exporter>>,
    ) -> Result<Telemetry, TelemetryError> {
        clock::init();
        crate::fork::install();
        let has_exporter = exporter.is_some();
        let shared = Arc::new(Shared {
            agent: agent.to_owned(),
            collector: Collector::new(config.buffer_size, exporter),
            filter: config.enabled_metrics.clone(),
        });
        let thread = if has_exporter {
            let worker = Arc::clone(&shared);
            let interval = config.run_interval;
            Some(
                std::thread::Builder::new()
                    .name(format!("nixl-telemetry-{}", truncate_for_thread(agent)))
                    .spawn(move || worker.collector.run(interval))
                    .map_err(TelemetryError::Thread)?,
            )
        } else {
            None
        };
        let shared = Some(shared);
        Ok(Telemetry {
            builtin: BuiltIn::resolve(&shared),
            shared,
            thread,
        })
    }

    /// Telemetry that records nothing; every call costs one branch.
    pub fn disabled() -> Telemetry {
        Telemetry {
            builtin: BuiltIn::resolve(&None),
            shared: None,
            thread: None,
        }
    }

    /// Whether telemetry is enabled.
    pub fn is_enabled(&self) -> bool {
        self.shared.is_some()
    }

    /// The agent's name (empty when disabled).
    pub fn agent(&self) -> &str {
        self.shared.as_ref().map_or("", |s| s.agent.as_str())
    }

    /// A pre-resolved handle for the hot path. The allowlist is applied now, once.
    pub fn handle(&self, category: Category, name: &str) -> EventHandle {
        resolve(&self.shared, category, name)
    }

    /// Records one event, applying the allowlist to `name` (cut to 31 bytes).
    #[inline]
    pub fn record(&self, category: Category, name: &str, value: u64) {
        if let Some(shared) = &self.shared {
            if shared.filter.as_ref().is_none_or(|f| f.allows(name)) {
                shared.collector.staging.push_event(
                    When::Now,
                    category,
                    || encode_name(name),
                    value,
                );
            }
        }
    }

    /// `agent_memory_registered`: `bytes` were registered.
    #[inline]
    pub fn memory_registered(&self, bytes: u64) {
        self.builtin.memory_registered.record(bytes);
    }

    /// `agent_memory_deregistered`: `bytes` were deregistered.
    #[inline]
    pub fn memory_deregistered(&self, bytes: u64) {
        self.builtin.memory_deregistered.record(bytes);
    }

    /// One completed transfer: `agent_xfer_time` (µs), `agent_{tx|rx}_bytes` and
    /// `agent_{tx|rx}_requests_num` (= 1), all with one timestamp.
    #[inline]
    pub fn transfer_completed(&self, duration_us: u64, direction: Direction, bytes: u64) {
        self.transfer(When::Now, duration_us, direction, bytes);
    }

    /// [`Telemetry::transfer_completed`] with a completion timestamp the caller
    /// already took (µs since the epoch, e.g. from [`Telemetry::now_us`] when it
    /// timed the transfer): no clock is read.
    #[inline]
    pub fn transfer_completed_at(
        &self,
        timestamp_us: u64,
        duration_us: u64,
        direction: Direction,
        bytes: u64,
    ) {
        self.transfer(When::At(timestamp_us), duration_us, direction, bytes);
    }

    #[inline(always)]
    fn transfer(&self, when: When, duration_us: u64, direction: Direction, bytes: u64) {
        let (bytes_handle, requests_handle) = match direction {
            Direction::Write => (&self.builtin.tx_bytes, &self.builtin.tx_requests),
            Direction::Read => (&self.builtin.rx_bytes, &self.builtin.rx_requests),
        };
        let time = &self.builtin.xfer_time;
        match (&time.shared, &bytes_handle.shared, &requests_handle.shared) {
            // The common case: all three pass the allowlist; the transfer goes
            // into one slot that the flush side expands to the three events.
            (Some(shared), Some(_), Some(_)) => {
                shared
                    .collector
                    .staging
                    .push_transfer(when, duration_us, direction, bytes)
            }
            // Disabled: nothing to record, no clock to read.
            (None, None, None) => {}
            // The allowlist keeps some of the three: one timestamp for those.
            _ => {
                let ts = match when {
                    When::At(ts) => ts,
                    When::Now => clock::now_us(),
                };
                time.record_at(ts, duration_us);
                bytes_handle.record_at(ts, bytes);
                requests_handle.record_at(ts, 1);
            }
        }
    }

    /// `agent_xfer_post_time`: posting a transfer took `us` microseconds.
    #[inline]
    pub fn post_time(&self, us: u64) {
        self.builtin.post_time.record(us);
    }

    /// [`Telemetry::post_time`] with a timestamp the caller already took.
    #[inline]
    pub fn post_time_at(&self, timestamp_us: u64, us: u64) {
        self.builtin.post_time.record_at(timestamp_us, us);
    }

    /// The clock telemetry stamps events with: wall-clock µs since the Unix
    /// epoch, cheap (see [`crate::clock`]). Callers that time operations with it
    /// can hand the readings to the `*_at` methods and spare telemetry a clock read.
    #[inline]
    pub fn now_us() -> u64 {
        clock::now_us()
    }

    /// An error: name = the status string (e.g. `NIXL_ERR_BACKEND`), value 1.
    #[inline]
    pub fn error(&self, status: &str) {
        self.record(Category::ERROR, status, 1);
    }

    /// A backend event.
    #[inline]
    pub fn backend_event(&self, name: &str, value: u64) {
        self.record(Category::BACKEND, name, value);
    }

    /// A connection event.
    #[inline]
    pub fn connection_event(&self, name: &str, value: u64) {
        self.record(Category::CONNECTION, name, value);
    }

    /// Flushes everything staged so far to the exporter, now, on this thread.
    pub fn flush(&self) {
        if let Some(shared) = &self.shared {
            shared.collector.flush();
        }
    }

    /// Collect-only telemetry (no exporter): moves the staged events into `out`
    /// and returns how many. With an exporter, events go there and this returns 0.
    pub fn drain(&self, out: &mut Vec<Event>) -> usize {
        self.shared.as_ref().map_or(0, |s| s.collector.drain(out))
    }

    /// Whether an exporter receives the events (false when collecting only).
    pub fn has_exporter(&self) -> bool {
        self.shared
            .as_ref()
            .is_some_and(|s| s.collector.has_exporter())
    }

    /// The accounting so far.
    pub fn stats(&self) -> TelemetryStats {
        self.shared
            .as_ref()
            .map(|s| s.collector.stats())
            .unwrap_or_default()
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        let Some(shared) = self.shared.take() else {
            return;
        };
        shared.collector.request_stop();
        if let Some(thread) = self.thread.take() {
            if thread.join().is_err() {
                tracing::error!(agent = %shared.agent, "telemetry flush thread panicked");
            }
        }
        shared.collector.close();
    }
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("agent", &self.agent())
            .field("enabled", &self.is_enabled())
            .finish()
    }
}

/// Thread names are limited to 15 bytes on Linux: keep the agent's first characters.
fn truncate_for_thread(agent: &str) -> String {
    agent.chars().take(8).collect()
}

fn resolve(shared: &Option<Arc<Shared>>, category: Category, name: &str) -> EventHandle {
    let shared = shared
        .as_ref()
        .filter(|s| s.filter.as_ref().is_none_or(|f| f.allows(name)))
        .cloned();
    EventHandle {
        key: shared
            .as_ref()
            .map_or(QueueKey::NONE, |s| s.collector.staging.key()),
        shared,
        category,
        name: encode_name(name),
    }
}

impl BuiltIn {
    fn resolve(shared: &Option<Arc<Shared>>) -> BuiltIn {
        BuiltIn {
            memory_registered: resolve(shared, Category::MEMORY, MEMORY_REGISTERED),
            memory_deregistered: resolve(shared, Category::MEMORY, MEMORY_DEREGISTERED),
            tx_bytes: resolve(shared, Category::TRANSFER, TX_BYTES),
            rx_bytes: resolve(shared, Category::TRANSFER, RX_BYTES),
            tx_requests: resolve(shared, Category::TRANSFER, TX_REQUESTS),
            rx_requests: resolve(shared, Category::TRANSFER, RX_REQUESTS),
            xfer_time: resolve(shared, Category::PERFORMANCE, XFER_TIME),
            post_time: resolve(shared, Category::PERFORMANCE, XFER_POST_TIME),
        }
    }
}

/// Settings from code; every setter validates and returns an error naming the
/// input, the value and what is accepted.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct TelemetryBuilder {
    agent: String,
    config: TelemetryConfig,
}

impl TelemetryBuilder {
    /// Starts from a full configuration (e.g. [`TelemetryConfig::from_env`]).
    pub fn config(mut self, config: TelemetryConfig) -> Self {
        self.config = config;
        self
    }

    /// Turns telemetry on or off.
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.config.enabled = enabled;
        self
    }

    /// Events per ring and per staging queue: a power of two ≥ 2.
    pub fn buffer_size(mut self, size: usize) -> Result<Self, TelemetryError> {
        self.config.buffer_size = check_buffer_size("buffer_size", size)?;
        Ok(self)
    }

    /// Flush interval, at least 1 ms.
    pub fn run_interval(mut self, interval: std::time::Duration) -> Result<Self, TelemetryError> {
        self.config.run_interval = check_run_interval("run_interval", interval)?;
        Ok(self)
    }

    /// Export to the built-in ring in `dir`.
    pub fn ring_directory(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.config.exporter = ExporterChoice::Buffer { dir: dir.into() };
        self
    }

    /// Choose the exporter.
    pub fn exporter(mut self, choice: ExporterChoice) -> Self {
        self.config.exporter = choice;
        self
    }

    /// The output path handed to a plug-in exporter.
    pub fn output_path(mut self, path: impl Into<String>) -> Self {
        self.config.output_path = Some(path.into());
        self
    }

    /// Record only events whose names match one of these globs.
    pub fn enabled_metrics(mut self, globs: &str) -> Self {
        self.config.enabled_metrics = MetricFilter::parse(globs);
        self
    }

    /// The configuration as built so far.
    pub fn as_config(&self) -> &TelemetryConfig {
        &self.config
    }

    /// Creates the telemetry.
    pub fn build(self) -> Result<Telemetry, TelemetryError> {
        Telemetry::new(&self.agent, self.config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_sits_on_one_cache_line_wherever_it_is_kept() {
        assert_eq!(std::mem::align_of::<EventHandle>(), 64);
        assert_eq!(std::mem::size_of::<EventHandle>(), 64);
        let on_stack = EventHandle::noop(Category::CUSTOM, "on_stack");
        let in_vec = vec![on_stack.clone(); 3];
        let boxed = Box::new(on_stack.clone());
        let addresses = [&on_stack as *const EventHandle, &*boxed]
            .into_iter()
            .chain(in_vec.iter().map(|h| h as *const EventHandle));
        for address in addresses {
            assert_eq!(address as usize % 64, 0, "{address:?}");
        }
    }
}
