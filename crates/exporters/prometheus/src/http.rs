//! The little HTTP/1.1 the endpoint speaks: parsing a request head, choosing
//! the exposition format from `Accept`, and writing response heads.

use std::borrow::Cow;

use crate::render::Format;

/// The path metrics are served on.
pub const METRICS_PATH: &str = "/metrics";

/// `Content-Type` of the text format 0.0.4.
pub const TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
/// `Content-Type` of OpenMetrics 1.0.0.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// `Content-Type` of OpenMetrics when the client accepts only version 0.0.1
/// (the same text as 1.0.0).
const OPENMETRICS_001_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=0.0.1; charset=utf-8";

/// A request method, as far as the endpoint cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Get,
    Head,
    Other,
}

/// A parsed request head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    pub(crate) method: Method,
    /// Whether the path (without query) is [`METRICS_PATH`].
    pub(crate) metrics: bool,
    /// Whether the connection may be kept open after the response.
    pub(crate) keep_alive: bool,
    /// The format and content type chosen from `Accept`.
    pub(crate) format: Format,
    pub(crate) content_type: &'static str,
    /// Whether `Accept-Encoding` allows gzip.
    pub(crate) gzip: bool,
}

/// What a buffer of received bytes holds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Parsed {
    /// No complete head yet.
    Incomplete,
    /// A head of `consumed` bytes.
    Complete { request: Request, consumed: usize },
    /// Not a request we can answer: reply with this status and close.
    Invalid(Status),
}

/// A response status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Ok,
    BadRequest,
    NotFound,
    MethodNotAllowed,
    HeadersTooLarge,
    VersionNotSupported,
}

impl Status {
    fn line(self) -> &'static str {
        match self {
            Status::Ok => "200 OK",
            Status::BadRequest => "400 Bad Request",
            Status::NotFound => "404 Not Found",
            Status::MethodNotAllowed => "405 Method Not Allowed",
            Status::HeadersTooLarge => "431 Request Header Fields Too Large",
            Status::VersionNotSupported => "505 HTTP Version Not Supported",
        }
    }

    /// The short plain-text body of an error status.
    pub(crate) fn body(self) -> &'static [u8] {
        match self {
            Status::Ok => b"",
            Status::BadRequest => b"bad request\n",
            Status::NotFound => b"not found: metrics are served at /metrics\n",
            Status::MethodNotAllowed => b"method not allowed: use GET or HEAD\n",
            Status::HeadersTooLarge => b"request head too large\n",
            Status::VersionNotSupported => b"only HTTP/1.0 and HTTP/1.1 are supported\n",
        }
    }
}

/// Header slots of one request head: a head with more header lines is
/// answered `431`. Scrapers send about five.
pub(crate) const MAX_HEADERS: usize = 64;

/// Parses the request head at the start of `buf` (blank lines before it are
/// skipped, as RFC 9112 allows; lines may end in CRLF or LF) with `httparse`,
/// then reads what the endpoint needs from it.
///
/// A buffer is `Incomplete` only while it can still begin a request the
/// endpoint would accept: bytes that cannot (HTTP/0.9's `GET /\r\n`, a TLS
/// handshake, binary noise) are `Invalid` as soon as they arrive, so such a
/// client is answered `400` at once rather than at its request deadline.
pub(crate) fn parse(buf: &[u8]) -> Parsed {
    let mut headers =
        [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut []);
    match request.parse_with_uninit_headers(buf, &mut headers) {
        Ok(httparse::Status::Partial) => Parsed::Incomplete,
        Ok(httparse::Status::Complete(consumed)) => match interpret(&request) {
            Ok(request) => Parsed::Complete { request, consumed },
            Err(status) => Parsed::Invalid(status),
        },
        Err(httparse::Error::TooManyHeaders) => Parsed::Invalid(Status::HeadersTooLarge),
        Err(httparse::Error::Version) => other_version(buf),
        Err(_) => Parsed::Invalid(Status::BadRequest),
    }
}

/// The verdict on a request line whose version is neither HTTP/1.0 nor
/// HTTP/1.1: `505` when the line is otherwise well formed and names an HTTP
/// version (`GET /metrics HTTP/2.0`), `400` when it is not a request line,
/// and `Incomplete` while the line is unfinished but may still become a `505`.
fn other_version(buf: &[u8]) -> Parsed {
    let start = buf
        .iter()
        .position(|&b| b != b'\r' && b != b'\n')
        .unwrap_or(buf.len());
    let rest = &buf[start..];
    let (line, complete) = match rest.iter().position(|&b| b == b'\n') {
        Some(nl) => {
            let line = &rest[..nl];
            (line.strip_suffix(b"\r").unwrap_or(line), true)
        }
        None => (rest, false),
    };
    let mut parts = line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Parsed::Invalid(Status::BadRequest);
    };
    let line_ok = is_token(method)
        && !target.is_empty()
        && target.iter().all(|b| b.is_ascii_graphic())
        && names_a_version(version, complete);
    match (line_ok, complete) {
        (true, true) => Parsed::Invalid(Status::VersionNotSupported),
        (true, false) => Parsed::Incomplete,
        (false, _) => Parsed::Invalid(Status::BadRequest),
    }
}

/// Whether `version` is `HTTP/` and a version number (`2`, `2.0`, `0.9`), or,
/// when the line is not `complete`, the start of one (`HT`, `HTTP/2.`; a
/// trailing `\r` waits for its `\n`).
fn names_a_version(version: &[u8], complete: bool) -> bool {
    const PREFIX: &[u8] = b"HTTP/";
    if version.len() < PREFIX.len() {
        return !complete && PREFIX.starts_with(version);
    }
    let Some(number) = version.strip_prefix(PREFIX) else {
        return false;
    };
    let number = if complete {
        number
    } else {
        number.strip_suffix(b"\r").unwrap_or(number)
    };
    let (major, minor) = match number.iter().position(|&b| b == b'.') {
        Some(dot) => (&number[..dot], Some(&number[dot + 1..])),
        None => (number, None),
    };
    let digits = |d: &[u8]| d.iter().all(u8::is_ascii_digit);
    let finished = |d: &[u8]| !d.is_empty() && digits(d);
    if complete {
        finished(major) && minor.is_none_or(finished)
    } else {
        digits(major) && minor.is_none_or(|m| !major.is_empty() && digits(m))
    }
}

fn is_token(bytes: &[u8]) -> bool {
    !bytes.is_empty()
        && bytes
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The values of every header named `name`, joined with `,` (RFC 9110 § 5.3);
/// borrowed when there is only one.
fn joined<'a>(headers: &[httparse::Header<'a>], name: &str) -> Cow<'a, str> {
    let mut joined: Option<Cow<'a, str>> = None;
    for header in headers.iter().filter(|h| h.name.eq_ignore_ascii_case(name)) {
        let value = String::from_utf8_lossy(header.value);
        joined = Some(match joined {
            None => value,
            Some(before) => Cow::Owned(format!("{before},{value}")),
        });
    }
    joined.unwrap_or(Cow::Borrowed(""))
}

/// The body length a request announces: `Ok(None)` without `Content-Length`,
/// the length when every `Content-Length` value (in one header as a list or in
/// several) is the same decimal number, `Err` otherwise: two different values,
/// a value that is not a non-negative decimal number or does not fit 64 bits,
/// or a length together with `Transfer-Encoding` (RFC 9112 § 6.3; a request
/// framed two ways is how requests are smuggled past proxies).
fn content_length(headers: &[httparse::Header<'_>]) -> Result<Option<u64>, Status> {
    let mut length: Option<u64> = None;
    for header in headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("content-length"))
    {
        for item in header.value.split(|&b| b == b',') {
            let item = item.trim_ascii();
            if item.is_empty() || !item.iter().all(u8::is_ascii_digit) {
                return Err(Status::BadRequest);
            }
            let n = std::str::from_utf8(item)
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
                .ok_or(Status::BadRequest)?;
            if length.is_some_and(|before| before != n) {
                return Err(Status::BadRequest);
            }
            length = Some(n);
        }
    }
    let chunked = headers
        .iter()
        .any(|h| h.name.eq_ignore_ascii_case("transfer-encoding"));
    if chunked && length.is_some() {
        return Err(Status::BadRequest);
    }
    Ok(length)
}

/// What the endpoint needs from a request head `httparse` accepted.
fn interpret(request: &httparse::Request<'_, '_>) -> Result<Request, Status> {
    let (Some(method), Some(target), Some(minor)) = (request.method, request.path, request.version)
    else {
        return Err(Status::BadRequest);
    };
    let headers = &*request.headers;
    let method = match method {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        _ => Method::Other,
    };
    let metrics = is_metrics_path(target);
    let length = content_length(headers)?;
    let has_body = length.is_some_and(|n| n > 0)
        || headers
            .iter()
            .any(|h| h.name.eq_ignore_ascii_case("transfer-encoding"));
    let mut close = false;
    let mut keep_alive_token = false;
    for header in headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("connection"))
    {
        for token in header.value.split(|&b| b == b',') {
            let token = token.trim_ascii();
            close |= token.eq_ignore_ascii_case(b"close");
            keep_alive_token |= token.eq_ignore_ascii_case(b"keep-alive");
        }
    }
    let (format, content_type) = negotiate(&joined(headers, "accept"));
    Ok(Request {
        method,
        metrics,
        // A body is never read, so the connection cannot be reused after it.
        keep_alive: !has_body
            && if minor == 1 {
                !close
            } else {
                keep_alive_token && !close
            },
        format,
        content_type,
        gzip: accepts_gzip(&joined(headers, "accept-encoding")),
    })
}

/// Whether a request target names [`METRICS_PATH`]: in origin form
/// (`/metrics`) or absolute form (`http://host/metrics`), with or without a
/// query or fragment.
fn is_metrics_path(target: &str) -> bool {
    let mut path = target.as_bytes();
    for scheme in [&b"http://"[..], b"https://"] {
        if path.len() >= scheme.len() && path[..scheme.len()].eq_ignore_ascii_case(scheme) {
            let rest = &path[scheme.len()..];
            path = rest
                .iter()
                .position(|&b| b == b'/')
                .map_or(&b"/"[..], |i| &rest[i..]);
        }
    }
    let end = path
        .iter()
        .position(|&b| b == b'?' || b == b'#')
        .unwrap_or(path.len());
    &path[..end] == METRICS_PATH.as_bytes()
}

/// Splits `item;k=v;q=0.5` into the lower-cased token and its `q` (default 1).
fn token_and_q(item: &str) -> (String, f32) {
    let mut params = item.split(';');
    let token = params.next().unwrap_or("").trim().to_ascii_lowercase();
    let mut q = 1.0f32;
    for p in params {
        if let Some((k, v)) = p.split_once('=') {
            if k.trim().eq_ignore_ascii_case("q") {
                q = v.trim().parse::<f32>().unwrap_or(0.0).clamp(0.0, 1.0);
            }
        }
    }
    (token, q)
}

/// Whether an `Accept-Encoding` value allows gzip (`gzip`, `x-gzip` or `*`
/// with a non-zero `q`; an explicit `gzip;q=0` wins over `*`).
pub(crate) fn accepts_gzip(value: &str) -> bool {
    let mut gzip: Option<f32> = None;
    let mut any: Option<f32> = None;
    for item in value.split(',') {
        let (token, q) = token_and_q(item);
        match token.as_str() {
            "gzip" | "x-gzip" => gzip = Some(gzip.map_or(q, |g| g.max(q))),
            "*" => any = Some(any.map_or(q, |a| a.max(q))),
            _ => {}
        }
    }
    gzip.or(any).is_some_and(|q| q > 0.0)
}

/// Chooses the format for an `Accept` value (empty: none given). OpenMetrics
/// when the client accepts it (version 1.0.0, 0.0.1 or unspecified) at least
/// as much as the text format; the text format otherwise.
pub(crate) fn negotiate(accept: &str) -> (Format, &'static str) {
    let text = (Format::Text, TEXT_CONTENT_TYPE);
    let mut om_q = 0.0f32;
    let mut om_v1_q = 0.0f32;
    let mut text_q = 0.0f32;
    let mut wildcard_q = 0.0f32;
    for range in accept.split(',') {
        let (media, q) = token_and_q(range);
        let version = range.split(';').skip(1).find_map(|p| {
            let (k, v) = p.split_once('=')?;
            k.trim()
                .eq_ignore_ascii_case("version")
                .then(|| v.trim().trim_matches('"').to_owned())
        });
        match media.as_str() {
            "application/openmetrics-text" => match version.as_deref() {
                None | Some("1.0.0") => {
                    om_q = om_q.max(q);
                    om_v1_q = om_v1_q.max(q);
                }
                Some("0.0.1") => om_q = om_q.max(q),
                Some(_) => {}
            },
            "text/plain" => {
                if matches!(version.as_deref(), None | Some("0.0.4")) {
                    text_q = text_q.max(q);
                }
            }
            "*/*" | "text/*" => wildcard_q = wildcard_q.max(q),
            _ => {}
        }
    }
    let text_q = text_q.max(wildcard_q);
    if om_q > 0.0 && om_q >= text_q {
        let content_type = if om_v1_q >= om_q {
            OPENMETRICS_CONTENT_TYPE
        } else {
            OPENMETRICS_001_CONTENT_TYPE
        };
        (Format::OpenMetrics, content_type)
    } else {
        text
    }
}

/// A response head with `Content-Length: body_len` (and `Content-Encoding:
/// gzip` when `gzip`).
pub(crate) fn response_head(
    status: Status,
    content_type: &str,
    body_len: usize,
    gzip: bool,
    keep_alive: bool,
) -> Vec<u8> {
    let mut head = Vec::with_capacity(160);
    head.extend_from_slice(b"HTTP/1.1 ");
    head.extend_from_slice(status.line().as_bytes());
    head.extend_from_slice(b"\r\nContent-Type: ");
    head.extend_from_slice(content_type.as_bytes());
    head.extend_from_slice(b"\r\nContent-Length: ");
    head.extend_from_slice(itoa::Buffer::new().format(body_len).as_bytes());
    if status == Status::Ok {
        head.extend_from_slice(b"\r\nVary: Accept, Accept-Encoding");
    }
    if gzip {
        head.extend_from_slice(b"\r\nContent-Encoding: gzip");
    }
    if status == Status::MethodNotAllowed {
        head.extend_from_slice(b"\r\nAllow: GET, HEAD");
    }
    head.extend_from_slice(if keep_alive {
        b"\r\nConnection: keep-alive\r\n\r\n"
    } else {
        b"\r\nConnection: close\r\n\r\n"
    });
    head
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(text: &str) -> (Request, usize) {
        match parse(text.as_bytes()) {
            Parsed::Complete { request, consumed } => (request, consumed),
            other => panic!("{text:?}: {other:?}"),
        }
    }

    #[test]
    fn a_plain_get_of_metrics() {
        let text = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /next";
        let (r, used) = complete(text);
        assert_eq!(used, text.len() - "GET /next".len());
        assert_eq!(r.method, Method::Get);
        assert!(r.metrics && r.keep_alive);
        assert_eq!(r.format, Format::Text);
    }

    #[test]
    fn heads_arrive_in_pieces() {
        assert_eq!(parse(b""), Parsed::Incomplete);
        assert_eq!(parse(b"GET /metrics HTTP/1.1\r\nHost"), Parsed::Incomplete);
        assert_eq!(parse(b"GET /metrics HTTP/1.1\r\n"), Parsed::Incomplete);
        assert!(matches!(
            parse(b"\r\nGET /metrics HTTP/1.0\n\n"),
            Parsed::Complete { .. }
        ));
    }

    /// Every prefix of `text` is incomplete, and `text` itself is refused
    /// with `status`: a client is answered as soon as its bytes cannot begin
    /// a request, not before.
    fn refused_when_whole(text: &[u8], status: Status) {
        for end in 0..text.len() {
            assert_eq!(
                parse(&text[..end]),
                Parsed::Incomplete,
                "{:?}",
                String::from_utf8_lossy(&text[..end])
            );
        }
        assert_eq!(parse(text), Parsed::Invalid(status), "{text:?}");
    }

    #[test]
    fn http_0_9_requests_are_refused_at_their_first_line_end() {
        // HTTP/0.9 has no version: the request line ends after the target.
        refused_when_whole(b"GET /\r", Status::BadRequest);
        refused_when_whole(b"GET /metrics\n", Status::BadRequest);
        for text in [&b"GET /\r\n"[..], b"GET /metrics\n\n", b"\r\nGET /\r\n\r\n"] {
            assert_eq!(parse(text), Parsed::Invalid(Status::BadRequest), "{text:?}");
        }
    }

    #[test]
    fn garbage_is_refused_at_its_first_byte() {
        // A TLS ClientHello's record header, binary noise, a NUL.
        for text in [
            &b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"[..],
            b"\x00\xff\xfe\x01",
            b"\x00",
            b"\xff",
            b" GET /metrics HTTP/1.1\r\n",
            b"\r\r",
        ] {
            assert_eq!(parse(text), Parsed::Invalid(Status::BadRequest), "{text:?}");
            assert_eq!(
                parse(&text[..2.min(text.len())]),
                Parsed::Invalid(Status::BadRequest),
                "{text:?}"
            );
        }
        // Noise after a valid start of a request line.
        assert_eq!(
            parse(b"GET /metrics \x00"),
            Parsed::Invalid(Status::BadRequest)
        );
        assert_eq!(
            parse(b"GET /metrics HTTP/1.1\r\nHost\x00"),
            Parsed::Invalid(Status::BadRequest)
        );
    }

    #[test]
    fn other_http_versions_are_505_once_their_line_is_whole() {
        refused_when_whole(b"GET /metrics HTTP/2.0\r\n", Status::VersionNotSupported);
        refused_when_whole(b"GET /metrics HTTP/2\n", Status::VersionNotSupported);
        refused_when_whole(b"GET /metrics HTTP/1.2\r\n", Status::VersionNotSupported);
        assert_eq!(
            parse(b"GET /metrics HTTP/0.9\r\n\r\n"),
            Parsed::Invalid(Status::VersionNotSupported)
        );
        for bad in [
            &b"GET /metrics HTTP/x\r\n"[..],
            b"GET /metrics HTTP/2.\r\n",
            b"GET /metrics HTTPS/1.1\r\n",
            b"GET /metrics XTTP/1.1",
            b"GET /metrics HTTP/2.0 x\r\n",
        ] {
            assert_eq!(parse(bad), Parsed::Invalid(Status::BadRequest), "{bad:?}");
        }
    }

    #[test]
    fn conflicting_content_lengths_are_refused() {
        for bad in [
            "Content-Length: 5\r\nContent-Length: 7",
            "Content-Length: 5, 7",
            "Content-Length: 5,",
            "Content-Length: x",
            "Content-Length: -1",
            "Content-Length: +5",
            "Content-Length: 0x10",
            "Content-Length: 18446744073709551616",
            "Content-Length: ",
            "Content-Length: 5\r\nTransfer-Encoding: chunked",
            "Transfer-Encoding: chunked\r\nContent-Length: 0",
        ] {
            let text = format!("GET /metrics HTTP/1.1\r\n{bad}\r\n\r\n");
            assert_eq!(
                parse(text.as_bytes()),
                Parsed::Invalid(Status::BadRequest),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_repeated_content_length_is_one_length() {
        for same in [
            "Content-Length: 5\r\nContent-Length: 5",
            "Content-Length: 5, 5",
            "Content-Length: 18446744073709551615",
        ] {
            let text = format!("GET /metrics HTTP/1.1\r\n{same}\r\n\r\nhello");
            let (r, used) = complete(&text);
            assert_eq!(used, text.len() - 5, "{same:?}");
            // A body is never read: the connection is closed after the answer.
            assert!(r.metrics && !r.keep_alive, "{same:?}");
        }
        let (r, _) = complete("GET /metrics HTTP/1.1\r\nContent-Length: 0, 0\r\n\r\n");
        assert!(r.keep_alive);
    }

    #[test]
    fn too_many_headers_are_431() {
        let mut text = String::from("GET /metrics HTTP/1.1\r\n");
        for i in 0..MAX_HEADERS {
            text.push_str(&format!("X-{i}: y\r\n"));
        }
        let at_limit = format!("{text}\r\n");
        assert!(matches!(
            parse(at_limit.as_bytes()),
            Parsed::Complete { .. }
        ));
        // One more header line is refused before the head is complete.
        text.push_str("X-last: y\r\n");
        assert_eq!(
            parse(text.as_bytes()),
            Parsed::Invalid(Status::HeadersTooLarge)
        );
    }

    #[test]
    fn real_scrape_heads_are_understood() {
        for (head, timeout) in [
            (
                &include_bytes!("../tests/fixtures/prometheus-2.42.0-scrape-head.http")[..],
                "1",
            ),
            (
                include_bytes!("../tests/fixtures/prometheus-3-scrape-head.http"),
                "10",
            ),
        ] {
            let text = std::str::from_utf8(head).unwrap();
            assert!(text.contains(&format!(
                "X-Prometheus-Scrape-Timeout-Seconds: {timeout}\r\n"
            )));
            let (r, used) = complete(text);
            assert_eq!(used, head.len());
            assert_eq!(r.method, Method::Get);
            assert!(r.metrics && r.keep_alive && r.gzip);
            assert_eq!(r.format, Format::OpenMetrics);
            assert_eq!(r.content_type, OPENMETRICS_CONTENT_TYPE);
            // Cut anywhere, the head is incomplete, never refused.
            for end in 0..head.len() {
                assert_eq!(parse(&head[..end]), Parsed::Incomplete, "cut at {end}");
            }
        }
    }

    #[test]
    fn paths_methods_and_versions() {
        assert!(complete("GET /metrics?x=1 HTTP/1.1\r\n\r\n").0.metrics);
        assert!(
            complete("GET http://h:9090/metrics HTTP/1.1\r\n\r\n")
                .0
                .metrics
        );
        assert!(!complete("GET /metrics/ HTTP/1.1\r\n\r\n").0.metrics);
        assert!(!complete("GET / HTTP/1.1\r\n\r\n").0.metrics);
        assert_eq!(
            complete("HEAD /metrics HTTP/1.1\r\n\r\n").0.method,
            Method::Head
        );
        assert_eq!(
            complete("POST /metrics HTTP/1.1\r\n\r\n").0.method,
            Method::Other
        );
        assert_eq!(
            parse(b"GET /metrics HTTP/2.0\r\n\r\n"),
            Parsed::Invalid(Status::VersionNotSupported)
        );
        for bad in [
            &b"GET /metrics\r\n\r\n"[..],
            b"GET  /metrics HTTP/1.1\r\n\r\n",
            b"G(T /metrics HTTP/1.1\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nno colon\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nA: b\r\n folded\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nContent-Length: x\r\n\r\n",
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\n\n",
        ] {
            assert_eq!(parse(bad), Parsed::Invalid(Status::BadRequest), "{bad:?}");
        }
    }

    #[test]
    fn connection_reuse() {
        assert!(
            !complete("GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n")
                .0
                .keep_alive
        );
        assert!(!complete("GET /metrics HTTP/1.0\r\n\r\n").0.keep_alive);
        assert!(
            complete("GET /metrics HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")
                .0
                .keep_alive
        );
        assert!(
            !complete("POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\n")
                .0
                .keep_alive
        );
        assert!(
            !complete("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
                .0
                .keep_alive
        );
    }

    #[test]
    fn prometheus_asks_for_openmetrics() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(
            negotiate(prometheus),
            (Format::OpenMetrics, OPENMETRICS_CONTENT_TYPE)
        );
        let (r, _) = complete(&format!(
            "GET /metrics HTTP/1.1\r\nAccept: {prometheus}\r\n\r\n"
        ));
        assert_eq!(r.format, Format::OpenMetrics);
    }

    #[test]
    fn text_unless_openmetrics_is_preferred() {
        assert_eq!(negotiate("").0, Format::Text);
        assert_eq!(negotiate("*/*").0, Format::Text);
        assert_eq!(negotiate("text/plain").0, Format::Text);
        assert_eq!(
            negotiate("text/plain;version=0.0.4;q=1,application/openmetrics-text;q=0.5").0,
            Format::Text
        );
        assert_eq!(
            negotiate("application/openmetrics-text;version=9.9.9").0,
            Format::Text
        );
        assert_eq!(
            negotiate("application/openmetrics-text; q=0").0,
            Format::Text
        );
        assert_eq!(
            negotiate("application/openmetrics-text;version=0.0.1"),
            (Format::OpenMetrics, OPENMETRICS_001_CONTENT_TYPE)
        );
        assert_eq!(
            negotiate("Application/OpenMetrics-Text, text/plain").0,
            Format::OpenMetrics
        );
    }

    #[test]
    fn gzip_when_allowed() {
        assert!(accepts_gzip("gzip"));
        assert!(accepts_gzip("deflate, GZip;q=0.5"));
        assert!(accepts_gzip("x-gzip"));
        assert!(accepts_gzip("*"));
        assert!(!accepts_gzip(""));
        assert!(!accepts_gzip("identity"));
        assert!(!accepts_gzip("gzip;q=0"));
        assert!(!accepts_gzip("gzip;q=0, *"));
        let (r, _) = complete(
            "GET /metrics HTTP/1.1\r\nAccept-Encoding: br\r\nAccept-Encoding: gzip\r\n\r\n",
        );
        assert!(r.gzip);
        assert!(!complete("GET /metrics HTTP/1.1\r\n\r\n").0.gzip);
    }

    #[test]
    fn ok_heads_say_how_the_body_varies() {
        let head =
            String::from_utf8(response_head(Status::Ok, "text/plain", 5, true, true)).unwrap();
        assert!(head.contains("\r\nVary: Accept, Accept-Encoding\r\n"));
        assert!(head.contains("\r\nContent-Encoding: gzip\r\n"));
        assert!(head.ends_with("\r\nConnection: keep-alive\r\n\r\n"));
    }

    #[test]
    fn heads_carry_length_and_connection() {
        let head = String::from_utf8(response_head(
            Status::MethodNotAllowed,
            "text/plain",
            12,
            false,
            false,
        ))
        .unwrap();
        assert_eq!(
            head,
            "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain\r\nContent-Length: 12\r\nAllow: GET, HEAD\r\nConnection: close\r\n\r\n"
        );
    }
}
