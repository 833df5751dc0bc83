//! The process-wide export pipelines: agents whose settings are equal share
//! one pipeline — one export thread, one HTTP client, one request per export
//! carrying every agent.
//!
//! The flush thread of an agent hands over data in two ways, neither of which
//! waits for the export thread:
//! * metrics: after each batch and flush, its totals are copied into the agent's slot
//!   under a lock taken with `try_lock` (when the export thread is copying
//!   them out at that moment, the copy is left to the next call);
//! * events (logs): batches go through a channel, admitted against an atomic
//!   count of queued events; a batch that does not fit is refused whole.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use nixl_telemetry_abi::Event;

use crate::error::OtlpError;
use crate::settings::Settings;
use crate::stats::Counters;
use crate::transport::Transport;
use crate::worker;
use nixl_telemetry_metrics::Totals;

/// Events of one agent waiting to be sent as log records.
#[derive(Debug)]
pub(crate) struct EventBatch {
    pub(crate) agent: Arc<str>,
    pub(crate) events: Vec<Event>,
}

/// What the flush side tells the export thread.
#[derive(Debug)]
pub(crate) enum Message {
    /// Events to send as logs (already admitted to the queue count).
    Events(EventBatch),
    /// The last agent left: send what is left and stop.
    Shutdown,
}

/// One agent's place in a pipeline.
#[derive(Debug)]
pub(crate) struct AgentSlot {
    pub(crate) name: Arc<str>,
    /// Creation time, ns since the Unix epoch.
    pub(crate) start_time_ns: u64,
    /// The totals as last published by the flush thread.
    pub(crate) published: Mutex<Totals>,
    /// How many events those totals count; written under `published`'s lock.
    pub(crate) published_events: AtomicU64,
    /// Set once the exporter is gone: exported one last time, then removed.
    pub(crate) detached: AtomicBool,
}

/// One export pipeline.
#[derive(Debug)]
pub(crate) struct Pipeline {
    pub(crate) settings: Settings,
    pub(crate) agents: Mutex<Vec<Arc<AgentSlot>>>,
    pub(crate) counters: Counters,
    /// Events counted by the final totals of agents that left.
    pub(crate) retired_events: AtomicU64,
    sender: Mutex<Sender<Message>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// Locks `m`, going on with the data if a holder panicked (the data are
/// plain totals, valid at any point).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Every live pipeline of this process.
static PIPELINES: Mutex<Vec<Arc<Pipeline>>> = Mutex::new(Vec::new());

/// Nanoseconds since the Unix epoch now.
pub(crate) fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

impl Pipeline {
    /// A sender for an exporter's event batches.
    pub(crate) fn sender(&self) -> Sender<Message> {
        lock(&self.sender).clone()
    }
}

/// Adds agent `name` to the pipeline for `settings`, starting one if needed.
pub(crate) fn attach(
    name: &str,
    settings: &Settings,
) -> Result<(Arc<Pipeline>, Arc<AgentSlot>), OtlpError> {
    let mut pipelines = lock(&PIPELINES);
    let slot = |totals: Totals| {
        Arc::new(AgentSlot {
            name: name.into(),
            start_time_ns: now_ns(),
            published: Mutex::new(totals),
            published_events: AtomicU64::new(0),
            detached: AtomicBool::new(false),
        })
    };
    if let Some(pipeline) = pipelines.iter().find(|p| p.settings == *settings) {
        let mut agents = lock(&pipeline.agents);
        if agents
            .iter()
            .any(|a| &*a.name == name && !a.detached.load(Ordering::Acquire))
        {
            return Err(OtlpError::DuplicateAgent {
                agent: name.to_owned(),
                url: settings.metrics.url.clone(),
            });
        }
        let agent = slot(Totals::default());
        agents.push(Arc::clone(&agent));
        return Ok((Arc::clone(pipeline), agent));
    }
    let https = settings.metrics.url.starts_with("https:")
        || (settings.events && settings.logs.url.starts_with("https:"));
    let transport = Transport::new(https)?;
    let (sender, receiver): (Sender<Message>, Receiver<Message>) = mpsc::channel();
    let agent = slot(Totals::default());
    let pipeline = Arc::new(Pipeline {
        settings: settings.clone(),
        agents: Mutex::new(vec![Arc::clone(&agent)]),
        counters: Counters::default(),
        retired_events: AtomicU64::new(0),
        sender: Mutex::new(sender),
        thread: Mutex::new(None),
    });
    let for_thread = Arc::clone(&pipeline);
    let handle = std::thread::Builder::new()
        .name("nixl-otlp-export".to_owned())
        .spawn(move || worker::run(for_thread, receiver, transport))
        .map_err(OtlpError::Thread)?;
    *lock(&pipeline.thread) = Some(handle);
    pipelines.push(Arc::clone(&pipeline));
    Ok((pipeline, agent))
}

/// Removes `agent` (whose final totals are published) from `pipeline`. The
/// last agent of a pipeline stops it: its thread sends what is left (within
/// the export timeout) and is joined before this returns, so no thread of
/// this library outlives its last exporter, unless that takes longer than
/// the shutdown bound ([`Settings::shutdown`]): then it is left behind,
/// with a warning.
pub(crate) fn detach(pipeline: &Arc<Pipeline>, agent: &AgentSlot) {
    agent.detached.store(true, Ordering::Release);
    let handle = {
        let mut pipelines = lock(&PIPELINES);
        let live = lock(&pipeline.agents)
            .iter()
            .any(|a| !a.detached.load(Ordering::Acquire));
        if live {
            return;
        }
        pipelines.retain(|p| !Arc::ptr_eq(p, pipeline));
        let _ = lock(&pipeline.sender).send(Message::Shutdown);
        lock(&pipeline.thread).take()
    };
    // Waited for within the shutdown bound: a collector that never answers
    // must not hold up the host's exit.
    let Some(handle) = handle else { return };
    let until = std::time::Instant::now() + pipeline.settings.shutdown;
    while !handle.is_finished() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    if !handle.is_finished() {
        let queued = pipeline.counters.events_queued.load(Ordering::Relaxed);
        tracing::warn!(
            "OTLP: the final export to {} did not finish within {} ms ({}); abandoned: the last \
             metrics and {queued} queued events",
            pipeline.settings.metrics.url,
            pipeline.settings.shutdown.as_millis(),
            crate::settings::ENV_SHUTDOWN_TIMEOUT
        );
    } else if handle.join().is_err() {
        tracing::error!("the OTLP export thread panicked; what it held is lost");
    }
    report_stop(pipeline);
}

/// Events of the pipelines stopped so far: accepted, in delivered metrics.
static STOPPED: Mutex<(u64, u64)> = Mutex::new((0, 0));

/// Says what a stopped pipeline delivered (a warning when it did not deliver
/// everything) and adds its figures to the process's.
fn report_stop(pipeline: &Pipeline) {
    let stats = pipeline.counters.snapshot();
    let accepted = stats.events_accepted;
    let delivered = stats.events_in_delivered_metrics.min(accepted);
    {
        let mut stopped = lock(&STOPPED);
        stopped.0 += accepted;
        stopped.1 += delivered;
    }
    let url = &pipeline.settings.metrics.url;
    let undelivered = accepted - delivered;
    let logs_lost = stats.events_lost();
    if undelivered > 0 || logs_lost > 0 || stats.metric_requests_dropped > 0 {
        tracing::warn!(
            "OTLP exporter stopped: {delivered} of {accepted} events reached the collector at {url} \
             in metrics, {undelivered} did not; {} metric requests delivered, {} given up{}",
            stats.metric_requests_delivered,
            stats.metric_requests_dropped,
            if pipeline.settings.events {
                format!(
                    "; as log records {} events delivered, {} lost",
                    stats.events_exported, logs_lost
                )
            } else {
                String::new()
            }
        );
    } else {
        tracing::info!(
            "OTLP exporter stopped: all {accepted} events reached the collector at {url}"
        );
    }
}

/// What became of the events every exporter of this process accepted: the
/// stopped pipelines' figures (what did not reach the collector is
/// undelivered) plus the live ones' (what has not yet is on its way).
pub(crate) fn delivery() -> (u64, u64, u64) {
    let (mut accepted, mut delivered) = *lock(&STOPPED);
    let undelivered = accepted - delivered;
    for pipeline in lock(&PIPELINES).iter() {
        let stats = pipeline.counters.snapshot();
        accepted += stats.events_accepted;
        delivered += stats.events_in_delivered_metrics.min(stats.events_accepted);
    }
    (accepted, delivered, undelivered)
}
