//! The store's writer: one thread per service instance that applies posted records
//! to the store, one transaction at a time.
//!
//! A transaction takes the store's write lock, reads `last_updated` (the time
//! builder's `old_now`) and the stored values of every key its records touch,
//! applies the records in order with the processor (each wholly or not at all),
//! writes the values that changed and the new `last_updated`, and commits. Only
//! then is each record answered. Records that are waiting when a transaction
//! starts share it (at most `max_batch` of them; 1 gives one transaction per
//! record): their answers wait for one commit instead of one each.
//!
//! Which keys a record touches is found before the transaction, by running it
//! against an empty map: the built-in builders write keys that depend only on the
//! record and its times, never on stored values.

use std::collections::HashMap;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use nixl_telemetry_processor::{
    builders_from_list, extract_telemetry_data, parse_input_line, AttributeRegistry, BindError,
    Context, InputLine, MetricProcessor, Metrics, Timestamp,
};
use tokio::sync::{mpsc, oneshot};

use crate::error::ServeError;
use crate::http::{ServiceSeries, StoreOperation};
use crate::store::{Changes, Connection, StoreUrl};

/// The registry and builders the service runs: each thread that needs a processor
/// builds its own from this (processors are not shared between threads).
#[derive(Debug, Clone)]
pub(crate) struct ProcessorConfig {
    pub registry: AttributeRegistry,
    pub builders: String,
}

impl ProcessorConfig {
    /// A processor with this registry and these builders.
    pub fn build(&self) -> Result<MetricProcessor, BindError> {
        MetricProcessor::with_builders(self.registry.clone(), builders_from_list(&self.builders)?)
    }
}

/// A record applied: its keys with their new values, and the new `last_updated`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Applied {
    pub last_updated: String,
    pub metrics: Vec<(String, i64)>,
}

/// What became of a posted record.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Applied and committed.
    Applied(Applied),
    /// Refused by the processor (the reason); nothing of it was stored.
    Rejected(String),
    /// The store failed; nothing of it was stored.
    Unavailable(String),
}

/// A posted record (its body, already checked to be a JSON object of known keys)
/// and where its outcome goes.
pub(crate) struct RecordJob {
    pub body: String,
    pub reply: oneshot::Sender<Outcome>,
}

/// Starts the writer thread, which opens the store (creating and migrating it as
/// needed) and returns once it is open. The thread ends when every sender of its
/// queue is gone, after applying what is queued. `config` must build (the caller
/// checks it first).
///
/// The thread opens its connection itself: a PostgreSQL driver opened outside any
/// async runtime runs on one of its own, inside this thread, so the writer's round
/// trips never wait for the service's busy runtime threads.
pub(crate) fn spawn(
    url: StoreUrl,
    config: ProcessorConfig,
    max_batch: usize,
    queue: mpsc::Receiver<RecordJob>,
    series: Arc<ServiceSeries>,
) -> Result<thread::JoinHandle<()>, ServeError> {
    let (opened, open_result) = std::sync::mpsc::channel();
    let thread = thread::Builder::new()
        .name("store-writer".into())
        .spawn(move || {
            let connection = match Connection::open(&url, true) {
                Ok(connection) => {
                    let _ = opened.send(Ok(()));
                    connection
                }
                Err(e) => {
                    let _ = opened.send(Err(e));
                    return;
                }
            };
            let processor = config
                .build()
                .expect("the processor configuration was checked before the writer started");
            Writer {
                connection: Some(connection),
                url,
                processor,
                max_batch: max_batch.max(1),
                series,
            }
            .run(queue)
        })
        .map_err(ServeError::Server)?;
    match open_result.recv() {
        Ok(Ok(())) => Ok(thread),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e.into())
        }
        Err(_) => {
            let _ = thread.join();
            Err(ServeError::Server(std::io::Error::other(
                "the store's writer thread ended before opening the store",
            )))
        }
    }
}

struct Writer {
    /// `None` after a failure that may have broken it: opened again before the next
    /// transaction.
    connection: Option<Connection>,
    url: StoreUrl,
    processor: MetricProcessor,
    max_batch: usize,
    /// Where the outcomes and the store's latency are counted.
    series: Arc<ServiceSeries>,
}

impl Writer {
    fn run(mut self, mut queue: mpsc::Receiver<RecordJob>) {
        let mut batch = Vec::with_capacity(self.max_batch);
        while let Some(job) = queue.blocking_recv() {
            batch.push(job);
            while batch.len() < self.max_batch {
                match queue.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(_) => break,
                }
            }
            let outcomes = self.apply(&batch);
            self.count(&batch, &outcomes);
            for (job, outcome) in batch.drain(..).zip(outcomes) {
                // A client that hung up before its answer is no error of ours.
                let _ = job.reply.send(outcome);
            }
        }
        tracing::debug!("store writer: queue closed, stopping");
    }

    /// Counts the outcomes of a batch in the service's own series: each stored
    /// record with its job's `time_lapsed`, each refused one with its cause.
    fn count(&self, batch: &[RecordJob], outcomes: &[Outcome]) {
        for (job, outcome) in batch.iter().zip(outcomes) {
            match outcome {
                Outcome::Applied(_) => {
                    let time_lapsed = parse_input_line(&job.body).ok().and_then(|line| {
                        extract_telemetry_data(self.processor.registry(), &line.record)
                            .ok()
                            .and_then(|data| data.integer("time_lapsed"))
                    });
                    self.series.accepted(time_lapsed);
                }
                Outcome::Rejected(_) => self.series.refused("bad_record"),
                Outcome::Unavailable(_) => self.series.refused("store_unavailable"),
            }
        }
    }

    /// Applies the jobs' records in one transaction; one outcome per job.
    fn apply(&mut self, batch: &[RecordJob]) -> Vec<Outcome> {
        let started = Instant::now();
        let connection = match self.connection.take().filter(|c| !c.is_broken()) {
            Some(connection) => connection,
            None => match Connection::open(&self.url, false) {
                Ok(connection) => connection,
                Err(e) => {
                    tracing::error!("store writer: {e}");
                    self.series
                        .store(StoreOperation::Write, started.elapsed(), false);
                    // Do not spin on a store that is down.
                    thread::sleep(Duration::from_millis(100));
                    return batch
                        .iter()
                        .map(|_| Outcome::Unavailable(e.to_string()))
                        .collect();
                }
            },
        };
        let connection = self.connection.insert(connection);
        let lines: Vec<Result<InputLine<'_>, String>> = batch
            .iter()
            .map(|job| parse_input_line(&job.body).map_err(|e| e.to_string()))
            .collect();
        let plans = plan_records(&mut self.processor, &lines);
        let mut keys: Vec<&str> = plans
            .iter()
            .flatten()
            .flat_map(|(_, keys)| keys.iter().map(String::as_str))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let processor = &mut self.processor;
        let result = connection.update(&keys, |metrics| {
            apply_records(processor, &lines, &plans, metrics)
        });
        self.series
            .store(StoreOperation::Write, started.elapsed(), result.is_ok());
        match result {
            Ok(outcomes) => outcomes,
            Err(e) => {
                tracing::error!("store writer: {e}");
                // Open a fresh connection for the next transaction.
                self.connection = None;
                batch
                    .iter()
                    .map(|_| Outcome::Unavailable(e.to_string()))
                    .collect()
            }
        }
    }
}

/// Each record's time and the keys it touches, found by applying it to an empty
/// map (the built-in builders' keys depend only on the record and its times, never
/// on stored values; a record refused here is refused whatever is stored).
type Plan = Result<(Timestamp, Vec<String>), String>;

fn plan_records(
    processor: &mut MetricProcessor,
    lines: &[Result<InputLine<'_>, String>],
) -> Vec<Plan> {
    lines
        .iter()
        .map(|line| {
            let line = line.as_ref().map_err(Clone::clone)?;
            let now = line.now.unwrap_or_else(Timestamp::now_local);
            let mut scratch = Metrics::new();
            processor
                .process(
                    &mut scratch,
                    &line.record,
                    &Context {
                        now: Some(now),
                        old_now: Some(now),
                    },
                )
                .map_err(|e| e.to_string())?;
            Ok((now, scratch.iter().map(|(k, _)| k.to_owned()).collect()))
        })
        .collect()
}

/// The body of one write transaction: applies `lines` in order to `metrics` (the
/// stored values of the keys they touch, and the stored `last_updated`), and says
/// what changed.
fn apply_records(
    processor: &mut MetricProcessor,
    lines: &[Result<InputLine<'_>, String>],
    plans: &[Plan],
    mut metrics: Metrics,
) -> (Vec<Outcome>, Option<Changes>) {
    let before: HashMap<String, i64> = metrics.iter().map(|(k, v)| (k.to_owned(), v)).collect();
    let mut applied_any = false;
    let outcomes = lines
        .iter()
        .zip(plans)
        .map(|(line, plan)| {
            let (line, (now, keys)) = match (line, plan) {
                (Ok(line), Ok(plan)) => (line, plan),
                (_, Err(reason)) | (Err(reason), _) => return Outcome::Rejected(reason.clone()),
            };
            // `old_now` is the stored `last_updated`, or the previous record's time.
            match processor.process(&mut metrics, &line.record, &Context::at(*now)) {
                Ok(()) => {
                    applied_any = true;
                    Outcome::Applied(Applied {
                        last_updated: metrics.last_updated().unwrap_or_default().into_owned(),
                        metrics: keys
                            .iter()
                            .map(|k| (k.clone(), metrics.get(k).unwrap_or_default()))
                            .collect(),
                    })
                }
                Err(e) => Outcome::Rejected(e.to_string()),
            }
        })
        .collect();
    let changes = applied_any.then(|| {
        let mut values: Vec<(String, i64)> = metrics
            .iter()
            .filter(|(k, v)| before.get(*k) != Some(v))
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        values.sort_unstable();
        Changes {
            values,
            last_updated: metrics.last_updated().map(|t| t.into_owned()),
        }
    });
    (outcomes, changes)
}
