//! Errors of the HTTP API, each answered with a status code and a JSON body:
//! `{"error": "<kind>", "message": "<what was wrong and what is accepted>"}`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An error answered to the client.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// 400: the body is not a record the processor accepts (not UTF-8, not JSON, not an
    /// object, a value of the wrong type, a sum that overflows…).
    #[error("{0}")]
    BadRecord(String),
    /// 400: a key that is not an attribute of the registry.
    #[error("key `{key}` is not an attribute of the registry; the record's keys are {known}")]
    UnknownKey {
        /// The key.
        key: String,
        /// The keys accepted, comma-separated.
        known: String,
    },
    /// 400: an integer attribute beyond the bound every record is held to.
    #[error(
        "key `{key}`: {value} is beyond the bound of an integer attribute, at most {limit} \
         in size (2^33; about 272 years of seconds)"
    )]
    OutOfBounds {
        /// The key.
        key: String,
        /// The value as sent.
        value: String,
        /// The bound.
        limit: i64,
    },
    /// 422: the record would bring the number of distinct stored keys past the
    /// bound; records that only update stored keys are still taken.
    #[error(
        "the record would add metric keys past the bound of {limit} distinct keys the store \
         holds (--max-keys); records that update keys already stored are still accepted, \
         nothing of this one was stored"
    )]
    KeyLimit {
        /// The bound.
        limit: u64,
    },
    /// 401: missing or wrong credentials.
    #[error(
        "missing or wrong credentials: send the token as the password of HTTP Basic \
         credentials (any user name) or as `Authorization: Bearer <token>`"
    )]
    Unauthorized,
    /// 404: no such path.
    #[error("no resource at {path}; the service has POST and GET /api/v1/metrics, GET /metrics and GET /healthz")]
    NotFound {
        /// The path asked for.
        path: String,
    },
    /// 405: the path exists, the method does not.
    #[error("{method} is not allowed on {path}; allowed: {allowed}")]
    MethodNotAllowed {
        /// The method used.
        method: String,
        /// The path.
        path: String,
        /// The methods the path takes.
        allowed: String,
    },
    /// 408: the body did not arrive in time.
    #[error("the body did not arrive within {seconds} seconds")]
    Timeout {
        /// The time allowed.
        seconds: f64,
    },
    /// 413: the body is longer than the limit.
    #[error("the body is larger than the limit of {limit} bytes (one record is far smaller)")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// 415: a content type is given and it is not JSON.
    #[error(
        "content type `{given}` is not accepted: send application/json (or no content type; \
         the body is read as JSON)"
    )]
    UnsupportedMediaType {
        /// The content type given.
        given: String,
    },
    /// 503: the store cannot be used right now; nothing was stored.
    #[error("the store is unavailable, nothing was stored: {0}")]
    Unavailable(String),
    /// 503: the store stopped answering while committing the record and could not
    /// be asked since whether it did; the record may be stored.
    #[error(
        "the store stopped answering while committing the record and could not be asked \
         since whether the commit happened; the record may be stored: {0}"
    )]
    OutcomeUnknown(String),
    /// 503: as many full reads of the store as the service serves at once are
    /// under way; try again in a second.
    #[error(
        "{limit} full reads of the store are under way, the most this service serves at once \
         (serve --max-concurrent-reads); nothing was read, try again in a second"
    )]
    TooManyReads {
        /// The bound.
        limit: usize,
    },
    /// 500: the service cannot answer (a stored metric it cannot show).
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    /// The status code.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRecord(_) | ApiError::UnknownKey { .. } | ApiError::OutOfBounds { .. } => {
                StatusCode::BAD_REQUEST
            }
            ApiError::KeyLimit { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::NotFound { .. } => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Timeout { .. } => StatusCode::REQUEST_TIMEOUT,
            ApiError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType { .. } => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Unavailable(_)
            | ApiError::OutcomeUnknown(_)
            | ApiError::TooManyReads { .. } => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The short kind in the body's `error` member.
    pub fn kind(&self) -> &'static str {
        match self {
            ApiError::BadRecord(_) => "bad_record",
            ApiError::UnknownKey { .. } => "unknown_key",
            ApiError::OutOfBounds { .. } => "value_out_of_bounds",
            ApiError::KeyLimit { .. } => "key_limit_reached",
            ApiError::Unauthorized => "unauthorized",
            ApiError::NotFound { .. } => "not_found",
            ApiError::MethodNotAllowed { .. } => "method_not_allowed",
            ApiError::Timeout { .. } => "request_timeout",
            ApiError::TooLarge { .. } => "body_too_large",
            ApiError::UnsupportedMediaType { .. } => "unsupported_media_type",
            ApiError::Unavailable(_) => "store_unavailable",
            ApiError::OutcomeUnknown(_) => "store_outcome_unknown",
            ApiError::TooManyReads { .. } => "too_many_reads",
            ApiError::Internal(_) => "internal",
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({"error": self.kind(), "message": self.to_string()});
        if let ApiError::UnknownKey { key, .. } | ApiError::OutOfBounds { key, .. } = &self {
            body["key"] = json!(key);
        }
        let mut response = (
            self.status(),
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            format!("{body}\n"),
        )
            .into_response();
        match &self {
            ApiError::Unauthorized => {
                let headers = response.headers_mut();
                headers.append(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Basic realm=\"nixl-telemetry\", charset=\"UTF-8\""),
                );
                headers.append(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"nixl-telemetry\""),
                );
            }
            ApiError::MethodNotAllowed { allowed, .. } => {
                if let Ok(value) = HeaderValue::from_str(allowed) {
                    response.headers_mut().insert(header::ALLOW, value);
                }
            }
            ApiError::TooManyReads { .. } => {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            _ => {}
        }
        response
    }
}
