//! The exporter's configuration: the OpenTelemetry SDK's standard `OTEL_*`
//! variables with the meanings the specification gives them, and this
//! project's `NIXL_TELEMETRY_*` ones. Read once, when an exporter is created;
//! every unusable value fails creation with an error naming the variable.

use nixl_telemetry_abi::env::{EXPORTER_OUTPUT_PATH, HISTOGRAM_BUCKETS_US};
use std::time::Duration;

use nixl_telemetry_abi::buckets::{Buckets, BUCKETS_ACCEPTED, MAX_BUCKETS};
use nixl_telemetry_abi::env::{self, parse_switch};
use thiserror::Error;
use ureq::http::Uri;

/// `OTEL_EXPORTER_OTLP_ENDPOINT`: base URL; `/v1/metrics` and `/v1/logs` are appended.
pub const ENV_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`: the full metrics URL, used as is.
pub const ENV_METRICS_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT";
/// `OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`: the full logs URL, used as is.
pub const ENV_LOGS_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT";
/// `OTEL_EXPORTER_OTLP_HEADERS`: `key=value,...` sent with every request.
pub const ENV_HEADERS: &str = "OTEL_EXPORTER_OTLP_HEADERS";
/// `OTEL_EXPORTER_OTLP_TIMEOUT`: milliseconds one request may take.
pub const ENV_TIMEOUT: &str = "OTEL_EXPORTER_OTLP_TIMEOUT";
/// `OTEL_EXPORTER_OTLP_COMPRESSION`: `gzip` or `none`.
pub const ENV_COMPRESSION: &str = "OTEL_EXPORTER_OTLP_COMPRESSION";
/// `OTEL_EXPORTER_OTLP_PROTOCOL`: only `http/protobuf` is served.
pub const ENV_PROTOCOL: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
/// `OTEL_METRIC_EXPORT_INTERVAL`: milliseconds between two metric exports.
pub const ENV_EXPORT_INTERVAL: &str = "OTEL_METRIC_EXPORT_INTERVAL";
/// `OTEL_SERVICE_NAME`: the `service.name` resource attribute.
pub const ENV_SERVICE_NAME: &str = "OTEL_SERVICE_NAME";
/// `OTEL_RESOURCE_ATTRIBUTES`: `key=value,...` resource attributes.
pub const ENV_RESOURCE_ATTRIBUTES: &str = "OTEL_RESOURCE_ATTRIBUTES";
/// `NIXL_TELEMETRY_OTLP_EVENTS`: also send every event as an OTLP log record.
pub const ENV_EVENTS: &str = "NIXL_TELEMETRY_OTLP_EVENTS";
/// `NIXL_TELEMETRY_OTLP_QUEUE_EVENTS`: the most events waiting to be sent as logs.
pub const ENV_QUEUE_EVENTS: &str = "NIXL_TELEMETRY_OTLP_QUEUE_EVENTS";
/// How long the last export may hold up the host's unloading.
pub const ENV_SHUTDOWN_TIMEOUT: &str = env::SHUTDOWN_TIMEOUT_MS;

/// The base endpoint when none is configured (an OpenTelemetry Collector's
/// OTLP/HTTP receiver on this machine).
pub const DEFAULT_ENDPOINT: &str = "http://localhost:4318";
/// The specification's default request timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The specification's default metric export interval.
pub const DEFAULT_EXPORT_INTERVAL: Duration = Duration::from_secs(60);
/// `service.name` when neither [`ENV_SERVICE_NAME`] nor [`ENV_RESOURCE_ATTRIBUTES`] sets it.
pub const DEFAULT_SERVICE_NAME: &str = "nixl";
/// The default bound of the events queue ([`ENV_QUEUE_EVENTS`]).
pub const DEFAULT_QUEUE_EVENTS: usize = 65_536;
/// The largest accepted [`ENV_QUEUE_EVENTS`] (56 MiB of events).
pub const MAX_QUEUE_EVENTS: usize = 1 << 20;
/// The first retry delay after a failed request (before jitter).
pub const DEFAULT_RETRY_INITIAL: Duration = Duration::from_secs(1);
/// The longest retry delay (before jitter); `Retry-After` may ask for more.
pub const DEFAULT_RETRY_MAX: Duration = Duration::from_secs(30);
/// The largest accepted timeout or interval: one day.
pub const MAX_MILLIS: u64 = 86_400_000;

/// A configuration value the exporter cannot use; creation fails with it.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SettingsError {
    /// An endpoint is not an `http://` or `https://` URL.
    #[error("invalid {variable}={value:?}: {reason}; accepted: an http:// or https:// URL such as http://collector:4318")]
    Endpoint {
        /// The variable read.
        variable: String,
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A `key=value,...` list is malformed.
    #[error("invalid {variable}={value:?}: {reason}; accepted: comma-separated key=value pairs with percent-encoded values, such as key1=value1,key2=value%202")]
    List {
        /// The variable read.
        variable: String,
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A duration in milliseconds is not a positive integer.
    #[error("invalid {variable}={value:?}: accepted: a whole number of milliseconds from 1 to {MAX_MILLIS}")]
    Millis {
        /// The variable read.
        variable: String,
        /// The value given.
        value: String,
    },
    /// A compression other than `gzip` or `none`.
    #[error("invalid {variable}={value:?}: accepted: gzip or none")]
    Compression {
        /// The variable read.
        variable: String,
        /// The value given.
        value: String,
    },
    /// A protocol this exporter does not speak.
    #[error("unsupported {variable}={value:?}: this exporter sends OTLP over HTTP with protobuf; accepted: http/protobuf")]
    Protocol {
        /// The variable read.
        variable: String,
        /// The value given.
        value: String,
    },
    /// [`ENV_EVENTS`] is neither on nor off.
    #[error("invalid {ENV_EVENTS}={value:?}; accepted: on (y, yes, on, 1, true, enable) or off (n, no, off, 0, false, disable), case-insensitive")]
    Events {
        /// The value given.
        value: String,
    },
    /// [`ENV_QUEUE_EVENTS`] is not a number of events in range.
    #[error("invalid {ENV_QUEUE_EVENTS}={value:?}; accepted: a whole number of events from 1 to {MAX_QUEUE_EVENTS}")]
    QueueEvents {
        /// The value given.
        value: String,
    },
    /// [`HISTOGRAM_BUCKETS_US`] is not a list of strictly increasing positive numbers.
    #[error("invalid {HISTOGRAM_BUCKETS_US}={value:?}: {reason}; accepted: {BUCKETS_ACCEPTED} (at most {MAX_BUCKETS}; an overflow bucket is always added)")]
    Buckets {
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// Whether request bodies are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// Sent as is.
    #[default]
    None,
    /// `Content-Encoding: gzip`.
    Gzip,
}

/// Where and how one signal (metrics or logs) is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignalSettings {
    /// The URL requests are posted to.
    pub url: String,
    /// Extra request headers (name, value).
    pub headers: Vec<(String, String)>,
    /// The longest one request may take, connection included.
    pub timeout: Duration,
    /// Body compression.
    pub compression: Compression,
}

/// Everything an exporter is created with besides its agent's name. Agents of
/// one process whose settings are equal share one export.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// How metrics are sent.
    pub metrics: SignalSettings,
    /// How events are sent as logs (when [`Settings::events`] is on).
    pub logs: SignalSettings,
    /// Time between two metric exports.
    pub export_interval: Duration,
    /// Resource attributes, `service.name` first; `host.name` and
    /// `process.pid` are added when sending unless given here.
    pub resource: Vec<(String, String)>,
    /// The latency histograms' bounds.
    pub buckets: Buckets,
    /// Whether every event is also sent as a log record.
    pub events: bool,
    /// The most events waiting to be sent as logs; beyond it, batches are
    /// refused (and counted as lost by the host).
    pub queue_events: usize,
    /// The first retry delay; each further failure doubles it up to
    /// [`Settings::retry_max`], and each delay is jittered by ±50%.
    /// Not read from the environment ([`DEFAULT_RETRY_INITIAL`]).
    pub retry_initial: Duration,
    /// The longest retry delay before jitter ([`DEFAULT_RETRY_MAX`]).
    pub retry_max: Duration,
    /// The longest the last agent's exporter waits for the final export
    /// ([`ENV_SHUTDOWN_TIMEOUT`], by default
    /// [`env::DEFAULT_SHUTDOWN_TIMEOUT_MS`]); then it is abandoned.
    pub shutdown: Duration,
}

impl Settings {
    /// Settings sending to `base_url` (`/v1/metrics` and `/v1/logs` appended)
    /// with every other value at its default.
    pub fn new(base_url: &str) -> Result<Settings, SettingsError> {
        Settings::from_lookup(Some(base_url), |_| None)
    }

    /// Reads the process environment; `output_path` is the host's
    /// [`EXPORTER_OUTPUT_PATH`].
    pub fn from_env(output_path: Option<&str>) -> Result<Settings, SettingsError> {
        Settings::from_lookup(output_path, |name| {
            std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())
        })
    }

    /// Like [`Settings::from_env`], reading variables through `lookup`.
    ///
    /// Empty (or blank) variables count as unset, as the specification asks.
    /// A signal's URL is its `..._METRICS_ENDPOINT`/`..._LOGS_ENDPOINT` used as
    /// is; else the base URL — the output path when given, else
    /// [`ENV_ENDPOINT`], else [`DEFAULT_ENDPOINT`] — with `v1/metrics` or
    /// `v1/logs` appended to its path. Headers, timeout, compression and
    /// protocol may also be given per signal (`OTEL_EXPORTER_OTLP_METRICS_*`,
    /// `OTEL_EXPORTER_OTLP_LOGS_*`), which wins over the general variable.
    pub fn from_lookup(
        output_path: Option<&str>,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Settings, SettingsError> {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let base = match output_path.filter(|p| !p.trim().is_empty()) {
            Some(path) => Some((EXPORTER_OUTPUT_PATH, path.trim().to_owned())),
            None => get(ENV_ENDPOINT).map(|v| (ENV_ENDPOINT, v.trim().to_owned())),
        };
        let metrics = signal(&get, base.as_ref(), "METRICS", "v1/metrics")?;
        let logs = signal(&get, base.as_ref(), "LOGS", "v1/logs")?;
        let export_interval = match get(ENV_EXPORT_INTERVAL) {
            Some(v) => parse_millis(ENV_EXPORT_INTERVAL, &v)?,
            None => DEFAULT_EXPORT_INTERVAL,
        };
        let mut resource = match get(ENV_RESOURCE_ATTRIBUTES) {
            Some(v) => parse_pairs(ENV_RESOURCE_ATTRIBUTES, &v)?,
            None => Vec::new(),
        };
        let from_attributes = resource
            .iter()
            .position(|(k, _)| k == "service.name")
            .map(|i| resource.remove(i).1);
        let service = get(ENV_SERVICE_NAME)
            .map(|v| v.trim().to_owned())
            .or(from_attributes)
            .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned());
        resource.insert(0, ("service.name".to_owned(), service));
        let buckets = match get(HISTOGRAM_BUCKETS_US) {
            Some(v) => Buckets::parse(&v).map_err(|e| SettingsError::Buckets {
                reason: e.to_string(),
                value: v,
            })?,
            None => Buckets::default(),
        };
        let events = match get(ENV_EVENTS) {
            Some(v) => parse_switch(&v).ok_or(SettingsError::Events { value: v })?,
            None => false,
        };
        let queue_events = match get(ENV_QUEUE_EVENTS) {
            Some(v) => v
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_QUEUE_EVENTS).contains(n))
                .ok_or(SettingsError::QueueEvents { value: v })?,
            None => DEFAULT_QUEUE_EVENTS,
        };
        let shutdown = match get(ENV_SHUTDOWN_TIMEOUT) {
            Some(v) => parse_millis(ENV_SHUTDOWN_TIMEOUT, &v)?,
            None => Duration::from_millis(env::DEFAULT_SHUTDOWN_TIMEOUT_MS),
        };
        Ok(Settings {
            metrics,
            logs,
            export_interval,
            resource,
            buckets,
            events,
            queue_events,
            retry_initial: DEFAULT_RETRY_INITIAL,
            retry_max: DEFAULT_RETRY_MAX,
            shutdown,
        })
    }
}

/// The settings of one signal (`METRICS` or `LOGS`).
fn signal(
    get: &impl Fn(&str) -> Option<String>,
    base: Option<&(&str, String)>,
    signal: &str,
    path: &str,
) -> Result<SignalSettings, SettingsError> {
    let specific = |general: &str| {
        let name = general.replacen(
            "OTEL_EXPORTER_OTLP_",
            &format!("OTEL_EXPORTER_OTLP_{signal}_"),
            1,
        );
        match get(&name) {
            Some(v) => Some((name, v)),
            None => get(general).map(|v| (general.to_owned(), v)),
        }
    };
    let endpoint_var = format!("OTEL_EXPORTER_OTLP_{signal}_ENDPOINT");
    let url = match get(&endpoint_var) {
        Some(v) => check_url(&endpoint_var, v.trim())?,
        None => match base {
            Some((var, v)) => join_signal_path(&check_url(var, v)?, path),
            None => join_signal_path(DEFAULT_ENDPOINT, path),
        },
    };
    if let Some((var, v)) = specific(ENV_PROTOCOL) {
        if v.trim() != "http/protobuf" {
            return Err(SettingsError::Protocol {
                variable: var,
                value: v,
            });
        }
    }
    let headers = match specific(ENV_HEADERS) {
        Some((var, v)) => parse_headers(&var, &v)?,
        None => Vec::new(),
    };
    let timeout = match specific(ENV_TIMEOUT) {
        Some((var, v)) => parse_millis(&var, &v)?,
        None => DEFAULT_TIMEOUT,
    };
    let compression = match specific(ENV_COMPRESSION) {
        Some((var, v)) => match v.trim().to_ascii_lowercase().as_str() {
            "gzip" => Compression::Gzip,
            "none" => Compression::None,
            _ => {
                return Err(SettingsError::Compression {
                    variable: var,
                    value: v,
                })
            }
        },
        None => Compression::None,
    };
    Ok(SignalSettings {
        url,
        headers,
        timeout,
        compression,
    })
}

/// Checks that `value` is an absolute `http://` or `https://` URL with a host.
fn check_url(variable: &str, value: &str) -> Result<String, SettingsError> {
    let fail = |reason: &str| SettingsError::Endpoint {
        variable: variable.to_owned(),
        value: value.to_owned(),
        reason: reason.to_owned(),
    };
    if !value.contains("://") {
        return Err(fail("no http:// or https:// scheme"));
    }
    let uri: Uri = value.parse().map_err(|_| fail("not a URL"))?;
    match uri.scheme_str() {
        Some("http") | Some("https") => {}
        Some(other) => return Err(fail(&format!("the scheme {other:?} is not http or https"))),
        None => return Err(fail("no http:// or https:// scheme")),
    }
    match uri.authority() {
        Some(a) if !a.host().is_empty() => {}
        _ => return Err(fail("no host")),
    }
    if value.contains('#') {
        return Err(fail("a fragment (#...) has no meaning here"));
    }
    Ok(value.to_owned())
}

/// `base` with `path` appended to its path (one `/` between them), as the
/// specification builds signal URLs from `OTEL_EXPORTER_OTLP_ENDPOINT`.
fn join_signal_path(base: &str, path: &str) -> String {
    let (before_query, query) = match base.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (base, None),
    };
    // With no path (`http://host:4318`) or a path without a trailing slash,
    // one `/` separates the base from the signal's path.
    let mut url = before_query.to_owned();
    if !url.ends_with('/') {
        url.push('/');
    }
    url.push_str(path);
    if let Some(q) = query {
        url.push('?');
        url.push_str(q);
    }
    url
}

/// Parses a duration in whole milliseconds, 1 to [`MAX_MILLIS`].
fn parse_millis(variable: &str, value: &str) -> Result<Duration, SettingsError> {
    value
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|ms| (1..=MAX_MILLIS).contains(ms))
        .map(Duration::from_millis)
        .ok_or_else(|| SettingsError::Millis {
            variable: variable.to_owned(),
            value: value.to_owned(),
        })
}

/// Parses `key=value,...` with percent-encoded values (keys and values
/// trimmed; an empty entry between commas is skipped).
fn parse_pairs(variable: &str, value: &str) -> Result<Vec<(String, String)>, SettingsError> {
    let fail = |reason: String| SettingsError::List {
        variable: variable.to_owned(),
        value: value.to_owned(),
        reason,
    };
    let mut pairs = Vec::new();
    for (i, entry) in value.split(',').enumerate() {
        if entry.trim().is_empty() {
            continue;
        }
        let Some((k, v)) = entry.split_once('=') else {
            return Err(fail(format!(
                "entry {} ({:?}) has no '='",
                i + 1,
                entry.trim()
            )));
        };
        let key = percent_decode(k.trim()).ok_or_else(|| {
            fail(format!(
                "entry {} has a bad percent escape in its key",
                i + 1
            ))
        })?;
        if key.is_empty() {
            return Err(fail(format!("entry {} has an empty key", i + 1)));
        }
        let val = percent_decode(v.trim()).ok_or_else(|| {
            fail(format!(
                "entry {} ({key}) has a bad percent escape in its value",
                i + 1
            ))
        })?;
        pairs.retain(|(k, _): &(String, String)| *k != key);
        pairs.push((key, val));
    }
    Ok(pairs)
}

/// Parses [`ENV_HEADERS`]: pairs whose names are HTTP tokens and whose values
/// hold no control characters.
fn parse_headers(variable: &str, value: &str) -> Result<Vec<(String, String)>, SettingsError> {
    let pairs = parse_pairs(variable, value)?;
    for (k, v) in &pairs {
        let fail = |reason: String| SettingsError::List {
            variable: variable.to_owned(),
            value: value.to_owned(),
            reason,
        };
        let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
        if !k.chars().all(token) {
            return Err(fail(format!("{k:?} is not a valid HTTP header name")));
        }
        if v.chars().any(|c| c.is_control() && c != '\t') {
            return Err(fail(format!(
                "the value of header {k:?} holds a control character"
            )));
        }
        if k.eq_ignore_ascii_case("content-type") || k.eq_ignore_ascii_case("content-encoding") {
            return Err(fail(format!(
                "header {k:?} is set by the exporter and cannot be replaced"
            )));
        }
    }
    Ok(pairs)
}

/// Decodes `%XX` escapes (UTF-8); `None` on a bad escape (a `%` not followed
/// by two hexadecimal digits) or invalid UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let escapes_are_whole = text.split('%').skip(1).all(|after| {
        after
            .as_bytes()
            .get(..2)
            .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
    });
    if !escapes_are_whole {
        return None;
    }
    percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .ok()
        .map(|decoded| decoded.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(output: Option<&str>, vars: &[(&str, &str)]) -> Result<Settings, SettingsError> {
        let map: HashMap<&str, &str> = vars.iter().copied().collect();
        Settings::from_lookup(output, |k| map.get(k).map(|v| v.to_string()))
    }

    #[test]
    fn defaults_follow_the_specification() {
        let s = settings(None, &[]).unwrap();
        assert_eq!(s.metrics.url, "http://localhost:4318/v1/metrics");
        assert_eq!(s.logs.url, "http://localhost:4318/v1/logs");
        assert_eq!(s.metrics.timeout, Duration::from_secs(10));
        assert_eq!(s.metrics.compression, Compression::None);
        assert_eq!(s.export_interval, Duration::from_secs(60));
        assert_eq!(s.resource, [("service.name".to_owned(), "nixl".to_owned())]);
        assert!(!s.events);
        assert_eq!(s.queue_events, DEFAULT_QUEUE_EVENTS);
        assert_eq!(s.buckets, Buckets::default());
    }

    #[test]
    fn signal_paths_are_appended_to_the_base_but_not_to_signal_urls() {
        for (base, metrics) in [
            ("http://c:4318", "http://c:4318/v1/metrics"),
            ("http://c:4318/", "http://c:4318/v1/metrics"),
            ("https://c/otlp", "https://c/otlp/v1/metrics"),
            ("https://c/otlp/", "https://c/otlp/v1/metrics"),
            ("http://c:4318?x=1", "http://c:4318/v1/metrics?x=1"),
        ] {
            let s = settings(None, &[(ENV_ENDPOINT, base)]).unwrap();
            assert_eq!(s.metrics.url, metrics, "{base}");
        }
        let s = settings(
            None,
            &[
                (ENV_ENDPOINT, "http://c:4318"),
                (ENV_METRICS_ENDPOINT, "http://m:9/custom"),
            ],
        )
        .unwrap();
        assert_eq!(s.metrics.url, "http://m:9/custom");
        assert_eq!(s.logs.url, "http://c:4318/v1/logs");
        let s = settings(None, &[(ENV_LOGS_ENDPOINT, "https://l")]).unwrap();
        assert_eq!(s.logs.url, "https://l");
    }

    #[test]
    fn the_output_path_is_a_base_url_that_wins_over_the_general_endpoint() {
        let s = settings(
            Some("http://127.0.0.1:5000"),
            &[(ENV_ENDPOINT, "http://other:4318")],
        )
        .unwrap();
        assert_eq!(s.metrics.url, "http://127.0.0.1:5000/v1/metrics");
        let err = settings(Some("/tmp/rings"), &[]).unwrap_err();
        assert!(err.to_string().contains(EXPORTER_OUTPUT_PATH), "{err}");
    }

    #[test]
    fn bad_endpoints_name_the_variable() {
        for (bad, reason) in [
            ("localhost:4318", "scheme"),
            ("ftp://c", "not http or https"),
            ("http://", "not a URL"),
            ("c:4318/x", "scheme"),
            ("http://c/#x", "fragment"),
        ] {
            let err = settings(None, &[(ENV_METRICS_ENDPOINT, bad)]).unwrap_err();
            let text = err.to_string();
            assert!(text.contains(ENV_METRICS_ENDPOINT), "{text}");
            assert!(text.contains(reason), "{bad}: {text}");
        }
    }

    #[test]
    fn headers_are_decoded_and_checked() {
        let s = settings(
            None,
            &[(ENV_HEADERS, "Authorization=Bearer%20abc, x-tenant = a=b ,,")],
        )
        .unwrap();
        assert_eq!(
            s.metrics.headers,
            [
                ("Authorization".to_owned(), "Bearer abc".to_owned()),
                ("x-tenant".to_owned(), "a=b".to_owned()),
            ]
        );
        assert_eq!(s.logs.headers, s.metrics.headers);
        let s = settings(
            None,
            &[
                (ENV_HEADERS, "a=1"),
                ("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "b=2"),
            ],
        )
        .unwrap();
        assert_eq!(s.metrics.headers, [("b".to_owned(), "2".to_owned())]);
        assert_eq!(s.logs.headers, [("a".to_owned(), "1".to_owned())]);
        for (bad, reason) in [
            ("novalue", "no '='"),
            ("=x", "empty key"),
            ("a b=1", "not a valid HTTP header name"),
            ("a=%zz", "percent"),
            ("a=%2", "percent"),
            ("a=x%", "percent"),
            ("a=%ff", "percent"),
            ("a=%0a", "control"),
            ("content-type=text/plain", "cannot be replaced"),
        ] {
            let err = settings(None, &[(ENV_HEADERS, bad)]).unwrap_err();
            let text = err.to_string();
            assert!(text.contains(ENV_HEADERS), "{text}");
            assert!(text.contains(reason), "{bad}: {text}");
        }
        let err = settings(None, &[("OTEL_EXPORTER_OTLP_LOGS_HEADERS", "x")]).unwrap_err();
        assert!(err.to_string().contains("OTEL_EXPORTER_OTLP_LOGS_HEADERS"));
    }

    #[test]
    fn percent_escapes_decode_to_utf8() {
        assert_eq!(percent_decode("a%2Fb%20c").as_deref(), Some("a/b c"));
        assert_eq!(percent_decode("caf%C3%A9").as_deref(), Some("café"));
        assert_eq!(percent_decode("plain").as_deref(), Some("plain"));
        assert_eq!(percent_decode("%25").as_deref(), Some("%"));
        for bad in ["%", "%4", "x%g0", "%C3", "%ff%fe"] {
            assert_eq!(percent_decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn timeouts_intervals_and_compression() {
        let s = settings(
            None,
            &[
                (ENV_TIMEOUT, "2500"),
                (ENV_EXPORT_INTERVAL, " 1000 "),
                (ENV_COMPRESSION, "GZIP"),
                ("OTEL_EXPORTER_OTLP_LOGS_COMPRESSION", "none"),
            ],
        )
        .unwrap();
        assert_eq!(s.metrics.timeout, Duration::from_millis(2500));
        assert_eq!(s.export_interval, Duration::from_secs(1));
        assert_eq!(s.metrics.compression, Compression::Gzip);
        assert_eq!(s.logs.compression, Compression::None);
        for (var, bad) in [
            (ENV_TIMEOUT, "0"),
            (ENV_TIMEOUT, "1.5"),
            (ENV_TIMEOUT, "-1"),
            (ENV_EXPORT_INTERVAL, "10s"),
            (ENV_EXPORT_INTERVAL, "86400001"),
        ] {
            let err = settings(None, &[(var, bad)]).unwrap_err();
            assert!(
                matches!(&err, SettingsError::Millis { variable, .. } if variable == var),
                "{err}"
            );
            assert!(err.to_string().contains("milliseconds"), "{err}");
        }
        let err = settings(None, &[(ENV_COMPRESSION, "zstd")]).unwrap_err();
        assert!(err.to_string().contains("gzip or none"), "{err}");
        assert!(err.to_string().contains(ENV_COMPRESSION), "{err}");
    }

    #[test]
    fn only_http_protobuf_is_accepted() {
        assert!(settings(None, &[(ENV_PROTOCOL, "http/protobuf")]).is_ok());
        for bad in ["grpc", "http/json"] {
            let err = settings(None, &[(ENV_PROTOCOL, bad)]).unwrap_err();
            assert!(err.to_string().contains("http/protobuf"), "{err}");
        }
        let err = settings(None, &[("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc")]).unwrap_err();
        assert!(err
            .to_string()
            .contains("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"));
    }

    #[test]
    fn service_name_and_resource_attributes() {
        let s = settings(
            None,
            &[(
                ENV_RESOURCE_ATTRIBUTES,
                "deployment.environment=prod,service.name=from-attrs,rack=r%2F1",
            )],
        )
        .unwrap();
        assert_eq!(
            s.resource,
            [
                ("service.name".to_owned(), "from-attrs".to_owned()),
                ("deployment.environment".to_owned(), "prod".to_owned()),
                ("rack".to_owned(), "r/1".to_owned()),
            ]
        );
        let s = settings(
            None,
            &[
                (ENV_RESOURCE_ATTRIBUTES, "service.name=from-attrs"),
                (ENV_SERVICE_NAME, "trainer"),
            ],
        )
        .unwrap();
        assert_eq!(
            s.resource,
            [("service.name".to_owned(), "trainer".to_owned())]
        );
        let err = settings(None, &[(ENV_RESOURCE_ATTRIBUTES, "a=1,b")]).unwrap_err();
        assert!(err.to_string().contains(ENV_RESOURCE_ATTRIBUTES), "{err}");
        assert!(err.to_string().contains("entry 2"), "{err}");
    }

    #[test]
    fn events_queue_and_buckets() {
        let s = settings(
            None,
            &[
                (ENV_EVENTS, "Yes"),
                (ENV_QUEUE_EVENTS, "128"),
                (HISTOGRAM_BUCKETS_US, "5,50"),
            ],
        )
        .unwrap();
        assert!(s.events);
        assert_eq!(s.queue_events, 128);
        assert_eq!(s.buckets.bounds(), &[5.0, 50.0]);
        let err = settings(None, &[(ENV_EVENTS, "maybe")]).unwrap_err();
        assert!(err.to_string().contains(ENV_EVENTS));
        for bad in ["0", "x", "2000000"] {
            let err = settings(None, &[(ENV_QUEUE_EVENTS, bad)]).unwrap_err();
            assert!(err.to_string().contains(ENV_QUEUE_EVENTS), "{err}");
        }
        let err = settings(None, &[(HISTOGRAM_BUCKETS_US, "10,5")]).unwrap_err();
        assert!(err.to_string().contains(HISTOGRAM_BUCKETS_US), "{err}");
    }

    #[test]
    fn blank_values_are_unset() {
        let s = settings(
            Some(" "),
            &[(ENV_ENDPOINT, " "), (ENV_TIMEOUT, ""), (ENV_HEADERS, "  ")],
        )
        .unwrap();
        assert_eq!(s.metrics.url, "http://localhost:4318/v1/metrics");
        assert_eq!(s.metrics.timeout, DEFAULT_TIMEOUT);
        assert!(s.metrics.headers.is_empty());
    }
}
