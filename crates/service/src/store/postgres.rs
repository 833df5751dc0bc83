//! The PostgreSQL store, for several service instances on one database.
//!
//! Every write transaction starts by locking the `last_updated` row
//! (`SELECT … FOR UPDATE`): writers of every instance take turns there, and the
//! statements after the lock see everything committed before it (READ COMMITTED
//! takes a new snapshot per statement). A deadlock or serialisation failure is
//! reported as a conflict and the transaction is tried again.

use std::str::FromStr;

use nixl_telemetry_processor::Metrics;
use postgres::{Client, IsolationLevel, NoTls, Statement};

use super::migrations::{newest, MIGRATIONS_TABLE, POSTGRES};
use super::{StoreUrl, WriteTransaction};
use crate::error::StoreError;

/// The key of the advisory lock that makes concurrent migrations take turns.
const MIGRATION_LOCK: i64 = 0x6e69_786c_7465_6c65; // "nixltele"

pub(crate) struct PostgresConnection {
    client: Client,
    name: String,
    statements: Statements,
}

/// The statements a writer runs for every batch, prepared once per connection.
struct Statements {
    lock: Statement,
    read_values: Statement,
    write_values: Statement,
    set_last_updated: Statement,
}

impl PostgresConnection {
    pub fn open(
        url: &StoreUrl,
        text: &str,
        migrate: bool,
    ) -> Result<PostgresConnection, StoreError> {
        let name = url.to_string();
        let fail = |source| StoreError::Postgres {
            store: name.clone(),
            source,
        };
        let config = postgres::Config::from_str(text).map_err(fail)?;
        let mut client = config.connect(NoTls).map_err(fail)?;
        if migrate {
            migrate_schema(&mut client, &name)?;
        }
        let statements = Statements {
            lock: client
                .prepare(
                    "SELECT value FROM nixl_telemetry_state WHERE name = 'last_updated' FOR UPDATE",
                )
                .map_err(fail)?,
            read_values: client
                .prepare("SELECT key, value FROM nixl_telemetry_metrics WHERE key = ANY($1)")
                .map_err(fail)?,
            write_values: client
                .prepare(
                    "INSERT INTO nixl_telemetry_metrics (key, value) \
                     SELECT * FROM unnest($1::text[], $2::int8[]) \
                     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                )
                .map_err(fail)?,
            set_last_updated: client
                .prepare("UPDATE nixl_telemetry_state SET value = $1 WHERE name = 'last_updated'")
                .map_err(fail)?,
        };
        Ok(PostgresConnection {
            client,
            name,
            statements,
        })
    }

    pub fn write<T>(
        &mut self,
        body: &mut dyn FnMut(&mut dyn WriteTransaction) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let name = self.name.as_str();
        let fail = |source| StoreError::Postgres {
            store: name.to_owned(),
            source,
        };
        let mut tx = self.client.transaction().map_err(fail)?;
        let row = tx.query_opt(&self.statements.lock, &[]).map_err(fail)?;
        let Some(row) = row else {
            return Err(StoreError::BadContent {
                store: name.to_owned(),
                what: "the last_updated row of nixl_telemetry_state is missing".into(),
            });
        };
        let last_updated: Option<String> = row.get(0);
        let mut transaction = PostgresTransaction {
            tx,
            name,
            statements: &self.statements,
            last_updated,
        };
        // Dropping the transaction without committing rolls it back.
        let value = body(&mut transaction)?;
        transaction.tx.commit().map_err(fail)?;
        Ok(value)
    }

    pub fn snapshot(&mut self) -> Result<Metrics, StoreError> {
        let name = self.name.as_str();
        let fail = |source| StoreError::Postgres {
            store: name.to_owned(),
            source,
        };
        // Both tables as of one moment.
        let mut tx = self
            .client
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .map_err(fail)?;
        let metrics = read_all(&mut tx, name)?;
        tx.commit().map_err(fail)?;
        Ok(metrics)
    }

    pub fn ping(&mut self) -> Result<(), StoreError> {
        self.client
            .simple_query("SELECT 1")
            .map(drop)
            .map_err(|source| StoreError::Postgres {
                store: self.name.clone(),
                source,
            })
    }

    pub fn is_broken(&self) -> bool {
        self.client.is_closed()
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Brings the schema up to date, one migration per transaction, while holding an
/// advisory lock (instances starting together take turns).
fn migrate_schema(client: &mut Client, name: &str) -> Result<(), StoreError> {
    let fail = |source| StoreError::Postgres {
        store: name.to_owned(),
        source,
    };
    let mut tx = client.transaction().map_err(fail)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(fail)?;
    tx.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} (
            version BIGINT NOT NULL PRIMARY KEY,
            name TEXT NOT NULL,
            applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
        )"
    ))
    .map_err(fail)?;
    let current: i64 = tx
        .query_one(
            &format!("SELECT COALESCE(MAX(version), 0)::int8 FROM {MIGRATIONS_TABLE}"),
            &[],
        )
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
        tx.batch_execute(migration.sql).map_err(fail)?;
        tx.execute(
            &format!("INSERT INTO {MIGRATIONS_TABLE} (version, name) VALUES ($1, $2)"),
            &[&migration.version, &migration.name],
        )
        .map_err(fail)?;
    }
    tx.commit().map_err(fail)
}

/// The whole map and `last_updated`, read in `tx`.
fn read_all(tx: &mut postgres::Transaction<'_>, name: &str) -> Result<Metrics, StoreError> {
    let fail = |source| StoreError::Postgres {
        store: name.to_owned(),
        source,
    };
    let mut metrics = Metrics::new();
    for row in tx
        .query("SELECT key, value FROM nixl_telemetry_metrics", &[])
        .map_err(fail)?
    {
        let key: &str = row.get(0);
        metrics
            .insert(key, row.get(1))
            .map_err(|e| StoreError::BadContent {
                store: name.to_owned(),
                what: format!("metric `{key}`: {e}"),
            })?;
    }
    let last_updated: Option<String> = tx
        .query_opt(
            "SELECT value FROM nixl_telemetry_state WHERE name = 'last_updated'",
            &[],
        )
        .map_err(fail)?
        .and_then(|row| row.get(0));
    metrics.set_last_updated(last_updated);
    Ok(metrics)
}

struct PostgresTransaction<'a> {
    tx: postgres::Transaction<'a>,
    name: &'a str,
    statements: &'a Statements,
    /// Read when the lock was taken.
    last_updated: Option<String>,
}

impl PostgresTransaction<'_> {
    fn fail(&self, source: postgres::Error) -> StoreError {
        StoreError::Postgres {
            store: self.name.to_owned(),
            source,
        }
    }
}

impl WriteTransaction for PostgresTransaction<'_> {
    fn last_updated(&mut self) -> Result<Option<String>, StoreError> {
        Ok(self.last_updated.clone())
    }

    fn read_values(&mut self, keys: &[&str], into: &mut Metrics) -> Result<(), StoreError> {
        let rows = self
            .tx
            .query(&self.statements.read_values, &[&keys])
            .map_err(|e| self.fail(e))?;
        for row in rows {
            let key: &str = row.get(0);
            into.insert(key, row.get(1))
                .map_err(|e| StoreError::BadContent {
                    store: self.name.to_owned(),
                    what: format!("metric `{key}`: {e}"),
                })?;
        }
        Ok(())
    }

    fn read_all(&mut self) -> Result<Metrics, StoreError> {
        let mut metrics = read_all(&mut self.tx, self.name)?;
        metrics.set_last_updated(self.last_updated.clone());
        Ok(metrics)
    }

    fn write_values(&mut self, values: &[(&str, i64)]) -> Result<(), StoreError> {
        if values.is_empty() {
            return Ok(());
        }
        let keys: Vec<&str> = values.iter().map(|(k, _)| *k).collect();
        let numbers: Vec<i64> = values.iter().map(|(_, v)| *v).collect();
        self.tx
            .execute(&self.statements.write_values, &[&keys, &numbers])
            .map(drop)
            .map_err(|e| self.fail(e))
    }

    fn set_last_updated(&mut self, value: Option<&str>) -> Result<(), StoreError> {
        self.tx
            .execute(&self.statements.set_last_updated, &[&value])
            .map_err(|e| self.fail(e))?;
        self.last_updated = value.map(str::to_owned);
        Ok(())
    }

    fn remove_all(&mut self) -> Result<(), StoreError> {
        self.tx
            .execute("DELETE FROM nixl_telemetry_metrics", &[])
            .map(drop)
            .map_err(|e| self.fail(e))
    }
}
