//! The errors of the service, its store and its documents.

use std::net::SocketAddr;

use nixl_telemetry_processor::{BindError, RegistryError, StateError, TimestampError};

/// A store URL that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("store URL `{url}`: {reason}")]
pub struct StoreUrlError {
    /// The URL as given, its password hidden.
    pub url: String,
    /// What is wrong and what is accepted.
    pub reason: String,
}

/// A store that cannot be opened, read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// SQLite failed.
    #[error("store {store}: {source}")]
    Sqlite {
        /// The store (its URL).
        store: String,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
    /// PostgreSQL failed (or could not be reached).
    #[error("store {store}: {}", postgres_message(.source))]
    Postgres {
        /// The store (its URL, password hidden).
        store: String,
        /// What the server or the driver said.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The store's schema was written by a newer program.
    #[error(
        "store {store}: its schema is at version {found}, newer than this program's {known}; \
         use the nixl-telemetry that wrote it (or a newer one)"
    )]
    SchemaTooNew {
        /// The store.
        store: String,
        /// The version found.
        found: i64,
        /// The newest version this program knows.
        known: i64,
    },
    /// A stored row cannot be read as metrics.
    #[error("store {store}: {what}")]
    BadContent {
        /// The store.
        store: String,
        /// What was found.
        what: String,
    },
    /// The store did not answer within the time allowed.
    #[error("store {store}: no answer within {seconds} s")]
    Timeout {
        /// The store.
        store: String,
        /// The time allowed.
        seconds: f64,
    },
    /// The answer to a `COMMIT` was lost or late: whether it happened is not known
    /// until the store is asked again.
    #[error("store {store}: the answer to the commit was lost ({cause})")]
    CommitUnknown {
        /// The store.
        store: String,
        /// What happened to the answer.
        cause: String,
    },
    /// Other writers kept conflicting with this one.
    #[error(
        "store {store}: gave up after {attempts} attempts, each conflicting with another writer"
    )]
    Conflict {
        /// The store.
        store: String,
        /// How many times the transaction was tried.
        attempts: u32,
    },
}

/// The driver's message, with the server's detail when there is one (the plain
/// `Display` of a server error is only "db error").
fn postgres_message(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => match db.detail() {
            Some(detail) => format!("{} ({detail})", db.message()),
            None => db.message().to_owned(),
        },
        None => {
            let mut text = error.to_string();
            let mut source = std::error::Error::source(error);
            while let Some(cause) = source {
                text.push_str(": ");
                text.push_str(&cause.to_string());
                source = cause.source();
            }
            text
        }
    }
}

impl StoreError {
    /// Whether this is the server's own answer (a PostgreSQL error with a code), as
    /// opposed to a lost connection or a timeout.
    pub(crate) fn is_server_answer(&self) -> bool {
        matches!(self, StoreError::Postgres { source, .. } if source.as_db_error().is_some())
    }

    /// Whether the store refused the data itself (a value or key it cannot hold), so
    /// that the same records fail again however often they are tried, while other
    /// records would succeed.
    pub(crate) fn is_data_fault(&self) -> bool {
        match self {
            StoreError::Sqlite {
                source: rusqlite::Error::SqliteFailure(e, _),
                ..
            } => matches!(
                e.code,
                rusqlite::ErrorCode::TooBig
                    | rusqlite::ErrorCode::ConstraintViolation
                    | rusqlite::ErrorCode::TypeMismatch
            ),
            StoreError::Postgres { source, .. } => source.code().is_some_and(|code| {
                // Classes 22 (data exception), 23 (integrity constraint violation)
                // and 54 (program limit exceeded: an index row too large).
                let class = &code.code()[..2];
                matches!(class, "22" | "23" | "54")
            }),
            _ => false,
        }
    }

    /// Whether the transaction lost a race with another writer (a PostgreSQL
    /// serialisation failure or deadlock, SQLite busy beyond its timeout) and may
    /// simply be tried again.
    pub fn is_conflict(&self) -> bool {
        match self {
            StoreError::Sqlite {
                source: rusqlite::Error::SqliteFailure(e, _),
                ..
            } => matches!(
                e.code,
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
            ),
            StoreError::Postgres { source, .. } => {
                use tokio_postgres::error::SqlState;
                source.code().is_some_and(|code| {
                    *code == SqlState::T_R_SERIALIZATION_FAILURE
                        || *code == SqlState::T_R_DEADLOCK_DETECTED
                })
            }
            _ => false,
        }
    }
}

/// A metrics document (as `store export` writes and TAO's migration scripts move)
/// that cannot be imported. Nothing is changed when one is found.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DocumentError {
    /// Not a JSON object of integers (the key is named).
    #[error("the document is not a metrics document: {0}")]
    Content(#[source] StateError),
    /// A key appears twice in the document (JSON parsers would keep one of the
    /// values silently).
    #[error("the document has the key `{0}` more than once: each key must appear once")]
    DuplicateKey(String),
    /// `last_updated` is not an ISO 8601 time (the processor could not read it back).
    #[error("the document's last_updated: {0}")]
    LastUpdated(#[source] TimestampError),
}

/// Why the service could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The attribute registry file cannot be used.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The builders cannot be built over the registry.
    #[error(transparent)]
    Builders(#[from] BindError),
    /// The store cannot be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The listen address cannot be resolved or bound.
    #[error("cannot listen on {address}: {source}")]
    Listen {
        /// The address as given.
        address: String,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// A non-loopback address without a token.
    #[error(
        "refusing to listen on {address} without a token: anyone who can reach it could post \
         records and read the metrics. Set {token_variable} (clients then send it as the \
         password of HTTP Basic credentials or as `Bearer <token>`), listen on a loopback \
         address such as 127.0.0.1, or pass --insecure to serve without authentication"
    )]
    InsecureListen {
        /// The address.
        address: SocketAddr,
        /// The variable that holds the token.
        token_variable: &'static str,
    },
    /// The token variable is set but unusable.
    #[error("{variable} is set but {reason}")]
    BadToken {
        /// The variable.
        variable: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The server failed while running.
    #[error("the HTTP server failed: {0}")]
    Server(#[source] std::io::Error),
}
