//! The metric processor as an HTTP service (`nixl-telemetry serve`).
//!
//! Clients post usage records, one JSON object per job, to `POST /api/v1/metrics`
//! (TAO's own client, `send_telemetry_data`, does so unchanged); each record is
//! applied by the processor (`nixl-telemetry-processor`) to the metrics kept in a
//! durable store, and answered `201` once it is committed. The metrics are served
//! as JSON (`GET /api/v1/metrics`, the map `nixl-telemetry process` writes) and as
//! Prometheus text (`GET /metrics`).
//!
//! * [`Service`]: opens the store, starts its writer, serves the routes ([`http`]).
//! * [`Store`] and [`StoreUrl`]: an embedded SQLite file (the default, no set-up)
//!   or PostgreSQL (several instances on one database), with the schema
//!   migrations kept in `migrations/`.
//! * [`MetricsDocument`]: the document `nixl-telemetry store export|import` moves
//!   between stores, in the format of TAO's migration scripts.
//!
//! Every record is applied inside one store transaction that holds the store's
//! write lock, reads the stored values of the keys it touches and the stored
//! `last_updated` (the time builder's `old_now`), and writes what changed; so any
//! number of clients, and of instances on one PostgreSQL database, produce exactly
//! the metrics of applying their records one by one. `docs/service.md` tells the
//! whole story.

#![forbid(unsafe_code)]

mod connections;
mod document;
mod error;
pub mod http;
pub mod record_rules;
mod service;
mod store;
mod writer;

pub use document::{ImportMode, ImportSummary, MetricsDocument, IGNORED_KEYS};
pub use error::{DocumentError, ServeError, StoreError, StoreUrlError};
pub use http::{ApiError, Token, TOKEN_VARIABLE};
pub use service::{
    check_listen_address, Service, ServiceConfig, DEFAULT_BODY_TIMEOUT,
    DEFAULT_COMMIT_CHECK_TIMEOUT, DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_LISTEN,
    DEFAULT_MAX_BATCH, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONCURRENT_READS,
    DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_ENVELOPE_SKEW, DEFAULT_MAX_KEYS, DEFAULT_MAX_LABEL_VALUES,
    DEFAULT_SHUTDOWN_GRACE, DEFAULT_STORE_TIMEOUT,
};
pub use store::{Store, StoreUrl, Synchronous, DEFAULT_SQLITE_FILE};
