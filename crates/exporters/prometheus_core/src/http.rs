//! The little HTTP/1.1 the endpoint speaks: parsing a request head, choosing
//! the exposition format from `Accept`, and writing response heads.

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

fn is_token(bytes: &[u8]) -> bool {
    !bytes.is_empty()
        && bytes
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Whether `buf` may hold a complete request head, given that its first
/// `scanned` bytes did not: a head ends in an empty line (`\n\n` or
/// `\n\r\n`), and that ending must reach past `scanned`. Lets a connection
/// that receives its head in many small pieces look only at the new bytes
/// each time, instead of parsing everything again.
pub(crate) fn may_end_a_head(buf: &[u8], scanned: usize) -> bool {
    let from = scanned.saturating_sub(2).min(buf.len());
    let tail = &buf[from..];
    tail.iter().enumerate().any(|(i, &b)| {
        b == b'\n'
            && match tail.get(i + 1) {
                Some(b'\n') => true,
                Some(b'\r') => tail.get(i + 2) == Some(&b'\n'),
                _ => false,
            }
    })
}

/// Parses the request head at the start of `buf` (blank lines before it are
/// skipped, as RFC 9112 allows). Lines may end in CRLF or LF.
pub(crate) fn parse(buf: &[u8]) -> Parsed {
    let mut pos = 0;
    while pos < buf.len() && (buf[pos] == b'\r' || buf[pos] == b'\n') {
        pos += 1;
    }
    let mut lines: Vec<&[u8]> = Vec::with_capacity(16);
    loop {
        let Some(nl) = buf[pos..].iter().position(|&b| b == b'\n') else {
            return Parsed::Incomplete;
        };
        let raw = &buf[pos..pos + nl];
        pos += nl + 1;
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.is_empty() {
            break;
        }
        lines.push(line);
    }
    match parse_head(&lines) {
        Ok(request) => Parsed::Complete {
            request,
            consumed: pos,
        },
        Err(status) => Parsed::Invalid(status),
    }
}

fn parse_head(lines: &[&[u8]]) -> Result<Request, Status> {
    let (first, headers) = lines.split_first().ok_or(Status::BadRequest)?;
    let mut parts = first.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Status::BadRequest);
    };
    if !is_token(method) || target.is_empty() || !target.iter().all(|b| b.is_ascii_graphic()) {
        return Err(Status::BadRequest);
    }
    let http11 = match version {
        b"HTTP/1.1" => true,
        b"HTTP/1.0" => false,
        v if v.starts_with(b"HTTP/") => return Err(Status::VersionNotSupported),
        _ => return Err(Status::BadRequest),
    };
    let method = match method {
        b"GET" => Method::Get,
        b"HEAD" => Method::Head,
        _ => Method::Other,
    };
    // Absolute form (`http://host/metrics`) is allowed; the path ends at `?` or `#`.
    let mut path = target;
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
    let metrics = &path[..end] == METRICS_PATH.as_bytes();

    let mut accept = String::new();
    let mut accept_encoding = String::new();
    let mut close = false;
    let mut keep_alive_token = false;
    let mut has_body = false;
    for header in headers {
        if header[0] == b' ' || header[0] == b'\t' {
            // Obsolete line folding.
            return Err(Status::BadRequest);
        }
        let colon = header
            .iter()
            .position(|&b| b == b':')
            .ok_or(Status::BadRequest)?;
        let name = &header[..colon];
        if !is_token(name) {
            return Err(Status::BadRequest);
        }
        let value = String::from_utf8_lossy(&header[colon + 1..]);
        let value = value.trim();
        if name.eq_ignore_ascii_case(b"accept") {
            if !accept.is_empty() {
                accept.push(',');
            }
            accept.push_str(value);
        } else if name.eq_ignore_ascii_case(b"accept-encoding") {
            if !accept_encoding.is_empty() {
                accept_encoding.push(',');
            }
            accept_encoding.push_str(value);
        } else if name.eq_ignore_ascii_case(b"connection") {
            for token in value.split(',') {
                let token = token.trim();
                close |= token.eq_ignore_ascii_case("close");
                keep_alive_token |= token.eq_ignore_ascii_case("keep-alive");
            }
        } else if name.eq_ignore_ascii_case(b"content-length") {
            let n: u64 = value.parse().map_err(|_| Status::BadRequest)?;
            has_body |= n > 0;
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            has_body = true;
        }
    }
    let (format, content_type) = negotiate(&accept);
    Ok(Request {
        method,
        metrics,
        // A body is never read, so the connection cannot be reused after it.
        keep_alive: !has_body
            && if http11 {
                !close
            } else {
                keep_alive_token && !close
            },
        format,
        content_type,
        gzip: accepts_gzip(&accept_encoding),
    })
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

    #[test]
    fn a_head_is_never_missed_by_the_ending_check() {
        for text in [
            &b"GET /metrics HTTP/1.1\r\nHost: h\r\nAccept: */*\r\n\r\n"[..],
            b"GET /metrics HTTP/1.0\n\n",
            b"\r\n\r\nGET / HTTP/1.1\r\n\r\n",
            b"HEAD /metrics HTTP/1.1\nX: y\r\n\n",
            b"BAD\r\n\r\n",
        ] {
            // Delivered in two pieces split anywhere, the first piece parsed
            // (and found incomplete, or not) and the second checked.
            for split in 0..=text.len() {
                let scanned = if matches!(parse(&text[..split]), Parsed::Incomplete) {
                    split
                } else {
                    0
                };
                assert!(
                    may_end_a_head(text, scanned),
                    "{:?} split at {split}",
                    String::from_utf8_lossy(text)
                );
            }
        }
        let partial = b"GET /metrics HTTP/1.1\r\nHost: h\r\n";
        assert!(!may_end_a_head(partial, 0));
        assert!(!may_end_a_head(
            b"GET /metrics HTTP/1.1\r\nHost: h\r\n\r",
            30
        ));
        assert!(!may_end_a_head(b"", 0));
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
