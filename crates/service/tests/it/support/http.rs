//! A small blocking HTTP/1.1 client that sends exactly the bytes a test gives
//! (no content type unless asked for, raw bodies, keep-alive connections).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// An answer.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// The body as text.
    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.body).expect("a UTF-8 body")
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!("a JSON body ({e}): {}", String::from_utf8_lossy(&self.body))
        })
    }

    /// The first value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every value of a header.
    pub fn headers_named(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// One keep-alive connection.
pub struct Connection {
    reader: BufReader<TcpStream>,
}

impl Connection {
    pub fn open(addr: SocketAddr) -> io::Result<Connection> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        Ok(Connection {
            reader: BufReader::new(stream),
        })
    }

    /// Gives up reading an answer after `timeout`.
    pub fn set_read_timeout(&mut self, timeout: Duration) {
        self.reader
            .get_ref()
            .set_read_timeout(Some(timeout))
            .expect("a read timeout");
    }

    /// Sends one request (with `Content-Length` for the body) and reads the answer.
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> io::Result<Response> {
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: test\r\n");
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !body.is_empty() || method == "POST" {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        let mut request = head.into_bytes();
        request.extend_from_slice(body);
        self.reader.get_mut().write_all(&request)?;
        self.read_response(method == "HEAD")
    }

    /// Sends raw bytes and reads one answer.
    pub fn raw(&mut self, bytes: &[u8]) -> io::Result<Response> {
        self.reader.get_mut().write_all(bytes)?;
        self.read_response(false)
    }

    fn read_response(&mut self, head_only: bool) -> io::Result<Response> {
        let mut head = Vec::new();
        loop {
            let before = head.len();
            self.reader.read_until(b'\n', &mut head)?;
            if head.len() == before {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection before answering",
                ));
            }
            if head.ends_with(b"\r\n\r\n") {
                break;
            }
        }
        let mut parsed_headers = [httparse::EMPTY_HEADER; 32];
        let mut parsed = httparse::Response::new(&mut parsed_headers);
        parsed
            .parse(&head)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        let status = parsed.code.expect("a status code");
        let headers: Vec<(String, String)> = parsed
            .headers
            .iter()
            .map(|h| {
                (
                    h.name.to_owned(),
                    String::from_utf8_lossy(h.value).into_owned(),
                )
            })
            .collect();
        let length = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .map(|(_, v)| v.parse::<usize>().expect("a numeric content-length"));
        let mut body = Vec::new();
        match length {
            _ if head_only => {}
            Some(length) => {
                body.resize(length, 0);
                self.reader.read_exact(&mut body)?;
            }
            None => {
                self.reader.read_to_end(&mut body)?;
            }
        }
        Ok(Response {
            status,
            headers,
            body,
        })
    }
}

/// One request on a connection of its own.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    Connection::open(addr)
        .and_then(|mut c| c.request(method, path, headers, body))
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

/// `POST /api/v1/metrics` with no content type, as TAO's client posts.
pub fn post(addr: SocketAddr, body: &str) -> Response {
    request(addr, "POST", "/api/v1/metrics", &[], body.as_bytes())
}

/// `GET path`.
pub fn get(addr: SocketAddr, path: &str) -> Response {
    request(addr, "GET", path, &[], b"")
}
