//! The export thread of a pipeline: a metrics request every export interval,
//! log requests as events arrive, retries with exponential backoff and
//! jitter, and a last attempt at shutdown.
//!
//! Metrics are cumulative, so at most one metrics request is ever pending: a
//! newer one replaces an undelivered one (which is counted as superseded, not
//! lost — the newer carries every total). Log requests are retried until they
//! are delivered or refused for good; meanwhile the bounded events queue
//! fills and further batches are refused at hand-off, where the host counts
//! them. Nothing is buffered without bound.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nixl_telemetry_abi::Event;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceResponse;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceResponse;
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message as _;

use crate::encode::{self, AgentView};
use crate::pipeline::{lock, now_ns, EventBatch, Message, Pipeline};
use crate::settings::SignalSettings;
use crate::stats::{bump, Counters};
use crate::transport::{compress, Outcome, Transport};
use nixl_telemetry_metrics::Totals;

/// The most log records in one request.
pub const MAX_LOG_RECORDS_PER_REQUEST: usize = 4096;

/// Exponential backoff with ±50% jitter.
#[derive(Debug)]
pub(crate) struct Backoff {
    initial: Duration,
    max: Duration,
    current: Option<Duration>,
    rng: u64,
}

impl Backoff {
    pub(crate) fn new(initial: Duration, max: Duration, seed: u64) -> Backoff {
        Backoff {
            initial,
            max: max.max(initial),
            current: None,
            // One splitmix64 step, so that nearby seeds start far apart.
            rng: {
                let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                (z ^ (z >> 31)) | 1
            },
        }
    }

    /// The delay before the next attempt: the initial delay after the first
    /// failure, doubled after each further one up to the maximum, each time
    /// multiplied by a random factor in [0.5, 1.5).
    pub(crate) fn next_delay(&mut self) -> Duration {
        let base = match self.current {
            None => self.initial,
            Some(c) => (c * 2).min(self.max),
        };
        self.current = Some(base);
        // xorshift64*: jitter needs no cryptographic quality.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11;
        let unit = r as f64 / (1u64 << 53) as f64;
        base.mul_f64(0.5 + unit)
    }

    /// After a success.
    pub(crate) fn reset(&mut self) {
        self.current = None;
    }
}

/// An encoded request waiting to be (re)sent.
#[derive(Debug)]
struct Pending {
    body: Vec<u8>,
    /// Log records in it (0 for metrics).
    events: u64,
    /// Events the totals in it count (0 for logs).
    covers: u64,
}

/// One signal's sending state.
#[derive(Debug)]
struct SignalState {
    pending: Option<Pending>,
    not_before: Instant,
    /// Until when the collector asked us (`Retry-After`) not to send.
    server_wait: Option<Instant>,
    backoff: Backoff,
    failing: bool,
}

impl SignalState {
    fn new(pipeline: &Pipeline, salt: u64) -> SignalState {
        SignalState {
            pending: None,
            not_before: Instant::now(),
            server_wait: None,
            backoff: Backoff::new(
                pipeline.settings.retry_initial,
                pipeline.settings.retry_max,
                now_ns() ^ (u64::from(std::process::id()) << 32) ^ salt,
            ),
            failing: false,
        }
    }
}

/// Which signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Signal {
    Metrics,
    Logs,
}

struct Worker {
    pipeline: Arc<Pipeline>,
    transport: Transport,
    resource: Resource,
    process_start_ns: u64,
    next_metrics: Instant,
    metrics: SignalState,
    logs: SignalState,
    queue: VecDeque<EventBatch>,
    raw: Vec<u8>,
}

/// The thread's body.
pub(crate) fn run(pipeline: Arc<Pipeline>, receiver: Receiver<Message>, transport: Transport) {
    let resource = encode::resource(
        &pipeline.settings.resource,
        nixl_telemetry_metrics::hostname(),
        std::process::id(),
    );
    let mut w = Worker {
        next_metrics: Instant::now() + pipeline.settings.export_interval,
        metrics: SignalState::new(&pipeline, 1),
        logs: SignalState::new(&pipeline, 2),
        pipeline,
        transport,
        resource,
        process_start_ns: now_ns(),
        queue: VecDeque::new(),
        raw: Vec::new(),
    };
    loop {
        let wait = w.next_deadline().saturating_duration_since(Instant::now());
        let mut shutdown = false;
        match receiver.recv_timeout(wait) {
            Ok(Message::Events(batch)) => w.queue.push_back(batch),
            Ok(Message::Shutdown) | Err(RecvTimeoutError::Disconnected) => shutdown = true,
            Err(RecvTimeoutError::Timeout) => {}
        }
        while let Ok(message) = receiver.try_recv() {
            match message {
                Message::Events(batch) => w.queue.push_back(batch),
                Message::Shutdown => shutdown = true,
            }
        }
        if shutdown {
            w.shutdown();
            return;
        }
        w.step(Instant::now());
    }
}

impl Worker {
    fn counters(&self) -> &Counters {
        &self.pipeline.counters
    }

    /// When something is due next.
    fn next_deadline(&self) -> Instant {
        let mut at = self.next_metrics;
        if self.metrics.pending.is_some() {
            at = at.min(self.metrics.not_before);
        }
        if self.logs.pending.is_some() || !self.queue.is_empty() {
            at = at.min(self.logs.not_before);
        }
        at
    }

    fn step(&mut self, now: Instant) {
        if now >= self.next_metrics {
            self.prepare_metrics();
            self.next_metrics += self.pipeline.settings.export_interval;
            if self.next_metrics <= now {
                self.next_metrics = now + self.pipeline.settings.export_interval;
            }
        }
        if self.metrics.pending.is_some() && now >= self.metrics.not_before {
            let timeout = self.pipeline.settings.metrics.timeout;
            self.attempt(Signal::Metrics, timeout);
        }
        if self.logs.pending.is_none() {
            self.prepare_logs();
        }
        if self.logs.pending.is_some() && now >= self.logs.not_before {
            let timeout = self.pipeline.settings.logs.timeout;
            self.attempt(Signal::Logs, timeout);
        }
    }

    /// Encodes the current totals of every agent as the pending metrics request.
    fn prepare_metrics(&mut self) {
        let mut covers = self.pipeline.retired_events.load(Ordering::Relaxed);
        let agents: Vec<(Arc<str>, u64, Totals)> = {
            let mut slots = lock(&self.pipeline.agents);
            let copies = slots
                .iter()
                .map(|slot| {
                    let mut totals = Totals::default();
                    let published = lock(&slot.published);
                    totals.copy_from(&published);
                    covers += slot.published_events.load(Ordering::Relaxed);
                    (Arc::clone(&slot.name), slot.start_time_ns, totals)
                })
                .collect();
            // A detached agent's final totals are in this request: it is done.
            slots.retain(|slot| {
                let live = !slot.detached.load(Ordering::Acquire);
                if !live {
                    let events = slot.published_events.load(Ordering::Relaxed);
                    self.pipeline
                        .retired_events
                        .fetch_add(events, Ordering::Relaxed);
                }
                live
            });
            copies
        };
        let views: Vec<AgentView<'_>> = agents
            .iter()
            .map(|(name, start, totals)| AgentView {
                name,
                start_time_ns: *start,
                totals,
            })
            .collect();
        let request = encode::metrics_request(
            &self.resource,
            &views,
            self.pipeline.settings.buckets.bounds(),
            &self.counters().snapshot(),
            self.process_start_ns,
            now_ns(),
        );
        encode::encode_into(&request, &mut self.raw);
        let mut body = Vec::new();
        compress(
            self.pipeline.settings.metrics.compression,
            &self.raw,
            &mut body,
        );
        if self
            .metrics
            .pending
            .replace(Pending {
                body,
                events: 0,
                covers,
            })
            .is_some()
        {
            bump(&self.counters().metric_requests_superseded, 1);
        }
    }

    /// Encodes up to [`MAX_LOG_RECORDS_PER_REQUEST`] queued events as the
    /// pending logs request.
    fn prepare_logs(&mut self) {
        if self.queue.is_empty() {
            return;
        }
        let mut taken: Vec<(Arc<str>, Vec<Event>)> = Vec::new();
        let mut count = 0;
        while count < MAX_LOG_RECORDS_PER_REQUEST {
            let Some(front) = self.queue.front_mut() else {
                break;
            };
            let room = MAX_LOG_RECORDS_PER_REQUEST - count;
            let events = if front.events.len() <= room {
                let batch = self.queue.pop_front().expect("front exists");
                taken.push((batch.agent, batch.events));
                taken.last().map_or(0, |t| t.1.len())
            } else {
                let rest = front.events.split_off(room);
                let head = std::mem::replace(&mut front.events, rest);
                taken.push((Arc::clone(&front.agent), head));
                room
            };
            count += events;
        }
        let batches: Vec<(&str, &[Event])> =
            taken.iter().map(|(a, e)| (&**a, e.as_slice())).collect();
        let request = encode::logs_request(&self.resource, &batches, now_ns());
        encode::encode_into(&request, &mut self.raw);
        let mut body = Vec::new();
        compress(
            self.pipeline.settings.logs.compression,
            &self.raw,
            &mut body,
        );
        self.logs.pending = Some(Pending {
            body,
            events: count as u64,
            covers: 0,
        });
    }

    fn signal(&self, signal: Signal) -> &SignalSettings {
        match signal {
            Signal::Metrics => &self.pipeline.settings.metrics,
            Signal::Logs => &self.pipeline.settings.logs,
        }
    }

    fn state(&mut self, signal: Signal) -> &mut SignalState {
        match signal {
            Signal::Metrics => &mut self.metrics,
            Signal::Logs => &mut self.logs,
        }
    }

    /// Counts one failed attempt of `signal` that is to be retried.
    fn count_retried(&self, signal: Signal) {
        let c = &self.pipeline.counters;
        match signal {
            Signal::Metrics => bump(&c.metric_requests_retried, 1),
            Signal::Logs => bump(&c.log_requests_retried, 1),
        }
    }

    /// Posts `body` of `signal` within `timeout`. A request that got no
    /// answer at all is sent once more at once (counted as a retried
    /// attempt): the usual cause is a kept-alive connection the collector
    /// closed, and the second try opens a new one. A collector that is down
    /// refuses both at once. Anything the collector answered waits for the
    /// backoff instead.
    fn post(&self, signal: Signal, body: &[u8], timeout: Duration) -> Outcome {
        let started = Instant::now();
        let settings = self.signal(signal);
        match self.transport.post(settings, body, timeout) {
            Outcome::NoAnswer(reason) => {
                let left = timeout.saturating_sub(started.elapsed());
                if left.is_zero() {
                    return Outcome::NoAnswer(reason);
                }
                self.count_retried(signal);
                tracing::debug!(?signal, %reason, "no answer; sending once more at once");
                self.transport.post(settings, body, left)
            }
            other => other,
        }
    }

    /// Sends the pending request of `signal` (a second time at once when the
    /// first got no answer). Returns whether it was delivered.
    fn attempt(&mut self, signal: Signal, timeout: Duration) -> bool {
        let Some(pending) = self.state(signal).pending.take() else {
            return true;
        };
        let outcome = self.post(signal, &pending.body, timeout);
        let c = &self.pipeline.counters;
        match outcome {
            Outcome::Delivered(body) => {
                match signal {
                    Signal::Metrics => {
                        bump(&c.metric_requests_delivered, 1);
                        c.events_in_delivered_metrics
                            .fetch_max(pending.covers, Ordering::Relaxed);
                        if let Ok(r) = ExportMetricsServiceResponse::decode(body.as_slice()) {
                            if let Some(p) = r.partial_success {
                                let rejected = u64::try_from(p.rejected_data_points).unwrap_or(0);
                                bump(&c.metric_points_rejected, rejected);
                                if rejected > 0 || !p.error_message.is_empty() {
                                    tracing::warn!(rejected, message = %p.error_message, "the collector rejected part of a metrics request");
                                }
                            }
                        }
                    }
                    Signal::Logs => {
                        bump(&c.log_requests_delivered, 1);
                        let mut rejected = 0;
                        if let Ok(r) = ExportLogsServiceResponse::decode(body.as_slice()) {
                            if let Some(p) = r.partial_success {
                                rejected = u64::try_from(p.rejected_log_records)
                                    .unwrap_or(0)
                                    .min(pending.events);
                                if rejected > 0 || !p.error_message.is_empty() {
                                    tracing::warn!(rejected, message = %p.error_message, "the collector rejected part of a logs request");
                                }
                            }
                        }
                        bump(&c.events_lost_rejected, rejected);
                        bump(&c.events_exported, pending.events - rejected);
                        c.events_queued.fetch_sub(pending.events, Ordering::Relaxed);
                    }
                }
                let state = self.state(signal);
                if state.failing {
                    tracing::info!(?signal, "the OTLP collector accepts requests again");
                }
                state.failing = false;
                state.server_wait = None;
                state.backoff.reset();
                true
            }
            Outcome::Retry { reason, after } => {
                self.retry_later(signal, pending, &reason, after);
                false
            }
            Outcome::NoAnswer(reason) => {
                self.retry_later(signal, pending, &reason, None);
                false
            }
            Outcome::Fail(reason) => {
                self.give_up(signal, &pending, &reason);
                let state = self.state(signal);
                state.backoff.reset();
                false
            }
        }
    }

    /// Counts a failed attempt and keeps `pending` for the next one, after
    /// the backoff's delay (or the collector's `Retry-After`, if longer).
    fn retry_later(
        &mut self,
        signal: Signal,
        pending: Pending,
        reason: &str,
        after: Option<Duration>,
    ) {
        self.count_retried(signal);
        let state = self.state(signal);
        let delay = state.backoff.next_delay().max(after.unwrap_or_default());
        state.not_before = Instant::now() + delay;
        state.server_wait = after.map(|a| Instant::now() + a);
        state.pending = Some(pending);
        if !state.failing {
            tracing::warn!(?signal, %reason, "OTLP export failed; retrying with backoff");
        } else {
            tracing::debug!(?signal, %reason, ?delay, "OTLP export failed again");
        }
        state.failing = true;
    }

    /// Counts `pending` as dropped (and its events as lost).
    fn give_up(&self, signal: Signal, pending: &Pending, reason: &str) {
        let c = &self.pipeline.counters;
        match signal {
            Signal::Metrics => bump(&c.metric_requests_dropped, 1),
            Signal::Logs => {
                bump(&c.log_requests_dropped, 1);
                bump(&c.events_lost_undeliverable, pending.events);
                c.events_queued.fetch_sub(pending.events, Ordering::Relaxed);
            }
        }
        tracing::warn!(?signal, %reason, events = pending.events, "OTLP request given up");
    }

    /// The last export: every queued event, then the current metrics, each
    /// request tried once (after a `Retry-After` that fits), all within the
    /// metrics timeout; what is not delivered is counted as lost.
    fn shutdown(&mut self) {
        let settings = &self.pipeline.settings;
        let budget_end = Instant::now() + settings.metrics.timeout.min(settings.shutdown);
        // Logs first, so that the last metrics request carries final counts.
        loop {
            if self.logs.pending.is_none() {
                self.prepare_logs();
            }
            if self.logs.pending.is_none() {
                break;
            }
            if !self.final_attempt(Signal::Logs, budget_end) {
                // Whatever is still queued cannot go either.
                let rest: u64 = self.queue.iter().map(|b| b.events.len() as u64).sum();
                self.queue.clear();
                let c = &self.pipeline.counters;
                bump(&c.events_lost_undeliverable, rest);
                c.events_queued.fetch_sub(rest, Ordering::Relaxed);
                break;
            }
        }
        self.prepare_metrics();
        self.final_attempt(Signal::Metrics, budget_end);
    }

    fn final_attempt(&mut self, signal: Signal, budget_end: Instant) -> bool {
        // Only the collector's own Retry-After is waited for here; our backoff
        // is not (the collector may be back, and this is the last chance).
        let now = Instant::now();
        let not_before = self.state(signal).server_wait.unwrap_or(now);
        if not_before > now {
            if not_before >= budget_end {
                if let Some(p) = self.state(signal).pending.take() {
                    self.give_up(
                        signal,
                        &p,
                        "shutting down before the collector's Retry-After",
                    );
                }
                return false;
            }
            std::thread::sleep(not_before - now);
        }
        let left = budget_end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            if let Some(p) = self.state(signal).pending.take() {
                self.give_up(signal, &p, "no time left at shutdown");
            }
            return false;
        }
        let timeout = self.signal(signal).timeout.min(left);
        if self.attempt(signal, timeout) {
            return true;
        }
        if let Some(p) = self.state(signal).pending.take() {
            self.give_up(signal, &p, "undelivered at shutdown");
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_maximum_with_jitter() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(400), 42);
        let bases = [100u64, 200, 400, 400, 400];
        for base in bases {
            let d = b.next_delay().as_secs_f64() * 1000.0;
            assert!(
                d >= base as f64 * 0.5 && d < base as f64 * 1.5,
                "{d} for {base}"
            );
        }
        b.reset();
        let d = b.next_delay().as_millis();
        assert!((50..150).contains(&d), "{d}");
    }

    #[test]
    fn jitter_spreads_delays() {
        let mut delays = std::collections::BTreeSet::new();
        for seed in 0..20 {
            let mut b = Backoff::new(Duration::from_secs(1), Duration::from_secs(1), seed);
            delays.insert(b.next_delay().as_millis());
        }
        assert!(delays.len() > 10, "{delays:?}");
    }
}
