//! Starting and running the service.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use nixl_telemetry_processor::{AttributeRegistry, DEFAULT_BUILDERS};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::connections::{self, ConnectionLimits, PhaseTimeouts};
use crate::error::ServeError;
use crate::http::{
    self, AppState, ExpositionState, LabelBound, ServiceSeries, Token, TOKEN_VARIABLE,
};
use crate::store::{Pool, StoreUrl};
use crate::writer::{self, ProcessorConfig, WriterLimits};

pub use crate::store::DEFAULT_STORE_TIMEOUT;

/// The address `serve` listens on by default.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// The longest request body accepted by default (64 KiB; a record is a few hundred
/// bytes).
pub const DEFAULT_MAX_BODY_BYTES: usize = 64 * 1024;

/// The most records one store transaction applies by default: the records waiting
/// when it starts, up to this many.
pub const DEFAULT_MAX_BATCH: usize = 64;
/// The default bound on the distinct metric keys the store holds: a `GET` of the
/// whole map builds it in memory (about 200 bytes a key, so about 200 MB at the
/// bound), while the keys grow with the distinct values records bring, not with
/// the number of records.
pub const DEFAULT_MAX_KEYS: u64 = 1_000_000;

/// The most full reads of the store (`GET /metrics`, `GET /api/v1/metrics`)
/// served at once by default: each holds a rendering of the whole map (about
/// 100 bytes a key), and requests arriving together share one read.
pub const DEFAULT_MAX_CONCURRENT_READS: usize = 4;

/// How long a client may take to send a request body, by default.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// The most distinct values of one label `GET /metrics` shows by default; further
/// values are shown as `other` (and counted in
/// `tao_service_label_values_folded_total`).
pub const DEFAULT_MAX_LABEL_VALUES: usize = 100;
/// How long the writer keeps asking whether a commit whose answer was lost
/// happened, by default.
pub const DEFAULT_COMMIT_CHECK_TIMEOUT: Duration = Duration::from_secs(30);

/// How far an envelope's `now` may be from the service's clock, by default.
pub const DEFAULT_MAX_ENVELOPE_SKEW: Duration = Duration::from_secs(300);

/// How long a request's headers may take, from its first byte, by default.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a kept-alive connection may wait for its next request, by default:
/// longer than a one-minute scrape interval, so that Prometheus keeps its
/// connection. At the connection cap, waiting connections are closed first.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// The most connections served at once, by default.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// How long requests under way may take to finish once shutdown begins, by
/// default.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Records waiting for the writer before new posts wait for room.
const QUEUE_LENGTH: usize = 1024;

/// Idle reading connections kept.
const IDLE_READERS: usize = 4;

/// How the service is set up.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// Where the metrics are kept.
    pub store: StoreUrl,
    /// The attribute registry records are read with.
    pub registry: AttributeRegistry,
    /// The builders, comma-separated, in run order (`legacy,comprehensive,time,labeled`).
    pub builders: String,
    /// The token clients must present; `None` serves without authentication (only
    /// on loopback addresses, unless `insecure`).
    pub token: Option<Token>,
    /// Serve without a token on any address.
    pub insecure: bool,
    /// The longest request body, in bytes.
    pub max_body_bytes: usize,
    /// The most records applied in one store transaction (1: one transaction per
    /// record).
    pub max_batch: usize,
    /// The most distinct metric keys the store holds: a record that would add
    /// keys past it is refused (422); records updating stored keys are not.
    pub max_keys: u64,
    /// The most full reads of the store served at once; a read past it is
    /// answered `503 too_many_reads` with `Retry-After: 1` at once.
    pub max_concurrent_reads: usize,
    /// How long a client may take to send a request body (then: 408).
    pub body_timeout: Duration,
    /// The most distinct values of one label `GET /metrics` shows; further ones
    /// are shown as `other`.
    pub max_label_values: usize,
    /// Whether `GET /metrics` also shows the JSON map's other keys, as one family
    /// `tao_legacy_value{key="…"}`.
    pub metrics_legacy_keys: bool,
    /// How long the store may take to connect or to answer one round trip (then:
    /// 503), and the longest a record waits for the writer.
    pub store_timeout: Duration,
    /// How long the writer keeps asking whether a commit whose answer was lost
    /// happened.
    pub commit_check_timeout: Duration,
    /// How long a request's headers may take, counted from the request's first
    /// byte (for a connection's first request, from its accepting).
    pub header_timeout: Duration,
    /// How long a kept-alive connection may wait for its next request.
    pub idle_timeout: Duration,
    /// How far an envelope's `now` may be from the service's clock, either way
    /// (`None`: any time, to replay records of the past). A record whose time
    /// is further is refused (400).
    pub max_envelope_skew: Option<Duration>,
    /// The most connections served at once (the next ones wait until one closes).
    pub max_connections: usize,
    /// How long requests under way may take to finish once shutdown begins.
    pub shutdown_grace: Duration,
}

impl Default for ServiceConfig {
    /// The default store, the built-in registry and builders, no token, 64 KiB
    /// bodies sent within 30 s, transactions of up to 64 records, 100 values per
    /// label on `/metrics`, no legacy keys there.
    fn default() -> Self {
        ServiceConfig {
            store: StoreUrl::default(),
            registry: AttributeRegistry::default(),
            builders: DEFAULT_BUILDERS.join(","),
            token: None,
            insecure: false,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_batch: DEFAULT_MAX_BATCH,
            max_keys: DEFAULT_MAX_KEYS,
            max_concurrent_reads: DEFAULT_MAX_CONCURRENT_READS,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            max_label_values: DEFAULT_MAX_LABEL_VALUES,
            metrics_legacy_keys: false,
            store_timeout: DEFAULT_STORE_TIMEOUT,
            commit_check_timeout: DEFAULT_COMMIT_CHECK_TIMEOUT,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_envelope_skew: Some(DEFAULT_MAX_ENVELOPE_SKEW),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
        }
    }
}

/// A running service: its store is open, its writer thread runs, and its routes
/// are ready to be served ([`Service::serve`]).
///
/// ```no_run
/// use nixl_telemetry_service::{Service, ServiceConfig};
///
/// # async fn run() -> Result<(), nixl_telemetry_service::ServeError> {
/// let config = ServiceConfig::default();
/// let listener = Service::bind(&config, "127.0.0.1:8080").await?;
/// let service = Service::start(config).await?;
/// service.serve(listener, std::future::pending()).await
/// # }
/// ```
pub struct Service {
    state: Arc<AppState>,
    writer: JoinHandle<()>,
    limits: ConnectionLimits,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("store", &self.state.store_kind)
            .finish()
    }
}

impl Service {
    /// Checks the builders against the registry and starts the writer thread, which
    /// opens the store (creating and migrating it as needed).
    pub async fn start(config: ServiceConfig) -> Result<Service, ServeError> {
        tokio::task::spawn_blocking(move || Service::start_blocking(config))
            .await
            .map_err(|e| ServeError::Server(std::io::Error::other(e)))?
    }

    fn start_blocking(config: ServiceConfig) -> Result<Service, ServeError> {
        let processor = ProcessorConfig {
            registry: config.registry.clone(),
            builders: config.builders.clone(),
        };
        processor.build().map(drop)?;
        let (queue, jobs) = mpsc::channel(QUEUE_LENGTH);
        let series = Arc::new(ServiceSeries::default());
        let writer = writer::spawn(
            config.store.clone(),
            processor.clone(),
            WriterLimits {
                max_batch: config.max_batch,
                max_keys: config.max_keys,
                store_timeout: config.store_timeout,
                commit_check_timeout: config.commit_check_timeout,
                max_envelope_skew: config.max_envelope_skew,
            },
            jobs,
            series.clone(),
        )?;
        let state = Arc::new(AppState {
            token: config.token,
            max_body_bytes: config.max_body_bytes,
            body_timeout: config.body_timeout,
            known_keys: http::KnownKeys::new(&config.registry),
            queue,
            readers: Arc::new(Pool::new(
                config.store.clone(),
                IDLE_READERS,
                config.store_timeout,
            )),
            store_timeout: config.store_timeout,
            reads: http::FullReads::new(config.max_concurrent_reads),
            store_kind: config.store.kind(),
            exposition: ExpositionState {
                series,
                bound: LabelBound::new(config.max_label_values),
                legacy_keys: config.metrics_legacy_keys,
            },
        });
        let limits = ConnectionLimits {
            timeouts: PhaseTimeouts {
                header: config.header_timeout,
                idle: config.idle_timeout,
            },
            max_connections: config.max_connections,
            shutdown_grace: config.shutdown_grace,
        };
        Ok(Service {
            state,
            writer,
            limits,
        })
    }

    /// Resolves `address` and binds the first of its addresses that works, after
    /// refusing a non-loopback one when `config` has no token and is not `insecure`.
    pub async fn bind(config: &ServiceConfig, address: &str) -> Result<TcpListener, ServeError> {
        let listen_error = |source| ServeError::Listen {
            address: address.to_owned(),
            source,
        };
        let candidates: Vec<SocketAddr> = tokio::net::lookup_host(address)
            .await
            .map_err(listen_error)?
            .collect();
        for candidate in &candidates {
            check_listen_address(*candidate, config.token.is_some(), config.insecure)?;
        }
        let mut last_error = None;
        for candidate in candidates {
            match TcpListener::bind(candidate).await {
                Ok(listener) => return Ok(listener),
                Err(e) => last_error = Some(e),
            }
        }
        Err(listen_error(last_error.unwrap_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::NotFound, "the name has no address")
        })))
    }

    /// The service's routes, to mount in another server or to test.
    pub fn router(&self) -> axum::Router {
        http::router(self.state.clone())
    }

    /// Serves on `listener` until `shutdown` completes, then lets the requests under
    /// way finish (within the shutdown grace), lets the writer apply what is
    /// queued, and returns.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let Service {
            state,
            writer,
            limits,
        } = self;
        let app = http::router(state);
        let result = connections::serve(listener, app, limits, shutdown)
            .await
            .map_err(ServeError::Server);
        // The routes (and with them the queue's last sender) are gone: the writer
        // applies what is left and stops.
        let _ = tokio::task::spawn_blocking(move || writer.join()).await;
        result
    }
}

/// Refuses a non-loopback address without a token, unless `insecure`.
pub fn check_listen_address(
    address: SocketAddr,
    has_token: bool,
    insecure: bool,
) -> Result<(), ServeError> {
    if address.ip().is_loopback() || has_token {
        return Ok(());
    }
    if insecure {
        tracing::warn!(
            "serving on {address} without authentication (--insecure): anyone who can reach it can post records and read the metrics"
        );
        return Ok(());
    }
    Err(ServeError::InsecureListen {
        address,
        token_variable: TOKEN_VARIABLE,
    })
}
