//! The hand-written request-head parser the endpoint used before `httparse`,
//! kept only so `benches/request_parsers.rs` can compare the two side by side
//! (docs/PERFORMANCE.md); it is removed once the comparison is recorded.

use crate::http::{accepts_gzip, negotiate, Method, Parsed, Request, Status, METRICS_PATH};

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
pub fn may_end_a_head(buf: &[u8], scanned: usize) -> bool {
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
