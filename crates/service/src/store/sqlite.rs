//! The embedded store: one SQLite file in WAL mode.
//!
//! A commit is in the write-ahead log before it returns, so it survives the end of
//! the process at any moment; WAL mode never leaves a half-written transaction
//! visible after a crash. With `synchronous=full` each commit also waits for the
//! disk. Writers in other processes on the same file wait for each other
//! (`BEGIN IMMEDIATE`, with a busy timeout).

use std::cell::Cell;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nixl_telemetry_processor::Metrics;
use rusqlite::{OpenFlags, OptionalExtension, TransactionBehavior};

use super::migrations::{newest, MIGRATIONS_TABLE, SQLITE};
use super::{
    BatchMark, Changes, ServerProcess, StoreBackend, StoreUrl, Synchronous, WriteTransaction,
};
use crate::error::StoreError;

pub(crate) struct SqliteConnection {
    connection: rusqlite::Connection,
    name: String,
    /// The file, and its device and inode when it was opened: a file removed or
    /// replaced since is noticed before each use.
    path: PathBuf,
    identity: (u64, u64),
    /// Set once the file was found removed or replaced: the connection is not
    /// used again.
    gone: Cell<bool>,
}

impl SqliteConnection {
    pub fn open(
        url: &StoreUrl,
        path: &Path,
        synchronous: Synchronous,
        migrate: bool,
        busy_timeout: Duration,
    ) -> Result<SqliteConnection, StoreError> {
        let name = url.to_string();
        let fail = |source| StoreError::Sqlite {
            store: name.clone(),
            source,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            if !parent.is_dir() {
                return Err(StoreError::BadContent {
                    store: name,
                    what: format!(
                        "the directory {} does not exist (the SQLite file is created, its directory is not)",
                        parent.display()
                    ),
                });
            }
        }
        // Only the first connection (the one that migrates) may create the file:
        // one that is missing later was removed while the service ran, and a new
        // empty file would hide it.
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if migrate {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        } else if !path.exists() {
            return Err(removed(&name, path));
        }
        let connection = rusqlite::Connection::open_with_flags(path, flags).map_err(fail)?;
        connection.busy_timeout(busy_timeout).map_err(fail)?;
        let mode: String = connection
            .pragma_update_and_check(None, "journal_mode", "wal", |row| row.get(0))
            .map_err(fail)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::BadContent {
                store: name,
                what: format!("SQLite refused WAL mode (journal_mode is {mode}); is the file on a network file system?"),
            });
        }
        connection
            .pragma_update(None, "synchronous", synchronous.as_str())
            .map_err(fail)?;
        let identity = file_identity(path).ok_or_else(|| removed(&name, path))?;
        let mut this = SqliteConnection {
            connection,
            name,
            path: path.to_owned(),
            identity,
            gone: Cell::new(false),
        };
        if migrate {
            this.migrate()?;
        }
        Ok(this)
    }

    /// Fails when the file was removed or replaced since the connection opened it
    /// (its writes would go to a file nobody reads again).
    fn check_file(&self) -> Result<(), StoreError> {
        if !self.gone.get() && file_identity(&self.path) == Some(self.identity) {
            return Ok(());
        }
        if !self.gone.replace(true) {
            tracing::error!(
                store = %self.name,
                "the SQLite file was removed or replaced while the service ran; \
                 restore it (or restart the service to start an empty one)"
            );
        }
        Err(removed(&self.name, &self.path))
    }

    fn fail(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            store: self.name.clone(),
            source,
        }
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        let name = self.name.clone();
        let fail = |source| StoreError::Sqlite {
            store: name.clone(),
            source,
        };
        let tx = self
            .connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(fail)?;
        tx.execute_batch(&format!(
            "CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} (
                version INTEGER NOT NULL PRIMARY KEY,
                name TEXT NOT NULL,
                applied_at TEXT NOT NULL
            )"
        ))
        .map_err(fail)?;
        let current: i64 = tx
            .query_row(
                &format!("SELECT COALESCE(MAX(version), 0) FROM {MIGRATIONS_TABLE}"),
                [],
                |row| row.get(0),
            )
            .map_err(fail)?;
        if current > newest(SQLITE) {
            return Err(StoreError::SchemaTooNew {
                store: name,
                found: current,
                known: newest(SQLITE),
            });
        }
        for migration in SQLITE.iter().filter(|m| m.version > current) {
            tracing::info!(store = %name, "applying schema migration {}", migration.name);
            tx.execute_batch(migration.sql).map_err(fail)?;
            tx.execute(
                &format!(
                    "INSERT INTO {MIGRATIONS_TABLE} (version, name, applied_at) \
                     VALUES (?1, ?2, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))"
                ),
                (migration.version, migration.name),
            )
            .map_err(fail)?;
        }
        tx.commit().map_err(fail)
    }
}

impl StoreBackend for SqliteConnection {
    fn write(
        &mut self,
        body: &mut dyn FnMut(&mut dyn WriteTransaction) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.check_file()?;
        let name = self.name.as_str();
        let tx = self
            .connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|source| StoreError::Sqlite {
                store: name.to_owned(),
                source,
            })?;
        let mut transaction = SqliteTransaction { tx, name };
        // Dropping the transaction without committing rolls it back.
        body(&mut transaction)?;
        transaction
            .tx
            .commit()
            .map_err(|source| StoreError::Sqlite {
                store: name.to_owned(),
                source,
            })
    }

    /// One transaction: SQLite answers each statement at once, so the lock, the
    /// reads and the writes are statements of one `BEGIN IMMEDIATE` transaction.
    fn update(
        &mut self,
        keys: &[&str],
        mark: &BatchMark,
        apply: &mut dyn FnMut(Metrics, Option<u64>) -> Option<Changes>,
    ) -> Result<(), StoreError> {
        self.write(&mut |tx| {
            let mut metrics = Metrics::new();
            tx.read_values(keys, &mut metrics)?;
            let stored_keys = if keys.iter().any(|k| metrics.get(k).is_none()) {
                Some(tx.count_keys()?)
            } else {
                None
            };
            metrics.set_last_updated(tx.last_updated()?);
            if let Some(changes) = apply(metrics, stored_keys) {
                let values: Vec<(&str, i64)> = changes
                    .values
                    .iter()
                    .map(|(k, v)| (k.as_str(), *v))
                    .collect();
                tx.write_values(&values)?;
                tx.set_last_updated(changes.last_updated.as_deref())?;
                tx.mark_batch(mark)?;
            }
            Ok(())
        })
    }

    fn snapshot(&mut self) -> Result<Metrics, StoreError> {
        self.check_file()?;
        let name = self.name.as_str();
        let fail = |source| StoreError::Sqlite {
            store: name.to_owned(),
            source,
        };
        // A read transaction: both tables as of one moment.
        let tx = self.connection.transaction().map_err(fail)?;
        let mut transaction = SqliteTransaction { tx, name };
        let metrics = transaction.read_all()?;
        transaction.tx.finish().map_err(fail)?;
        Ok(metrics)
    }

    /// Whether the writer's transaction `mark` was committed (SQLite has no server
    /// process to end: `lost` is `None`).
    fn batch_committed(
        &mut self,
        mark: &BatchMark,
        _lost: Option<ServerProcess>,
    ) -> Result<bool, StoreError> {
        self.connection
            .query_row(
                "SELECT batch FROM nixl_telemetry_writers WHERE writer = ?1",
                [&mark.writer],
                |row| row.get::<_, i64>(0),
            )
            .optional()
            .map(|batch| batch.is_some_and(|batch| batch >= mark.batch))
            .map_err(|e| self.fail(e))
    }

    fn ping(&mut self) -> Result<(), StoreError> {
        self.check_file()?;
        self.connection
            .query_row("SELECT COUNT(*) FROM nixl_telemetry_state", [], |row| {
                row.get::<_, i64>(0)
            })
            .map(drop)
            .map_err(|e| self.fail(e))
    }

    fn is_broken(&self) -> bool {
        self.gone.get()
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// The device and inode of the file at `path`, if there is one.
fn file_identity(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The error of a SQLite file removed while the service ran.
fn removed(name: &str, path: &Path) -> StoreError {
    StoreError::BadContent {
        store: name.to_owned(),
        what: format!(
            "the file {} was removed or replaced after the service opened it",
            path.display()
        ),
    }
}

struct SqliteTransaction<'a> {
    tx: rusqlite::Transaction<'a>,
    name: &'a str,
}

impl SqliteTransaction<'_> {
    fn fail(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            store: self.name.to_owned(),
            source,
        }
    }
}

impl WriteTransaction for SqliteTransaction<'_> {
    fn last_updated(&mut self) -> Result<Option<String>, StoreError> {
        self.tx
            .prepare_cached("SELECT value FROM nixl_telemetry_state WHERE name = 'last_updated'")
            .and_then(|mut s| s.query_row([], |row| row.get(0)))
            .map_err(|e| self.fail(e))
    }

    fn count_keys(&mut self) -> Result<u64, StoreError> {
        self.tx
            .prepare_cached("SELECT count(*) FROM nixl_telemetry_metrics")
            .and_then(|mut s| s.query_row([], |row| row.get::<_, i64>(0)))
            .map(|n| n.max(0) as u64)
            .map_err(|e| self.fail(e))
    }

    fn read_values(&mut self, keys: &[&str], into: &mut Metrics) -> Result<(), StoreError> {
        let mut statement = self
            .tx
            .prepare_cached("SELECT value FROM nixl_telemetry_metrics WHERE key = ?1")
            .map_err(|e| self.fail(e))?;
        for key in keys {
            let value: Option<i64> = statement
                .query_row([key], |row| row.get(0))
                .optional()
                .map_err(|e| self.fail(e))?;
            if let Some(value) = value {
                into.insert(key, value)
                    .map_err(|e| StoreError::BadContent {
                        store: self.name.to_owned(),
                        what: format!("metric `{key}`: {e}"),
                    })?;
            }
        }
        Ok(())
    }

    fn read_all(&mut self) -> Result<Metrics, StoreError> {
        let mut metrics = Metrics::new();
        let mut statement = self
            .tx
            .prepare_cached("SELECT key, value FROM nixl_telemetry_metrics")
            .map_err(|e| self.fail(e))?;
        let mut rows = statement.query([]).map_err(|e| self.fail(e))?;
        while let Some(row) = rows.next().map_err(|e| self.fail(e))? {
            let key: String = row.get(0).map_err(|e| self.fail(e))?;
            let value: i64 = row.get(1).map_err(|e| self.fail(e))?;
            metrics
                .insert(&key, value)
                .map_err(|e| StoreError::BadContent {
                    store: self.name.to_owned(),
                    what: format!("metric `{key}`: {e}"),
                })?;
        }
        drop(rows);
        drop(statement);
        metrics.set_last_updated(self.last_updated()?);
        Ok(metrics)
    }

    fn write_values(&mut self, values: &[(&str, i64)]) -> Result<(), StoreError> {
        let mut statement = self
            .tx
            .prepare_cached(
                "INSERT INTO nixl_telemetry_metrics (key, value) VALUES (?1, ?2) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            )
            .map_err(|e| self.fail(e))?;
        for (key, value) in values {
            statement.execute((key, value)).map_err(|e| self.fail(e))?;
        }
        Ok(())
    }

    fn set_last_updated(&mut self, value: Option<&str>) -> Result<(), StoreError> {
        self.tx
            .prepare_cached(
                "UPDATE nixl_telemetry_state SET value = ?1 WHERE name = 'last_updated'",
            )
            .and_then(|mut s| s.execute([value]))
            .map(drop)
            .map_err(|e| self.fail(e))
    }

    fn remove_all(&mut self) -> Result<(), StoreError> {
        self.tx
            .execute("DELETE FROM nixl_telemetry_metrics", [])
            .map(drop)
            .map_err(|e| self.fail(e))
    }

    fn mark_batch(&mut self, mark: &BatchMark) -> Result<(), StoreError> {
        self.tx
            .prepare_cached(
                "INSERT INTO nixl_telemetry_writers (writer, batch) VALUES (?1, ?2) \
                 ON CONFLICT (writer) DO UPDATE SET batch = excluded.batch",
            )
            .and_then(|mut s| s.execute((&mark.writer, mark.batch)))
            .map(drop)
            .map_err(|e| self.fail(e))
    }
}
