//! The HTTP API.
//!
//! | route | answer |
//! | --- | --- |
//! | `POST /api/v1/metrics` | `201` and the record's metrics once it is stored |
//! | `GET /api/v1/metrics` | the whole map as JSON (as `nixl-telemetry process` writes it) |
//! | `GET /metrics` | Prometheus text: the labeled families read from the store and the instance's own series |
//! | `GET /healthz` | `200` when the store answers, `503` when not (never asks for a token) |
//!
//! The first three ask for the token when one is configured. Every error is a JSON
//! body naming what was wrong ([`ApiError`]).

mod auth;
mod body;
mod error;
mod exposition;
mod label_bound;
mod service_series;
mod shared_read;
mod stored_families;
mod text_format;

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{middleware, Router};
use serde_json::json;
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::RequestBodyTimeoutLayer;
use tower_http::trace::TraceLayer;

pub use auth::{Token, TOKEN_VARIABLE};
pub use error::ApiError;
pub(crate) use exposition::ExpositionState;
pub(crate) use label_bound::LabelBound;
pub(crate) use service_series::{ServiceSeries, StoreOperation};
use shared_read::SharedRead;

use crate::store::Pool;
use crate::writer::{Claim, Outcome, RecordJob};
pub(crate) use body::KnownKeys;
use body::RecordBody;

/// What the handlers share.
pub(crate) struct AppState {
    pub token: Option<Token>,
    pub max_body_bytes: usize,
    pub body_timeout: std::time::Duration,
    pub known_keys: KnownKeys,
    pub queue: mpsc::Sender<RecordJob>,
    pub readers: Arc<Pool>,
    pub store_kind: &'static str,
    /// What `GET /metrics` shows besides the store, and the own series.
    pub exposition: ExpositionState,
    /// How long a post waits for room in the writer's queue.
    pub store_timeout: std::time::Duration,
    /// The full reads of the store (both `GET`s) served at once.
    pub reads: FullReads,
}

/// The bound on full reads served at once, and the reads requests share.
pub(crate) struct FullReads {
    limit: usize,
    permits: Arc<Semaphore>,
    /// The JSON map (or why the store could not be read).
    json: SharedRead<Result<Bytes, String>>,
    /// The stored families' text (`None`: the store could not be read).
    families: SharedRead<Option<Bytes>>,
}

impl FullReads {
    /// At most `limit` full reads at once (at least one).
    pub fn new(limit: usize) -> FullReads {
        let limit = limit.max(1);
        FullReads {
            limit,
            permits: Arc::new(Semaphore::new(limit)),
            json: SharedRead::default(),
            families: SharedRead::default(),
        }
    }
}

/// A full read under way: counted in the own series while it lasts.
struct ReadPermit {
    _permit: OwnedSemaphorePermit,
    series: Arc<ServiceSeries>,
}

impl Drop for ReadPermit {
    fn drop(&mut self) {
        self.series.read_finished();
    }
}

/// A permit for one more full read, or `503 too_many_reads` when the bound is
/// reached (counted).
fn read_permit(state: &AppState) -> Result<ReadPermit, ApiError> {
    let series = state.exposition.series.clone();
    match state.reads.permits.clone().try_acquire_owned() {
        Ok(permit) => {
            series.read_started();
            Ok(ReadPermit {
                _permit: permit,
                series,
            })
        }
        Err(_) => {
            series.read_refused();
            Err(ApiError::TooManyReads {
                limit: state.reads.limit,
            })
        }
    }
}

/// The longest `/healthz` takes to answer.
const HEALTH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

/// The service's routes over `state`, under `tower-http` layers: request tracing
/// (a `tracing` span per request, DEBUG), the body's time limit and its length
/// limit (an announced length over it is refused before anything is read).
pub(crate) fn router(state: Arc<AppState>) -> Router {
    let max_body_bytes = state.max_body_bytes;
    Router::new()
        .route("/api/v1/metrics", get(get_metrics_json).post(post_record))
        .route("/metrics", get(get_metrics_prometheus))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            auth::require_token,
        ))
        .route("/healthz", get(healthz))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        // The length limit is the layer's, not axum's default.
        .layer(DefaultBodyLimit::disable())
        .layer(RequestBodyLimitLayer::new(max_body_bytes))
        .layer(middleware::map_response(
            move |response: Response| async move { json_too_large(response, max_body_bytes) },
        ))
        .layer(RequestBodyTimeoutLayer::new(state.body_timeout))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// The length limit layer's own 413 (plain text), as the API's JSON error.
fn json_too_large(response: Response, limit: usize) -> Response {
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|t| t.as_bytes().starts_with(b"application/json"));
    if response.status() == StatusCode::PAYLOAD_TOO_LARGE && !is_json {
        return ApiError::TooLarge { limit }.into_response();
    }
    response
}

/// `POST /api/v1/metrics`: queues the record for the store's writer and answers
/// once it is committed.
async fn post_record(
    State(state): State<Arc<AppState>>,
    body: Result<RecordBody, ApiError>,
) -> Result<Response, ApiError> {
    // The writer counts the records it decides on; the refusals before it are
    // counted here.
    let refused = |error: ApiError| {
        state.exposition.series.refused(error.kind());
        error
    };
    let RecordBody(body) = body.map_err(refused)?;
    let (reply, mut outcome) = oneshot::channel();
    let claim = Arc::new(Claim::default());
    let job = RecordJob {
        body,
        reply,
        queued: std::time::Instant::now(),
        claim: claim.clone(),
    };
    // Given up before it is queued, a record is never applied.
    tokio::time::timeout(state.store_timeout, state.queue.send(job))
        .await
        .map_err(|_| {
            refused(ApiError::Unavailable(format!(
                "the store's writer had no room for the record within {} s",
                state.store_timeout.as_secs_f64()
            )))
        })?
        .map_err(|_| {
            refused(ApiError::Unavailable(
                "the store's writer has stopped".into(),
            ))
        })?;
    let stopped = |_| {
        refused(ApiError::Unavailable(
            "the store's writer has stopped".into(),
        ))
    };
    let outcome = match tokio::time::timeout(state.store_timeout, &mut outcome).await {
        Ok(outcome) => outcome.map_err(stopped)?,
        // Still queued: given up, it is never applied.
        Err(_) if claim.abandon() => {
            return Err(refused(ApiError::Unavailable(format!(
                "the store's writer did not reach the record within {} s",
                state.store_timeout.as_secs_f64()
            ))))
        }
        // In a transaction: its outcome comes within the store's own bounds.
        Err(_) => outcome.await.map_err(stopped)?,
    };
    match outcome {
        Outcome::Applied(applied) => {
            let metrics: serde_json::Map<String, serde_json::Value> = applied
                .metrics
                .into_iter()
                .map(|(k, v)| (k, json!(v)))
                .collect();
            let body = json!({"last_updated": applied.last_updated, "metrics": metrics});
            Ok((StatusCode::CREATED, json_body(format!("{body}\n"))).into_response())
        }
        Outcome::Rejected(reason) => Err(ApiError::BadRecord(reason)),
        Outcome::KeyLimit(limit) => Err(ApiError::KeyLimit { limit }),
        Outcome::Unavailable(reason) => Err(ApiError::Unavailable(reason)),
        Outcome::Unknown(reason) => Err(ApiError::OutcomeUnknown(reason)),
    }
}

/// `GET /api/v1/metrics`: the map as sorted JSON.
async fn get_metrics_json(State(state): State<Arc<AppState>>) -> Result<Response, ApiError> {
    let arrived = std::time::Instant::now();
    let permit = read_permit(&state)?;
    let text = blocking(move || {
        let _permit = permit;
        state
            .reads
            .json
            .get(arrived, || {
                snapshot(&state)
                    .map(|m| Bytes::from(m.to_json_string()))
                    .map_err(|e| e.to_string())
            })
            .map_err(ApiError::Unavailable)
    })
    .await?;
    Ok(json_body(text).into_response())
}

/// The stored map, the read timed in the own series.
fn snapshot(state: &AppState) -> Result<nixl_telemetry_processor::Metrics, crate::StoreError> {
    let started = std::time::Instant::now();
    let result = state.readers.with(|c| c.snapshot());
    state
        .exposition
        .series
        .store(StoreOperation::Read, started.elapsed(), result.is_ok());
    result
}

/// `GET /metrics`: the families as Prometheus text (`200` even when the store
/// cannot be read: the own series say so).
async fn get_metrics_prometheus(State(state): State<Arc<AppState>>) -> Result<Response, ApiError> {
    let arrived = std::time::Instant::now();
    let permit = read_permit(&state)?;
    let text = blocking(move || {
        let _permit = permit;
        let stored = state.reads.families.get(arrived, || {
            snapshot(&state)
                .inspect_err(|e| tracing::warn!("GET /metrics: {e}"))
                .ok()
                .map(|m| Bytes::from(exposition::stored_families(&state.exposition, &m)))
        });
        let stored = stored
            .as_deref()
            .map(|b| std::str::from_utf8(b).unwrap_or(""));
        Ok(exposition::exposition_of(&state.exposition, stored))
    })
    .await?;
    Ok((
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        text,
    )
        .into_response())
}

/// `GET /healthz`: whether the store answers, takes writes when the last write
/// failed (a full disk fails writes only), and the writer runs.
async fn healthz(State(state): State<Arc<AppState>>) -> Response {
    let readers = state.readers.clone();
    let series = state.exposition.series.clone();
    let ping = blocking(move || {
        readers
            .with(|c| {
                c.ping()?;
                if series.write_failed() {
                    c.probe_write()?;
                    series.write_probed();
                }
                Ok(())
            })
            .map_err(|e| ApiError::Unavailable(e.to_string()))
    });
    let store = match tokio::time::timeout(HEALTH_TIMEOUT, ping).await {
        Ok(answer) => answer,
        Err(_) => Err(ApiError::Unavailable(format!(
            "the store did not answer within {} s",
            HEALTH_TIMEOUT.as_secs_f64()
        ))),
    };
    let problem = match (store, state.queue.is_closed()) {
        (Err(e), _) => Some(e.to_string()),
        (Ok(()), true) => Some("the store's writer has stopped".to_owned()),
        (Ok(()), false) => None,
    };
    let (status, body) = match problem {
        None => (
            StatusCode::OK,
            json!({"status": "ok", "store": state.store_kind}),
        ),
        Some(message) => (
            StatusCode::SERVICE_UNAVAILABLE,
            json!({"status": "unavailable", "store": state.store_kind, "message": message}),
        ),
    };
    (status, json_body(format!("{body}\n"))).into_response()
}

async fn not_found(uri: Uri) -> ApiError {
    ApiError::NotFound {
        path: uri.path().to_owned(),
    }
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    let allowed = match uri.path() {
        "/api/v1/metrics" => "GET, HEAD, POST",
        _ => "GET, HEAD",
    };
    ApiError::MethodNotAllowed {
        method: method.to_string(),
        path: uri.path().to_owned(),
        allowed: allowed.to_owned(),
    }
}

/// A JSON body with its content type.
fn json_body(text: impl IntoResponse) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        text,
    )
}

/// Runs store work on tokio's blocking threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ApiError::Internal(format!("the request's work failed: {e}")))?
}
