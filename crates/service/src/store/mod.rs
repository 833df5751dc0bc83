//! The durable store of the metrics map: an embedded SQLite file or a PostgreSQL
//! database, with the same schema (`migrations/`), the same transactions and the
//! same guarantees.
//!
//! Every write happens in a transaction that first takes the store's write lock
//! (SQLite's `BEGIN IMMEDIATE`; PostgreSQL's `SELECT … FOR UPDATE` of the
//! `last_updated` row), then reads the keys it needs, then writes: writers of every
//! process take turns, and each sees what the previous one committed. A
//! transaction that loses a race anyway (a PostgreSQL serialisation failure or
//! deadlock, SQLite busy for longer than its timeout) is tried again.

mod migrations;
mod pool;
mod postgres;
mod sqlite;
mod url;

use std::thread;
use std::time::Duration;

use nixl_telemetry_processor::Metrics;

use crate::document::{plan_import, ImportMode, ImportSummary, MetricsDocument};
use crate::error::StoreError;

pub(crate) use pool::Pool;
pub use url::{StoreUrl, Synchronous, DEFAULT_SQLITE_FILE};

/// How long the store may take to connect or to answer one round trip (and how
/// long SQLite waits for another process's write lock), by default.
pub const DEFAULT_STORE_TIMEOUT: Duration = Duration::from_secs(5);

/// How many times a write transaction is tried when it keeps conflicting.
const WRITE_ATTEMPTS: u32 = 20;

/// What the writer's transaction writes back (see [`Connection::update`]).
pub(crate) struct Changes {
    /// Metrics to set (inserted or replaced), each key once.
    pub values: Vec<(String, i64)>,
    /// The new `last_updated`.
    pub last_updated: Option<String>,
}

/// The mark a writer's transaction leaves in the store: the writer's id (chosen
/// when the service starts) and the transaction's number, written in the same
/// transaction as the records' metrics, read back when the commit's answer was
/// lost.
#[derive(Debug, Clone)]
pub(crate) struct BatchMark {
    pub writer: String,
    pub batch: i64,
}

/// What a write transaction can do once it holds the store's write lock.
pub(crate) trait WriteTransaction {
    /// The stored `last_updated` (read under the lock).
    fn last_updated(&mut self) -> Result<Option<String>, StoreError>;
    /// Adds to `into` the stored value of each of `keys` that exists.
    fn read_values(&mut self, keys: &[&str], into: &mut Metrics) -> Result<(), StoreError>;
    /// How many metric keys are stored.
    fn count_keys(&mut self) -> Result<u64, StoreError>;
    /// The whole map with `last_updated`.
    fn read_all(&mut self) -> Result<Metrics, StoreError>;
    /// Sets these metrics (inserted or replaced).
    fn write_values(&mut self, values: &[(&str, i64)]) -> Result<(), StoreError>;
    /// Sets `last_updated`.
    fn set_last_updated(&mut self, value: Option<&str>) -> Result<(), StoreError>;
    /// Removes every metric.
    fn remove_all(&mut self) -> Result<(), StoreError>;
    /// Records the writer's transaction number.
    fn mark_batch(&mut self, mark: &BatchMark) -> Result<(), StoreError>;
}

/// A PostgreSQL server process (its pid) and when it started (as the server
/// writes it): the process a connection talks to.
pub(crate) type ServerProcess = (i32, String);

/// One open connection to a store of one kind: what each backend (SQLite,
/// PostgreSQL) implements once. Each method is one attempt; [`Connection`] adds
/// what every backend shares (trying a conflicting transaction again).
pub(crate) trait StoreBackend: Send {
    /// Runs `body` in a write transaction and commits; rolls back when it fails.
    fn write(
        &mut self,
        body: &mut dyn FnMut(&mut dyn WriteTransaction) -> Result<(), StoreError>,
    ) -> Result<(), StoreError>;

    /// The writer's transaction: under the write lock, reads the stored values of
    /// `keys` and `last_updated` into a map, hands it to `apply` with the number of
    /// stored keys (counted only when some of `keys` is not stored: `None` when
    /// every one is), writes the changes `apply` returns (if any) with `mark`, and
    /// commits. A commit whose answer was lost or late is
    /// [`StoreError::CommitUnknown`].
    fn update(
        &mut self,
        keys: &[&str],
        mark: &BatchMark,
        apply: &mut dyn FnMut(Metrics, Option<u64>) -> Option<Changes>,
    ) -> Result<(), StoreError>;

    /// Whether the writer's transaction `mark` was committed, asked on a fresh
    /// connection after its answer was lost on another (`lost`: that connection's
    /// server process, ended first).
    fn batch_committed(
        &mut self,
        mark: &BatchMark,
        lost: Option<ServerProcess>,
    ) -> Result<bool, StoreError>;

    /// The server process of this connection, for stores that have one.
    fn server_process(&self) -> Option<ServerProcess> {
        None
    }

    /// The whole map and `last_updated`, as of one moment.
    fn snapshot(&mut self) -> Result<Metrics, StoreError>;

    /// Checks that the store answers.
    fn ping(&mut self) -> Result<(), StoreError>;

    /// Whether the connection can no longer be used (and must be opened again).
    fn is_broken(&self) -> bool {
        false
    }

    /// The store's URL, for messages.
    fn name(&self) -> &str;
}

/// Runs `transaction` on `backend` until it does not conflict with another
/// writer, up to [`WRITE_ATTEMPTS`] times: the one retry policy of every backend.
fn retrying<B: StoreBackend + ?Sized, T>(
    backend: &mut B,
    mut transaction: impl FnMut(&mut B) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let mut attempt = 1;
    loop {
        match transaction(backend) {
            Err(e) if e.is_conflict() && attempt < WRITE_ATTEMPTS => {
                tracing::debug!(attempt, "write transaction conflicted, trying again: {e}");
                // 1, 2, 4 … 64 ms, a little less or more each time so that two
                // writers that met once do not meet again.
                let base = 1u64 << (attempt - 1).min(6);
                let spread = u64::from(std::process::id() ^ attempt) % (base + 1);
                thread::sleep(Duration::from_millis(base + spread / 2));
                attempt += 1;
            }
            Err(e) if e.is_conflict() => {
                return Err(StoreError::Conflict {
                    store: backend.name().to_owned(),
                    attempts: attempt,
                })
            }
            other => return other,
        }
    }
}

/// One open connection to a store, of the kind its URL names.
pub(crate) struct Connection(Box<dyn StoreBackend>);

impl Connection {
    /// Connects, and brings the schema up to date (`migrate`) or checks that it is.
    /// `timeout` bounds the connection and each round trip to PostgreSQL, and the
    /// wait for another process's write lock on SQLite.
    pub fn open(
        url: &StoreUrl,
        migrate: bool,
        timeout: Duration,
    ) -> Result<Connection, StoreError> {
        Ok(Connection(match url {
            StoreUrl::Sqlite { path, synchronous } => Box::new(sqlite::SqliteConnection::open(
                url,
                path,
                *synchronous,
                migrate,
                timeout,
            )?),
            StoreUrl::Postgres { url: text } => Box::new(postgres::PostgresConnection::open(
                url, text, migrate, timeout,
            )?),
        }))
    }

    /// Runs `body` in a write transaction and commits; rolls back when it fails. A
    /// transaction that conflicts with another writer is tried again (`body` runs
    /// again from the start), up to [`WRITE_ATTEMPTS`] times.
    pub fn write<T>(
        &mut self,
        mut body: impl FnMut(&mut dyn WriteTransaction) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        retrying(&mut *self.0, |backend| {
            let mut value = None;
            backend.write(&mut |tx| {
                value = Some(body(tx)?);
                Ok(())
            })?;
            Ok(value.expect("a committed write transaction ran its body"))
        })
    }

    /// The writer's transaction (see [`StoreBackend::update`]), tried again on
    /// conflicts as [`Connection::write`]; `apply` says what to write and what to
    /// answer.
    pub fn update<T>(
        &mut self,
        keys: &[&str],
        mark: &BatchMark,
        mut apply: impl FnMut(Metrics, Option<u64>) -> (T, Option<Changes>),
    ) -> Result<T, StoreError> {
        retrying(&mut *self.0, |backend| {
            let mut value = None;
            backend.update(keys, mark, &mut |metrics, stored_keys| {
                let (answer, changes) = apply(metrics, stored_keys);
                value = Some(answer);
                changes
            })?;
            Ok(value.expect("a committed transaction ran its body"))
        })
    }

    /// Checks that the store takes writes: a write transaction that sets
    /// `last_updated` to what it is (nothing changes).
    pub fn probe_write(&mut self) -> Result<(), StoreError> {
        self.write(|tx| {
            let last_updated = tx.last_updated()?;
            tx.set_last_updated(last_updated.as_deref())
        })
    }

    /// See [`StoreBackend::batch_committed`].
    pub fn batch_committed(
        &mut self,
        mark: &BatchMark,
        lost: Option<ServerProcess>,
    ) -> Result<bool, StoreError> {
        self.0.batch_committed(mark, lost)
    }

    /// See [`StoreBackend::server_process`].
    pub fn server_process(&self) -> Option<ServerProcess> {
        self.0.server_process()
    }

    /// See [`StoreBackend::snapshot`].
    pub fn snapshot(&mut self) -> Result<Metrics, StoreError> {
        self.0.snapshot()
    }

    /// See [`StoreBackend::ping`].
    pub fn ping(&mut self) -> Result<(), StoreError> {
        self.0.ping()
    }

    /// See [`StoreBackend::is_broken`].
    pub fn is_broken(&self) -> bool {
        self.0.is_broken()
    }

    /// See [`StoreBackend::name`].
    pub fn name(&self) -> &str {
        self.0.name()
    }
}

/// A store, opened: what `nixl-telemetry store` works with.
///
/// ```no_run
/// use nixl_telemetry_service::{Store, StoreUrl};
///
/// let mut store = Store::open(&"sqlite:metrics.db".parse::<StoreUrl>()?)?;
/// print!("{}", store.metrics()?.to_json_string());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Store {
    connection: Connection,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("store", &self.connection.name())
            .finish()
    }
}

impl Store {
    /// Opens the store at `url`: creates an SQLite file that does not exist yet, and
    /// brings the schema of either kind up to date.
    pub fn open(url: &StoreUrl) -> Result<Store, StoreError> {
        Ok(Store {
            connection: Connection::open(url, true, DEFAULT_STORE_TIMEOUT)?,
        })
    }

    /// The metrics map with `last_updated`, as of one moment: the document
    /// `store export` writes (with [`Metrics::to_json_string`]).
    pub fn metrics(&mut self) -> Result<Metrics, StoreError> {
        self.connection.snapshot()
    }

    /// Imports a metrics document (see [`ImportMode`]); with `dry_run` nothing is
    /// changed. Either way the summary says what the import changes. The import is
    /// one transaction: records posted meanwhile are applied before or after it,
    /// never lost.
    pub fn import(
        &mut self,
        document: &MetricsDocument,
        mode: ImportMode,
        dry_run: bool,
    ) -> Result<ImportSummary, StoreError> {
        if dry_run {
            let current = self.connection.snapshot()?;
            return Ok(plan_import(&current, document, mode, true).summary);
        }
        self.connection.write(|tx| {
            let current = tx.read_all()?;
            let plan = plan_import(&current, document, mode, false);
            if mode == ImportMode::Replace {
                tx.remove_all()?;
            }
            tx.write_values(&plan.writes)?;
            tx.set_last_updated(plan.last_updated.as_deref())?;
            Ok(plan.summary)
        })
    }
}
