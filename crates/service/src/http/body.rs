//! The body of `POST /api/v1/metrics`: one record, read as JSON when no content type
//! is given (TAO's client sends none), refused when another type is given, when it
//! is longer than the limit or late (the router's `tower-http` layers bound both;
//! this names the failure), not UTF-8, not a JSON object, or names a key the
//! attribute registry does not know.

use std::collections::HashSet;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderValue, StatusCode};
use nixl_telemetry_processor::{
    parse_input_line, AttributeRegistry, AttributeType, JsonNumber, JsonValue,
};
use tower_http::timeout::TimeoutError;

use super::error::ApiError;
use super::AppState;
use crate::record_rules::MAX_INTEGER_VALUE;

/// A record's text, checked: UTF-8, a JSON object (or a `{"now": …, "record": {…}}`
/// envelope) whose keys are all attributes of the registry.
pub(crate) struct RecordBody(pub String);

impl FromRequest<Arc<AppState>> for RecordBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &Arc<AppState>) -> Result<Self, ApiError> {
        if let Some(given) = request.headers().get(header::CONTENT_TYPE) {
            if !is_json(given) {
                return Err(ApiError::UnsupportedMediaType {
                    given: String::from_utf8_lossy(given.as_bytes()).into_owned(),
                });
            }
        }
        let bytes =
            Bytes::from_request(request, state)
                .await
                .map_err(|rejection| match rejection.status() {
                    StatusCode::PAYLOAD_TOO_LARGE => ApiError::TooLarge {
                        limit: state.max_body_bytes,
                    },
                    _ if caused_by::<TimeoutError>(&rejection) => ApiError::Timeout {
                        seconds: state.body_timeout.as_secs_f64(),
                    },
                    _ => ApiError::BadRecord(format!(
                        "the body could not be read: {}",
                        rejection.body_text()
                    )),
                })?;
        let text = String::from_utf8(bytes.into()).map_err(|e| {
            ApiError::BadRecord(format!(
                "the body is not UTF-8 text (invalid bytes at offset {}); send the record as UTF-8 JSON",
                e.utf8_error().valid_up_to()
            ))
        })?;
        state.known_keys.check(&text)?;
        Ok(RecordBody(text))
    }
}

/// Whether `error` or one of its sources is an `E`.
fn caused_by<E: std::error::Error + 'static>(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if error.is::<E>() {
            return true;
        }
        cause = error.source();
    }
    false
}

/// Whether a content type is JSON: `application/json` or `application/…+json`, with a
/// UTF-8 charset if one is named.
fn is_json(value: &HeaderValue) -> bool {
    let Ok(text) = value.to_str() else {
        return false;
    };
    let mut parts = text.split(';');
    let essence = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
    let json = essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"));
    json && parts.all(|parameter| match parameter.split_once('=') {
        Some((name, value)) if name.trim().eq_ignore_ascii_case("charset") => {
            let value = value.trim().trim_matches('"');
            value.eq_ignore_ascii_case("utf-8") || value.eq_ignore_ascii_case("utf8")
        }
        _ => true,
    })
}

/// The raw keys a record may have (the registry's), and which of them hold integers
/// (bounded by [`MAX_INTEGER_VALUE`]).
#[derive(Debug)]
pub(crate) struct KnownKeys {
    keys: HashSet<String>,
    integers: HashSet<String>,
    /// For messages, in registry order.
    listed: String,
}

impl KnownKeys {
    pub fn new(registry: &AttributeRegistry) -> KnownKeys {
        let raw: Vec<&str> = registry
            .attributes()
            .iter()
            .map(|a| a.raw_key.as_str())
            .collect();
        KnownKeys {
            keys: raw.iter().map(|k| (*k).to_owned()).collect(),
            integers: registry
                .attributes()
                .iter()
                .filter(|a| a.attr_type == AttributeType::Integer)
                .map(|a| a.raw_key.clone())
                .collect(),
            listed: raw.join(", "),
        }
    }

    /// Checks that `text` is a record (or an envelope) with known keys only, and
    /// integer attributes within [`MAX_INTEGER_VALUE`].
    pub fn check(&self, text: &str) -> Result<(), ApiError> {
        let line = parse_input_line(text).map_err(|e| ApiError::BadRecord(e.to_string()))?;
        for (key, value) in line.record.fields() {
            if !self.keys.contains(key.as_ref()) {
                return Err(ApiError::UnknownKey {
                    key: key.to_string(),
                    known: self.listed.clone(),
                });
            }
            if !self.integers.contains(key.as_ref()) {
                continue;
            }
            let beyond = match value {
                JsonValue::Number(JsonNumber::PosInt(n)) => {
                    (*n > MAX_INTEGER_VALUE as u64).then(|| n.to_string())
                }
                JsonValue::Number(JsonNumber::NegInt(n)) => {
                    (*n < -MAX_INTEGER_VALUE).then(|| n.to_string())
                }
                _ => None,
            };
            if let Some(value) = beyond {
                return Err(ApiError::OutOfBounds {
                    key: key.to_string(),
                    value,
                    limit: MAX_INTEGER_VALUE,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_content_types() {
        for yes in [
            "application/json",
            "Application/JSON",
            "application/json; charset=utf-8",
            "application/json;charset=\"UTF-8\"",
            "application/vnd.api+json",
        ] {
            assert!(is_json(&HeaderValue::from_static(yes)), "{yes}");
        }
        for no in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "application/json; charset=latin1",
            "text/json+xml",
            "",
        ] {
            assert!(!is_json(&HeaderValue::from_static(no)), "{no}");
        }
    }

    #[test]
    fn unknown_keys_are_named() {
        let known = KnownKeys::new(&AttributeRegistry::default());
        known.check(r#"{"action": "train", "gpu": []}"#).unwrap();
        known
            .check(r#"{"now": "2025-01-13T00:00:00", "record": {"action": "train"}}"#)
            .unwrap();
        let err = known
            .check(r#"{"action": "train", "colour": "red"}"#)
            .unwrap_err();
        assert!(matches!(&err, ApiError::UnknownKey { key, .. } if key == "colour"));
        assert!(
            err.to_string().contains("version, action, network"),
            "{err}"
        );
        let err = known
            .check(r#"{"now": null, "record": {"gpus": ["A100"]}}"#)
            .unwrap_err();
        assert!(matches!(&err, ApiError::UnknownKey { key, .. } if key == "gpus"));
        assert!(matches!(known.check("[]"), Err(ApiError::BadRecord(_))));
    }

    #[test]
    fn integer_attributes_are_bounded() {
        let known = KnownKeys::new(&AttributeRegistry::default());
        known
            .check(&format!(r#"{{"time_lapsed": {MAX_INTEGER_VALUE}}}"#))
            .unwrap();
        known
            .check(&format!(r#"{{"time_lapsed": -{MAX_INTEGER_VALUE}}}"#))
            .unwrap();
        for beyond in [
            (MAX_INTEGER_VALUE + 1).to_string(),
            (-MAX_INTEGER_VALUE - 1).to_string(),
            i64::MAX.to_string(),
        ] {
            let err = known
                .check(&format!(
                    r#"{{"action": "train", "time_lapsed": {beyond}}}"#
                ))
                .unwrap_err();
            assert!(
                matches!(&err, ApiError::OutOfBounds { key, value, .. } if key == "time_lapsed" && *value == beyond),
                "{err}"
            );
        }
    }
}
