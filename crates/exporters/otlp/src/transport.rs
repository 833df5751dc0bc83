//! Posting encoded requests over HTTP (OTLP/HTTP, binary protobuf) and
//! classifying the answer as the OTLP specification asks: 2xx delivered
//! (maybe in part), 429/502/503/504 and network failures retried (honouring
//! `Retry-After`), every other status given up. One call is one attempt: when
//! to try again is the export thread's decision (`worker`).

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use flate2::write::GzEncoder;
use ureq::tls::{Certificate, RootCerts, TlsConfig};
use ureq::Agent;

use crate::error::OtlpError;
use crate::settings::{Compression, SignalSettings};

/// The longest `Retry-After` honoured; a longer one is cut to this.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(600);
/// The most bytes of a response body read.
const MAX_RESPONSE_BYTES: u64 = 64 * 1024;

/// What one attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// 2xx; the body, to be decoded for partial success.
    Delivered(Vec<u8>),
    /// Worth another attempt after the backoff: the collector answered 429,
    /// 502, 503 or 504, or no answer came within the timeout.
    Retry {
        /// Why the attempt failed.
        reason: String,
        /// How long the server asked us to wait (a readable `Retry-After`).
        after: Option<Duration>,
    },
    /// No answer at all: the connection was refused, reset or closed before
    /// an answer (a kept-alive connection the collector closed after a
    /// restart, say). Worth one more attempt at once, on a new connection.
    NoAnswer(String),
    /// Given up for good.
    Fail(String),
}

/// An HTTP client for one pipeline.
#[derive(Debug)]
pub(crate) struct Transport {
    agent: Agent,
}

impl Transport {
    /// A client; `https` loads the system's trust store (failing creation if
    /// it holds no certificate).
    pub(crate) fn new(https: bool) -> Result<Transport, OtlpError> {
        let mut config = Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent(concat!("nixl-telemetry-otlp/", env!("CARGO_PKG_VERSION")));
        if https {
            let found = rustls_native_certs::load_native_certs();
            if found.certs.is_empty() {
                let why = found
                    .errors
                    .iter()
                    .map(|e| e.to_string())
                    .collect::<Vec<_>>()
                    .join("; ");
                return Err(OtlpError::TrustStore(if why.is_empty() {
                    "it holds no certificate".to_owned()
                } else {
                    why
                }));
            }
            let certs: Vec<Certificate<'static>> = found
                .certs
                .iter()
                .map(|c| Certificate::from_der(c.as_ref()).to_owned())
                .collect();
            config = config.tls_config(
                TlsConfig::builder()
                    .root_certs(RootCerts::Specific(Arc::new(certs)))
                    .build(),
            );
        }
        Ok(Transport {
            agent: config.build().new_agent(),
        })
    }

    /// Posts `body` (already compressed as `signal` asks) once, within `timeout`.
    pub(crate) fn post(&self, signal: &SignalSettings, body: &[u8], timeout: Duration) -> Outcome {
        let mut request = self
            .agent
            .post(&signal.url)
            .header("Content-Type", "application/x-protobuf");
        if signal.compression == Compression::Gzip {
            request = request.header("Content-Encoding", "gzip");
        }
        for (name, value) in &signal.headers {
            request = request.header(name, value);
        }
        let request = request.config().timeout_global(Some(timeout)).build();
        let mut response = match request.send(body) {
            Ok(r) => r,
            Err(ureq::Error::Timeout(_)) => {
                return Outcome::Retry {
                    reason: format!("{}: timeout", signal.url),
                    after: None,
                }
            }
            Err(e) => return Outcome::NoAnswer(format!("cannot reach {}: {e}", signal.url)),
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, SystemTime::now()));
        let payload = response
            .body_mut()
            .with_config()
            .limit(MAX_RESPONSE_BYTES)
            .read_to_vec();
        match status {
            200..=299 => Outcome::Delivered(payload.unwrap_or_default()),
            429 | 502 | 503 | 504 => Outcome::Retry {
                reason: format!("{} answered {status}", signal.url),
                after: retry_after,
            },
            _ => {
                let text = payload
                    .map(|b| String::from_utf8_lossy(&b[..b.len().min(200)]).into_owned())
                    .unwrap_or_default();
                Outcome::Fail(format!("{} answered {status}: {text:?}", signal.url))
            }
        }
    }
}

/// Compresses `raw` into `out` as `compression` asks (a copy for none).
pub(crate) fn compress(compression: Compression, raw: &[u8], out: &mut Vec<u8>) {
    out.clear();
    match compression {
        Compression::None => out.extend_from_slice(raw),
        Compression::Gzip => {
            let mut encoder = GzEncoder::new(std::mem::take(out), flate2::Compression::fast());
            // Writing into a Vec cannot fail.
            let _ = encoder.write_all(raw);
            *out = encoder.finish().unwrap_or_default();
        }
    }
}

/// `Retry-After` as a delay: whole seconds, or an HTTP date (IMF-fixdate, or
/// the obsolete RFC 850 and asctime forms a recipient must also accept)
/// counted from `now`; cut to [`MAX_RETRY_AFTER`]. `None` if unreadable.
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    let delay = if let Ok(secs) = value.parse::<u64>() {
        Duration::from_secs(secs)
    } else {
        let at = httpdate::parse_http_date(value).ok()?;
        at.duration_since(now).unwrap_or(Duration::ZERO)
    };
    Some(delay.min(MAX_RETRY_AFTER))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_takes_seconds_or_a_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777);
        assert_eq!(parse_retry_after("3", now), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after(" 0 ", now), Some(Duration::ZERO));
        // 784111777 is Sun, 06 Nov 1994 08:49:37 GMT.
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:47 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("99999", now), Some(MAX_RETRY_AFTER));
        // The obsolete forms of the same moment.
        assert_eq!(
            parse_retry_after("Sunday, 06-Nov-94 08:49:47 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            parse_retry_after("Sun Nov  6 08:49:47 1994", now),
            Some(Duration::from_secs(10))
        );
        for bad in [
            "soon",
            "-1",
            "1.5",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Mon, 06 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 25:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "",
        ] {
            assert_eq!(parse_retry_after(bad, now), None, "{bad}");
        }
    }

    #[test]
    fn gzip_round_trips() {
        let raw = b"hello hello hello hello".repeat(10);
        let mut out = Vec::new();
        compress(Compression::Gzip, &raw, &mut out);
        let mut back = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(out.as_slice()), &mut back)
            .unwrap();
        assert_eq!(back, raw);
        compress(Compression::None, &raw, &mut out);
        assert_eq!(out, raw);
    }
}
