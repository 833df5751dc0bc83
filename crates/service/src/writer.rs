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
//! record and its times, never on stored values. A record whose keys break the
//! rules every store shares (`record_rules`) is refused there, on its own.
//!
//! A transaction the store refuses for its data (a value or key it cannot hold) is
//! tried again one record at a time, so that one record never fails the others of
//! its batch. A transaction whose commit was answered late or not at all is
//! resolved before anyone is answered: the writer asks the store, on a fresh
//! connection and under the write lock, whether the transaction's mark is there.

use std::collections::HashMap;
use std::slice;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use nixl_telemetry_processor::{
    builders_from_list, extract_telemetry_data, parse_input_line, AttributeRegistry, BindError,
    Context, InputLine, MetricProcessor, Metrics, Timestamp,
};
use tokio::sync::{mpsc, oneshot};

use crate::error::{ServeError, StoreError};
use crate::http::{ServiceSeries, StoreOperation};
use crate::record_rules::{check_key, shown_key};
use crate::store::{BatchMark, Changes, Connection, ServerProcess, StoreUrl};

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
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    /// Applied and committed.
    Applied(Applied),
    /// Refused by the processor or by the key rules (the reason); nothing of it was
    /// stored.
    Rejected(String),
    /// Refused because it would bring the number of stored keys past the bound
    /// (the bound); nothing of it was stored.
    KeyLimit(u64),
    /// The store failed; nothing of it was stored.
    Unavailable(String),
    /// The commit's answer was lost and the store could not be asked since.
    Unknown(String),
}

/// A posted record (its body, already checked to be a JSON object of known keys)
/// and where its outcome goes.
pub(crate) struct RecordJob {
    pub body: String,
    pub reply: oneshot::Sender<Outcome>,
    /// When it was queued: a record that waited longer than the store timeout is
    /// answered 503 without being applied.
    pub queued: Instant,
    /// Whether the writer has taken it, or its client was answered without it.
    pub claim: Arc<Claim>,
}

/// Who a queued record belongs to: the writer once it takes it into a
/// transaction, or the request that stopped waiting for it first (then it is
/// never applied).
#[derive(Debug, Default)]
pub(crate) struct Claim(AtomicU8);

impl Claim {
    const QUEUED: u8 = 0;
    const TAKEN: u8 = 1;
    const ABANDONED: u8 = 2;

    /// The writer takes the record; false when its request gave it up.
    pub fn take(&self) -> bool {
        self.0
            .compare_exchange(
                Self::QUEUED,
                Self::TAKEN,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
    }

    /// The request gives the record up; false when the writer has taken it (its
    /// outcome will come).
    pub fn abandon(&self) -> bool {
        self.0
            .compare_exchange(
                Self::QUEUED,
                Self::ABANDONED,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
    }
}

/// How the writer treats the store.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WriterLimits {
    /// The most records applied in one transaction.
    pub max_batch: usize,
    /// The most distinct keys the store holds: a record that would add keys past
    /// it is refused; records that only update stored keys are not.
    pub max_keys: u64,
    /// How long the store may take to connect or to answer one round trip, and
    /// the longest a record waits in the queue.
    pub store_timeout: Duration,
    /// How long the writer keeps asking whether a commit whose answer was lost
    /// happened, before answering that it does not know.
    pub commit_check_timeout: Duration,
    /// How far an envelope's `now` may be from the service's clock (`None`: any
    /// time).
    pub max_envelope_skew: Option<Duration>,
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
    limits: WriterLimits,
    queue: mpsc::Receiver<RecordJob>,
    series: Arc<ServiceSeries>,
) -> Result<thread::JoinHandle<()>, ServeError> {
    let (opened, open_result) = std::sync::mpsc::channel();
    let thread = thread::Builder::new()
        .name("store-writer".into())
        .spawn(move || {
            let connection = match Connection::open(&url, true, limits.store_timeout) {
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
                limits: WriterLimits {
                    max_batch: limits.max_batch.max(1),
                    ..limits
                },
                series,
                writer_id: writer_id(),
                next_batch: 1,
                outage: Outage::default(),
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

/// An id for this writer, unique among the writers of one store: the host's
/// process id, the time and a few bytes of the standard library's random hasher.
fn writer_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{nanos:x}-{:016x}", std::process::id(), hasher.finish())
}

/// The log of a store outage: the first failure and then one line every
/// [`Outage::EVERY`] at most (with how many were not logged), and one line when
/// the store answers again.
#[derive(Debug, Default)]
struct Outage {
    since: Option<Instant>,
    logged: Option<Instant>,
    unlogged: u64,
}

impl Outage {
    const EVERY: Duration = Duration::from_secs(10);

    fn failed(&mut self, error: &StoreError) {
        let now = Instant::now();
        self.since.get_or_insert(now);
        if self.logged.is_some_and(|at| now - at < Outage::EVERY) {
            self.unlogged += 1;
            return;
        }
        if self.unlogged > 0 {
            tracing::error!(
                "store writer: {error} ({} more failures since the last line)",
                self.unlogged
            );
        } else {
            tracing::error!("store writer: {error}");
        }
        self.logged = Some(now);
        self.unlogged = 0;
    }

    fn succeeded(&mut self) {
        if let Some(since) = self.since.take() {
            tracing::info!(
                "store writer: the store answers again after {:.1} s",
                since.elapsed().as_secs_f64()
            );
            self.logged = None;
            self.unlogged = 0;
        }
    }
}

/// The connection in `slot` if it works, else a new one (left in `slot`).
fn ready_connection<'a>(
    slot: &'a mut Option<Connection>,
    url: &StoreUrl,
    timeout: Duration,
) -> Result<&'a mut Connection, StoreError> {
    let connection = match slot.take().filter(|c| !c.is_broken()) {
        Some(connection) => connection,
        None => Connection::open(url, false, timeout)?,
    };
    Ok(slot.insert(connection))
}

struct Writer {
    /// `None` after a failure that may have broken it: opened again before the next
    /// transaction.
    connection: Option<Connection>,
    url: StoreUrl,
    processor: MetricProcessor,
    limits: WriterLimits,
    /// This writer's id in the store's `nixl_telemetry_writers`.
    writer_id: String,
    /// The number of the next transaction.
    next_batch: i64,
    outage: Outage,
    /// Where the outcomes and the store's latency are counted.
    series: Arc<ServiceSeries>,
}

impl Writer {
    fn run(mut self, mut queue: mpsc::Receiver<RecordJob>) {
        let mut batch = Vec::with_capacity(self.limits.max_batch);
        while let Some(job) = queue.blocking_recv() {
            batch.push(job);
            while batch.len() < self.limits.max_batch {
                match queue.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(_) => break,
                }
            }
            // Records given up by their requests are dropped; records that waited
            // too long are answered without being applied.
            batch.retain(|job| job.claim.take());
            let limit = self.limits.store_timeout;
            for job in batch.extract_if(.., |job| job.queued.elapsed() > limit) {
                self.series.refused("store_unavailable");
                let _ = job.reply.send(Outcome::Unavailable(format!(
                    "the record waited longer than {} s for the store",
                    limit.as_secs_f64()
                )));
            }
            if batch.is_empty() {
                continue;
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
                Outcome::KeyLimit(_) => self.series.refused("key_limit_reached"),
                Outcome::Unavailable(_) => self.series.refused("store_unavailable"),
                Outcome::Unknown(_) => self.series.refused("store_outcome_unknown"),
            }
        }
    }

    /// Applies the jobs' records in one transaction; one outcome per job. When the
    /// store refuses the transaction's data, each record is tried alone.
    fn apply(&mut self, batch: &[RecordJob]) -> Vec<Outcome> {
        match self.transaction(batch) {
            Ok(outcomes) => {
                self.outage.succeeded();
                outcomes
            }
            Err(e) if e.is_data_fault() && batch.len() > 1 => {
                tracing::warn!(
                    "store writer: the store refused a transaction of {} records ({e}); trying each alone",
                    batch.len()
                );
                batch
                    .iter()
                    .flat_map(|job| self.apply(slice::from_ref(job)))
                    .collect()
            }
            Err(e) if e.is_data_fault() => {
                tracing::warn!("store writer: the store refused a record: {e}");
                vec![Outcome::Rejected(format!(
                    "the store cannot hold this record's metrics: {e}"
                ))]
            }
            Err(e) => {
                self.outage.failed(&e);
                if self.connection.is_none() {
                    // Do not spin on a store that is down.
                    thread::sleep(Duration::from_millis(100));
                }
                batch
                    .iter()
                    .map(|_| Outcome::Unavailable(e.to_string()))
                    .collect()
            }
        }
    }

    /// One transaction over the jobs' records.
    fn transaction(&mut self, batch: &[RecordJob]) -> Result<Vec<Outcome>, StoreError> {
        let lines: Vec<Result<InputLine<'_>, String>> = batch
            .iter()
            .map(|job| parse_input_line(&job.body).map_err(|e| e.to_string()))
            .collect();
        let plans = plan_records(&mut self.processor, &lines, self.limits.max_envelope_skew);
        let mut keys: Vec<&str> = plans
            .iter()
            .flatten()
            .flat_map(|(_, keys)| keys.iter().map(String::as_str))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let mark = BatchMark {
            writer: self.writer_id.clone(),
            batch: self.next_batch,
        };
        self.next_batch += 1;
        // The time counted includes opening a connection: a failed open is a
        // failed write too.
        let started = Instant::now();
        let mut lost = None;
        let processor = &mut self.processor;
        let max_keys = self.limits.max_keys;
        let mut last = None;
        let result = ready_connection(&mut self.connection, &self.url, self.limits.store_timeout)
            .and_then(|connection| {
                lost = connection.server_process();
                connection.update(&keys, &mark, |metrics, stored_keys| {
                    let key_bound = KeyBound {
                        max_keys,
                        stored_keys,
                    };
                    let (outcomes, changes) =
                        apply_records(processor, &lines, &plans, metrics, key_bound);
                    last = Some(outcomes.clone());
                    (outcomes, changes)
                })
            });
        self.series
            .store(StoreOperation::Write, started.elapsed(), result.is_ok());
        match result {
            Ok(outcomes) => Ok(outcomes),
            Err(StoreError::CommitUnknown { cause, .. }) => {
                self.connection = None;
                let outcomes = last.unwrap_or_default();
                Ok(self.resolve(&mark, lost, &cause, outcomes))
            }
            Err(e) => {
                if !e.is_data_fault() && !e.is_conflict() {
                    // Open a fresh connection for the next transaction.
                    self.connection = None;
                }
                Err(e)
            }
        }
    }

    /// Finds out whether the transaction `mark` (whose commit's answer was lost)
    /// was committed, asking again on fresh connections for up to the commit-check
    /// timeout: its records are then answered as applied, or as not stored, or (the
    /// store never answered) as unknown.
    fn resolve(
        &mut self,
        mark: &BatchMark,
        lost: Option<ServerProcess>,
        cause: &str,
        outcomes: Vec<Outcome>,
    ) -> Vec<Outcome> {
        tracing::warn!(
            "store writer: {cause}; asking the store whether transaction {} was committed",
            mark.batch
        );
        let until = Instant::now() + self.limits.commit_check_timeout;
        let mut last_error = None;
        while Instant::now() < until {
            let asked =
                ready_connection(&mut self.connection, &self.url, self.limits.store_timeout)
                    .and_then(|c| c.batch_committed(mark, lost.clone()));
            match asked {
                Ok(true) => {
                    tracing::info!("store writer: transaction {} was committed", mark.batch);
                    return outcomes;
                }
                Ok(false) => {
                    tracing::info!("store writer: transaction {} was not committed", mark.batch);
                    let reason = format!("the commit did not happen ({cause})");
                    return outcomes
                        .into_iter()
                        .map(|outcome| match outcome {
                            Outcome::Applied(_) => Outcome::Unavailable(reason.clone()),
                            other => other,
                        })
                        .collect();
                }
                Err(e) => {
                    self.connection = None;
                    last_error = Some(e.to_string());
                    thread::sleep(Duration::from_millis(200));
                }
            }
        }
        let reason = format!(
            "{cause}; the store could not be asked within {} s whether the commit happened ({})",
            self.limits.commit_check_timeout.as_secs_f64(),
            last_error.unwrap_or_else(|| "no attempt".into())
        );
        tracing::error!("store writer: transaction {}: {reason}", mark.batch);
        outcomes
            .into_iter()
            .map(|outcome| match outcome {
                Outcome::Applied(_) => Outcome::Unknown(reason.clone()),
                other => other,
            })
            .collect()
    }
}

/// Refuses an envelope's `now` further than `bound` from the service's clock: a
/// time far off would reset the day's sums (`time_lapsed_today`) for everyone.
/// A time with an offset is compared with the clock in UTC, one without with
/// the local clock (as the record would be applied).
fn check_envelope_time(given: &Timestamp, bound: Duration) -> Result<(), String> {
    let (clock, given_at) = match given.offset_seconds() {
        Some(offset) => (
            chrono::Utc::now().naive_utc(),
            given.naive() - chrono::TimeDelta::seconds(i64::from(offset)),
        ),
        None => (chrono::Local::now().naive_local(), given.naive()),
    };
    let skew = (given_at - clock).abs();
    let allowed = chrono::TimeDelta::from_std(bound).unwrap_or(chrono::TimeDelta::MAX);
    if skew <= allowed {
        return Ok(());
    }
    let mut shown = String::new();
    given.write_iso(&mut shown);
    Err(format!(
        "the envelope's `now` {shown} is {} s {} the service's clock; at most {} s either way \
         is accepted (--max-envelope-skew; `any` accepts every time, to replay records)",
        skew.num_seconds(),
        if given_at < clock {
            "behind"
        } else {
            "ahead of"
        },
        bound.as_secs_f64(),
    ))
}

/// Each record's time and the keys it touches, found by applying it to an empty
/// map (the built-in builders' keys depend only on the record and its times, never
/// on stored values; a record refused here is refused whatever is stored).
type Plan = Result<(Timestamp, Vec<String>), String>;

fn plan_records(
    processor: &mut MetricProcessor,
    lines: &[Result<InputLine<'_>, String>],
    max_envelope_skew: Option<Duration>,
) -> Vec<Plan> {
    lines
        .iter()
        .map(|line| {
            let line = line.as_ref().map_err(Clone::clone)?;
            let now = match line.now {
                Some(given) => {
                    if let Some(bound) = max_envelope_skew {
                        check_envelope_time(&given, bound)?;
                    }
                    given
                }
                None => Timestamp::now_local(),
            };
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
            for (key, _) in scratch.iter() {
                check_key(key).map_err(|fault| {
                    format!(
                        "the metric key `{}` this record builds {fault}",
                        shown_key(key)
                    )
                })?;
            }
            Ok((now, scratch.iter().map(|(k, _)| k.to_owned()).collect()))
        })
        .collect()
}

/// The bound on the number of stored keys, and how many are stored (`None` when
/// the transaction's keys are all stored: then no record adds one).
#[derive(Debug, Clone, Copy)]
struct KeyBound {
    max_keys: u64,
    stored_keys: Option<u64>,
}

/// The body of one write transaction: applies `lines` in order to `metrics` (the
/// stored values of the keys they touch, and the stored `last_updated`), and says
/// what changed. A record whose new keys would bring the stored keys past the
/// bound is refused on its own; the others still apply.
fn apply_records(
    processor: &mut MetricProcessor,
    lines: &[Result<InputLine<'_>, String>],
    plans: &[Plan],
    mut metrics: Metrics,
    key_bound: KeyBound,
) -> (Vec<Outcome>, Option<Changes>) {
    let before: HashMap<String, i64> = metrics.iter().map(|(k, v)| (k.to_owned(), v)).collect();
    let mut key_count = key_bound.stored_keys.unwrap_or(0);
    let mut applied_any = false;
    let outcomes = lines
        .iter()
        .zip(plans)
        .map(|(line, plan)| {
            let (line, (now, keys)) = match (line, plan) {
                (Ok(line), Ok(plan)) => (line, plan),
                (_, Err(reason)) | (Err(reason), _) => return Outcome::Rejected(reason.clone()),
            };
            // Keys neither stored nor written by an earlier record of the batch.
            let new_keys = keys.iter().filter(|k| metrics.get(k).is_none()).count() as u64;
            if new_keys > 0 && key_count.saturating_add(new_keys) > key_bound.max_keys {
                return Outcome::KeyLimit(key_bound.max_keys);
            }
            // `old_now` is the stored `last_updated`, or the previous record's time.
            match processor.process(&mut metrics, &line.record, &Context::at(*now)) {
                Ok(()) => {
                    applied_any = true;
                    key_count += new_keys;
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
