//! The PostgreSQL store, for several service instances on one database.
//!
//! Every write transaction starts by locking the `last_updated` row
//! (`SELECT … FOR UPDATE`): writers of every instance take turns there, and the
//! statements after the lock see everything committed before it (READ COMMITTED
//! takes a new snapshot per statement). A deadlock or serialisation failure is
//! reported as a conflict and the transaction is tried again.
//!
//! The driver is `tokio-postgres`, called from blocking code (the store's writer
//! thread, the readers' blocking tasks, the `store` command) through a runtime
//! handle. The writer's transaction is two round trips: `BEGIN`, the lock and the
//! read of the keys go out together, then the writes and `COMMIT`; the server runs
//! them in order, so the read still follows the lock.

use std::cell::Cell;
use std::future::Future;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nixl_telemetry_processor::Metrics;
use tokio::runtime::{Handle, Runtime};
use tokio::task::JoinHandle;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Statement};

use super::migrations::{newest, MIGRATIONS_TABLE, POSTGRES};
use super::{BatchMark, Changes, ServerProcess, StoreBackend, StoreUrl, WriteTransaction};
use crate::error::StoreError;

/// The key of the advisory lock that makes concurrent migrations take turns.
const MIGRATION_LOCK: i64 = 0x6e69_786c_7465_6c65; // "nixltele"

const LOCK: &str = "SELECT value FROM nixl_telemetry_state WHERE name = 'last_updated' FOR UPDATE";
const COUNT_KEYS: &str = "SELECT count(*) FROM nixl_telemetry_metrics";
const READ_VALUES: &str = "SELECT key, value FROM nixl_telemetry_metrics WHERE key = ANY($1)";
const READ_ALL: &str = "SELECT key, value FROM nixl_telemetry_metrics";
const READ_LAST_UPDATED: &str =
    "SELECT value FROM nixl_telemetry_state WHERE name = 'last_updated'";
const WRITE_VALUES: &str = "INSERT INTO nixl_telemetry_metrics (key, value) \
     SELECT * FROM unnest($1::text[], $2::int8[]) \
     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value";
const SET_LAST_UPDATED: &str =
    "UPDATE nixl_telemetry_state SET value = $1 WHERE name = 'last_updated'";
const MARK_BATCH: &str = "INSERT INTO nixl_telemetry_writers (writer, batch) VALUES ($1, $2) \
     ON CONFLICT (writer) DO UPDATE SET batch = EXCLUDED.batch";
const READ_MARK: &str = "SELECT batch FROM nixl_telemetry_writers WHERE writer = $1";
const CHECK_DEADLINE: &str = "SELECT nixl_telemetry_check_deadline($1)";

pub(crate) struct PostgresConnection {
    client: Client,
    /// Where the driver's futures run.
    executor: Executor,
    /// The task that drives the connection's socket: ended when the connection is
    /// dropped, so that nothing sent on it runs later on a server that was frozen.
    driver: JoinHandle<()>,
    name: String,
    statements: Statements,
    /// How long one round trip may take.
    timeout: Duration,
    /// The server's clock minus this machine's, in seconds (measured at connect).
    clock_offset: f64,
    /// The server process of this connection and when it started: ended when a
    /// commit's answer was lost, before asking whether it happened.
    backend: (i32, String),
    /// Set when a round trip took too long: the connection is not used again.
    timed_out: Cell<bool>,
}

impl Drop for PostgresConnection {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

/// Where the driver's futures run: the runtime the connection was opened in (from
/// one of its blocking threads, or a thread of its own), or, when it was opened
/// outside any runtime, a runtime of its own. (A current-thread runtime's I/O only
/// advances inside its own `block_on`, so an own runtime is driven through it.)
enum Executor {
    Shared(Handle),
    Own(Runtime),
}

impl Executor {
    fn block_on<F: Future>(&self, future: F) -> F::Output {
        match self {
            Executor::Shared(handle) => handle.block_on(future),
            Executor::Own(runtime) => runtime.block_on(future),
        }
    }

    /// Runs `future` for at most `limit` (the timer is made inside the runtime).
    fn block_on_within<F: Future>(
        &self,
        limit: Duration,
        future: F,
    ) -> Result<F::Output, tokio::time::error::Elapsed> {
        self.block_on(async move { tokio::time::timeout(limit, future).await })
    }
}

/// The statements the writer runs for every batch, prepared once per connection.
struct Statements {
    lock: Statement,
    read_values: Statement,
    write_values: Statement,
    set_last_updated: Statement,
    mark_batch: Statement,
    check_deadline: Statement,
}

impl PostgresConnection {
    /// Connects (within `timeout`, as every later round trip), sets the server's own
    /// statement and idle-transaction timeouts, and migrates or checks the schema.
    pub fn open(
        url: &StoreUrl,
        text: &str,
        migrate: bool,
        timeout: Duration,
    ) -> Result<PostgresConnection, StoreError> {
        let name = url.to_string();
        let fail = |source| StoreError::Postgres {
            store: name.clone(),
            source,
        };
        let executor = match Handle::try_current() {
            Ok(handle) => Executor::Shared(handle),
            Err(_) => Executor::Own(
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| StoreError::BadContent {
                        store: name.clone(),
                        what: format!("cannot start a runtime for the driver: {e}"),
                    })?,
            ),
        };
        let timed_out = || StoreError::Timeout {
            store: name.clone(),
            seconds: timeout.as_secs_f64(),
        };
        let mut config = tokio_postgres::Config::from_str(text).map_err(fail)?;
        config.connect_timeout(timeout);
        let connected = executor.block_on(async {
            tokio::time::timeout(timeout, async {
                let (client, connection) = config.connect(NoTls).await?;
                let driver = tokio::spawn(async move {
                    if let Err(e) = connection.await {
                        tracing::debug!("PostgreSQL connection ended: {e}");
                    }
                });
                Ok((client, driver))
            })
            .await
        });
        let (client, driver) = connected.map_err(|_| timed_out())?.map_err(fail)?;
        // The server ends what runs too long too, and a transaction left idle.
        let milliseconds = timeout.as_millis().max(1);
        let set_up = executor.block_on_within(timeout, async {
            client
                .batch_execute(&format!(
                    "SET statement_timeout = {milliseconds}; \
                     SET idle_in_transaction_session_timeout = {}",
                    milliseconds * 2
                ))
                .await?;
            let before = SystemTime::now();
            let row = client
                .query_one(
                    "SELECT extract(epoch FROM clock_timestamp())::float8, pg_backend_pid(), \
                     (SELECT backend_start::text FROM pg_stat_activity WHERE pid = pg_backend_pid())",
                    &[],
                )
                .await?;
            let after = SystemTime::now();
            let here = (epoch_seconds(before) + epoch_seconds(after)) / 2.0;
            let server: f64 = row.get(0);
            let backend = (row.get::<_, i32>(1), row.get::<_, Option<String>>(2).unwrap_or_default());
            Ok::<_, tokio_postgres::Error>((server - here, backend))
        });
        let (clock_offset, backend) = set_up.map_err(|_| timed_out())?.map_err(fail)?;
        if migrate {
            executor
                .block_on_within(timeout * 4, migrate_schema(&client, &name))
                .map_err(|_| timed_out())??;
        }
        let statements = executor
            .block_on_within(timeout, async {
                Ok(Statements {
                    lock: client.prepare(LOCK).await?,
                    read_values: client.prepare(READ_VALUES).await?,
                    write_values: client.prepare(WRITE_VALUES).await?,
                    set_last_updated: client.prepare(SET_LAST_UPDATED).await?,
                    mark_batch: client.prepare(MARK_BATCH).await?,
                    check_deadline: client.prepare(CHECK_DEADLINE).await?,
                })
            })
            .map_err(|_| timed_out())?
            .map_err(fail)?;
        Ok(PostgresConnection {
            client,
            executor,
            driver,
            name,
            statements,
            timeout,
            clock_offset,
            backend,
            timed_out: Cell::new(false),
        })
    }

    fn fail(&self, source: tokio_postgres::Error) -> StoreError {
        StoreError::Postgres {
            store: self.name.clone(),
            source,
        }
    }

    /// Runs `future` to completion from blocking code, within the round-trip
    /// timeout; a connection that timed out is not used again.
    fn run<T>(
        &self,
        future: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, StoreError> {
        match self.executor.block_on_within(self.timeout, future) {
            Ok(result) => result.map_err(|e| self.fail(e)),
            Err(_) => {
                self.timed_out.set(true);
                self.driver.abort();
                Err(StoreError::Timeout {
                    store: self.name.clone(),
                    seconds: self.timeout.as_secs_f64(),
                })
            }
        }
    }

    /// Ends a failed transaction (when the connection still works).
    fn roll_back(&self) {
        if !self.is_broken() {
            let _ = self
                .executor
                .block_on_within(self.timeout, self.client.batch_execute("ROLLBACK"));
        }
    }
}

impl StoreBackend for PostgresConnection {
    fn write(
        &mut self,
        body: &mut dyn FnMut(&mut dyn WriteTransaction) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let client = &self.client;
        let lock = &self.statements.lock;
        let last_updated = self.run(async {
            let (begin, row) =
                tokio::join!(client.batch_execute("BEGIN"), client.query_one(lock, &[]));
            begin?;
            Ok(row?.get::<_, Option<String>>(0))
        });
        let last_updated = match last_updated {
            Ok(value) => value,
            Err(e) => {
                self.roll_back();
                return Err(e);
            }
        };
        let mut transaction = PostgresTransaction {
            connection: self,
            last_updated,
        };
        let result =
            body(&mut transaction).and_then(|()| self.run(self.client.batch_execute("COMMIT")));
        if result.is_err() {
            self.roll_back();
        }
        result
    }

    /// Two round trips: `BEGIN`, the lock and the read of the keys go out
    /// together, then the writes, the batch's mark, the deadline check and
    /// `COMMIT`.
    fn update(
        &mut self,
        keys: &[&str],
        mark: &BatchMark,
        apply: &mut dyn FnMut(Metrics, Option<u64>) -> Option<Changes>,
    ) -> Result<(), StoreError> {
        // The server rolls the transaction back if it reaches its end after the
        // writer stopped waiting for it.
        let deadline =
            epoch_seconds(SystemTime::now()) + self.timeout.as_secs_f64() * 2.0 + self.clock_offset;
        let client = &self.client;
        let statements = &self.statements;
        // One round trip: the server runs BEGIN, the lock and the read in order.
        let read = self.run(async {
            let read_params: [&(dyn ToSql + Sync); 1] = [&keys];
            let (begin, lock, rows) = tokio::join!(
                client.batch_execute("BEGIN"),
                client.query_one(&statements.lock, &[]),
                client.query(&statements.read_values, &read_params),
            );
            begin?;
            let last_updated: Option<String> = lock?.get(0);
            Ok((last_updated, rows?))
        });
        let (last_updated, rows) = match read {
            Ok(read) => read,
            Err(e) => {
                self.roll_back();
                return Err(e);
            }
        };
        let mut metrics = Metrics::new();
        for row in &rows {
            let key: &str = row.get(0);
            if let Err(e) = metrics.insert(key, row.get(1)) {
                self.roll_back();
                return Err(StoreError::BadContent {
                    store: self.name.clone(),
                    what: format!("metric `{key}`: {e}"),
                });
            }
        }
        // The stored keys are counted (one more round trip) only when the batch
        // brings a key that is not stored.
        let stored_keys = if keys.iter().any(|k| metrics.get(k).is_none()) {
            match self.run(client.query_one(COUNT_KEYS, &[])) {
                Ok(row) => Some(row.get::<_, i64>(0).max(0) as u64),
                Err(e) => {
                    self.roll_back();
                    return Err(e);
                }
            }
        } else {
            None
        };
        metrics.set_last_updated(last_updated);
        let Some(changes) = apply(metrics, stored_keys) else {
            // Nothing to write: end the transaction.
            return self.run(client.batch_execute("COMMIT"));
        };
        // One more: the writes, the mark, the deadline check and COMMIT. The time
        // the whole transaction may take counts from its start.
        let written = self.run(async {
            let keys: Vec<&str> = changes.values.iter().map(|(k, _)| k.as_str()).collect();
            let values: Vec<i64> = changes.values.iter().map(|(_, v)| *v).collect();
            let write_params: [&(dyn ToSql + Sync); 2] = [&keys, &values];
            let stamp_params: [&(dyn ToSql + Sync); 1] = [&changes.last_updated];
            let mark_params: [&(dyn ToSql + Sync); 2] = [&mark.writer, &mark.batch];
            let deadline_params: [&(dyn ToSql + Sync); 1] = [&deadline];
            let (write, stamp, marked, checked, commit) = tokio::join!(
                client.execute(&statements.write_values, &write_params),
                client.execute(&statements.set_last_updated, &stamp_params),
                client.execute(&statements.mark_batch, &mark_params),
                client.query(&statements.check_deadline, &deadline_params),
                client.batch_execute("COMMIT"),
            );
            write?;
            stamp?;
            marked?;
            checked?;
            commit
        });
        match written {
            Ok(()) => Ok(()),
            // The server said no: nothing was committed.
            Err(e @ StoreError::Postgres { .. }) if e.is_server_answer() => {
                self.roll_back();
                Err(e)
            }
            // The answer was lost or late: the commit may have happened.
            Err(e) => Err(StoreError::CommitUnknown {
                store: self.name.clone(),
                cause: e.to_string(),
            }),
        }
    }

    /// Whether the writer's transaction `mark` was committed: first ends the
    /// server process of the connection it was sent on (`lost`, when known), then
    /// takes the write lock (so a transaction still under way ends first) and reads
    /// the writer's row.
    fn batch_committed(
        &mut self,
        mark: &BatchMark,
        lost: Option<ServerProcess>,
    ) -> Result<bool, StoreError> {
        let client = &self.client;
        if let Some((pid, started)) = lost {
            self.run(client.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE pid = $1 AND backend_start::text = $2",
                &[&pid, &started],
            ))?;
        }
        let statements = &self.statements;
        let writer: [&(dyn ToSql + Sync); 1] = [&mark.writer];
        let read = self.run(async {
            let (begin, lock, row, commit) = tokio::join!(
                client.batch_execute("BEGIN"),
                client.query_one(&statements.lock, &[]),
                client.query_opt(READ_MARK, &writer),
                client.batch_execute("COMMIT"),
            );
            begin?;
            lock?;
            let row = row?;
            commit?;
            Ok(row.map(|row| row.get::<_, i64>(0)))
        });
        match read {
            Ok(batch) => Ok(batch.is_some_and(|batch| batch >= mark.batch)),
            Err(e) => {
                self.roll_back();
                Err(e)
            }
        }
    }

    fn server_process(&self) -> Option<ServerProcess> {
        Some(self.backend.clone())
    }

    fn snapshot(&mut self) -> Result<Metrics, StoreError> {
        let client = &self.client;
        // Both tables as of one moment.
        let result = self.run(async {
            let (begin, rows, stamp, commit) = tokio::join!(
                client.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"),
                client.query(READ_ALL, &[]),
                client.query_opt(READ_LAST_UPDATED, &[]),
                client.batch_execute("COMMIT"),
            );
            begin?;
            let rows = rows?;
            let last_updated: Option<String> = stamp?.and_then(|row| row.get(0));
            commit?;
            Ok((rows, last_updated))
        });
        let (rows, last_updated) = match result {
            Ok(read) => read,
            Err(e) => {
                self.roll_back();
                return Err(e);
            }
        };
        let mut metrics = metrics_from_rows(&rows, &self.name)?;
        metrics.set_last_updated(last_updated);
        Ok(metrics)
    }

    fn ping(&mut self) -> Result<(), StoreError> {
        self.run(self.client.simple_query("SELECT 1")).map(drop)
    }

    fn is_broken(&self) -> bool {
        self.timed_out.get() || self.client.is_closed()
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// Seconds since 1970 of `time`.
fn epoch_seconds(time: SystemTime) -> f64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The metrics of `key, value` rows.
fn metrics_from_rows(rows: &[tokio_postgres::Row], name: &str) -> Result<Metrics, StoreError> {
    let mut metrics = Metrics::new();
    for row in rows {
        let key: &str = row.get(0);
        metrics
            .insert(key, row.get(1))
            .map_err(|e| StoreError::BadContent {
                store: name.to_owned(),
                what: format!("metric `{key}`: {e}"),
            })?;
    }
    Ok(metrics)
}

/// Brings the schema up to date in one transaction, while holding an advisory lock
/// (instances starting together take turns).
async fn migrate_schema(client: &Client, name: &str) -> Result<(), StoreError> {
    let fail = |source| StoreError::Postgres {
        store: name.to_owned(),
        source,
    };
    client.batch_execute("BEGIN").await.map_err(fail)?;
    let result = async {
        client
            .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await
            .map_err(fail)?;
        client
            .batch_execute(&format!(
                "CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} (
                    version BIGINT NOT NULL PRIMARY KEY,
                    name TEXT NOT NULL,
                    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
                )"
            ))
            .await
            .map_err(fail)?;
        let current: i64 = client
            .query_one(
                &format!("SELECT COALESCE(MAX(version), 0)::int8 FROM {MIGRATIONS_TABLE}"),
                &[],
            )
            .await
            .map_err(fail)?
            .get(0);
        if current > newest(POSTGRES) {
            return Err(StoreError::SchemaTooNew {
                store: name.to_owned(),
                found: current,
                known: newest(POSTGRES),
            });
        }
        for migration in POSTGRES.iter().filter(|m| m.version > current) {
            tracing::info!(store = %name, "applying schema migration {}", migration.name);
            client.batch_execute(migration.sql).await.map_err(fail)?;
            client
                .execute(
                    &format!("INSERT INTO {MIGRATIONS_TABLE} (version, name) VALUES ($1, $2)"),
                    &[&migration.version, &migration.name],
                )
                .await
                .map_err(fail)?;
        }
        client.batch_execute("COMMIT").await.map_err(fail)
    }
    .await;
    if result.is_err() && !client.is_closed() {
        let _ = client.batch_execute("ROLLBACK").await;
    }
    result
}

/// A write transaction of [`PostgresConnection::write`] (imports).
struct PostgresTransaction<'a> {
    connection: &'a PostgresConnection,
    /// Read when the lock was taken.
    last_updated: Option<String>,
}

impl WriteTransaction for PostgresTransaction<'_> {
    fn last_updated(&mut self) -> Result<Option<String>, StoreError> {
        Ok(self.last_updated.clone())
    }

    fn count_keys(&mut self) -> Result<u64, StoreError> {
        let c = self.connection;
        let row = c.run(c.client.query_one(COUNT_KEYS, &[]))?;
        Ok(row.get::<_, i64>(0).max(0) as u64)
    }

    fn read_values(&mut self, keys: &[&str], into: &mut Metrics) -> Result<(), StoreError> {
        let c = self.connection;
        let rows = c.run(c.client.query(&c.statements.read_values, &[&keys]))?;
        for row in rows {
            let key: &str = row.get(0);
            into.insert(key, row.get(1))
                .map_err(|e| StoreError::BadContent {
                    store: c.name.clone(),
                    what: format!("metric `{key}`: {e}"),
                })?;
        }
        Ok(())
    }

    fn read_all(&mut self) -> Result<Metrics, StoreError> {
        let c = self.connection;
        let rows = c.run(c.client.query(READ_ALL, &[]))?;
        let mut metrics = metrics_from_rows(&rows, &c.name)?;
        metrics.set_last_updated(self.last_updated.clone());
        Ok(metrics)
    }

    fn write_values(&mut self, values: &[(&str, i64)]) -> Result<(), StoreError> {
        if values.is_empty() {
            return Ok(());
        }
        let c = self.connection;
        let keys: Vec<&str> = values.iter().map(|(k, _)| *k).collect();
        let numbers: Vec<i64> = values.iter().map(|(_, v)| *v).collect();
        c.run(
            c.client
                .execute(&c.statements.write_values, &[&keys, &numbers]),
        )
        .map(drop)
    }

    fn set_last_updated(&mut self, value: Option<&str>) -> Result<(), StoreError> {
        let c = self.connection;
        c.run(c.client.execute(&c.statements.set_last_updated, &[&value]))?;
        self.last_updated = value.map(str::to_owned);
        Ok(())
    }

    fn remove_all(&mut self) -> Result<(), StoreError> {
        let c = self.connection;
        c.run(c.client.execute("DELETE FROM nixl_telemetry_metrics", &[]))
            .map(drop)
    }

    fn mark_batch(&mut self, mark: &BatchMark) -> Result<(), StoreError> {
        let c = self.connection;
        c.run(
            c.client
                .execute(&c.statements.mark_batch, &[&mark.writer, &mark.batch]),
        )
        .map(drop)
    }
}
