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

/// One open connection to a store.
pub(crate) enum Connection {
    /// An SQLite connection.
    Sqlite(sqlite::SqliteConnection),
    /// A PostgreSQL connection (boxed: it is much larger than SQLite's).
    Postgres(Box<postgres::PostgresConnection>),
}

impl Connection {
    /// Connects, and brings the schema up to date (`migrate`) or checks that it is.
    /// `timeout` bounds the connection and each round trip to PostgreSQL, and the
    /// wait for another process's write lock on SQLite.
    pub fn open(
        url: &StoreUrl,
        migrate: bool,
        timeout: Duration,
    ) -> Result<Connection, StoreError> {
        Ok(match url {
            StoreUrl::Sqlite { path, synchronous } => Connection::Sqlite(
                sqlite::SqliteConnection::open(url, path, *synchronous, migrate, timeout)?,
            ),
            StoreUrl::Postgres { url: text } => Connection::Postgres(Box::new(
                postgres::PostgresConnection::open(url, text, migrate, timeout)?,
            )),
        })
    }

    /// Runs `body` in a write transaction and commits; rolls back when it fails. A
    /// transaction that conflicts with another writer is tried again (`body` runs
    /// again from the start), up to [`WRITE_ATTEMPTS`] times.
    pub fn write<T>(
        &mut self,
        mut body: impl FnMut(&mut dyn WriteTransaction) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.retrying(|connection| match connection {
            Connection::Sqlite(c) => c.write(&mut body),
            Connection::Postgres(c) => c.write(&mut body),
        })
    }

    /// Runs `transaction` until it does not conflict with another writer, up to
    /// [`WRITE_ATTEMPTS`] times.
    fn retrying<T>(
        &mut self,
        mut transaction: impl FnMut(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut attempt = 1;
        loop {
            let result = transaction(self);
            match result {
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
                        store: self.name().to_owned(),
                        attempts: attempt,
                    })
                }
                other => return other,
            }
        }
    }

    /// The writer's transaction: under the write lock, reads the stored values of
    /// `keys` and `last_updated` into a map, hands it to `apply`, writes the changes
    /// `apply` returns (if any) and commits. Tried again on conflicts, as
    /// [`Connection::write`].
    pub fn update<T>(
        &mut self,
        keys: &[&str],
        mark: &BatchMark,
        mut apply: impl FnMut(Metrics) -> (T, Option<Changes>),
    ) -> Result<T, StoreError> {
        self.retrying(|connection| match connection {
            Connection::Sqlite(c) => c.write(&mut |tx| {
                let mut metrics = Metrics::new();
                tx.read_values(keys, &mut metrics)?;
                metrics.set_last_updated(tx.last_updated()?);
                let (value, changes) = apply(metrics);
                if let Some(changes) = changes {
                    let values: Vec<(&str, i64)> = changes
                        .values
                        .iter()
                        .map(|(k, v)| (k.as_str(), *v))
                        .collect();
                    tx.write_values(&values)?;
                    tx.set_last_updated(changes.last_updated.as_deref())?;
                    tx.mark_batch(mark)?;
                }
                Ok(value)
            }),
            Connection::Postgres(c) => c.update(keys, mark, &mut apply),
        })
    }

    /// Whether the writer's transaction `mark` was committed, asked on a fresh
    /// connection after its answer was lost on another (`lost`: that connection's
    /// server process, ended first).
    pub fn batch_committed(
        &mut self,
        mark: &BatchMark,
        lost: Option<(i32, String)>,
    ) -> Result<bool, StoreError> {
        match self {
            Connection::Sqlite(c) => c.batch_committed(mark),
            Connection::Postgres(c) => c.batch_committed(mark, lost),
        }
    }

    /// The PostgreSQL server process of this connection and when it started.
    pub fn backend(&self) -> Option<(i32, String)> {
        match self {
            Connection::Sqlite(_) => None,
            Connection::Postgres(c) => Some(c.backend()),
        }
    }

    /// The whole map and `last_updated`, as of one moment.
    pub fn snapshot(&mut self) -> Result<Metrics, StoreError> {
        match self {
            Connection::Sqlite(c) => c.snapshot(),
            Connection::Postgres(c) => c.snapshot(),
        }
    }

    /// Checks that the store answers.
    pub fn ping(&mut self) -> Result<(), StoreError> {
        match self {
            Connection::Sqlite(c) => c.ping(),
            Connection::Postgres(c) => c.ping(),
        }
    }

    /// Whether the connection can no longer be used (and must be opened again).
    pub fn is_broken(&self) -> bool {
        match self {
            Connection::Sqlite(_) => false,
            Connection::Postgres(c) => c.is_broken(),
        }
    }

    /// The store's URL, for messages.
    pub fn name(&self) -> &str {
        match self {
            Connection::Sqlite(c) => c.name(),
            Connection::Postgres(c) => c.name(),
        }
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
