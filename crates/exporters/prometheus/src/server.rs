//! The HTTP server of one endpoint: one thread running a readiness loop over
//! non-blocking sockets.
//!
//! No connection can hold the thread: a client that sends its request slowly,
//! never sends it, or does not read its response only occupies a connection
//! slot until its deadline ([`ServerLimits`]), and the number of slots is
//! bounded. Metrics are rendered from snapshots, so a scrape never waits for
//! the flush thread and the flush thread never waits for a scrape.

use std::io::{self, IoSlice, Read, Write};
use std::net::Shutdown;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};

use crate::agent::render;
use crate::endpoint::Directory;
use crate::exposer::ExposerStats;
use crate::external::BodySource;
use crate::gzip;
use crate::http::{self, Method, Parsed, Status};
use crate::render::Format;
use crate::settings::ServerLimits;
use crate::socket_send;
use crate::thread_priority;

const LISTENER: Token = Token(0);
const WAKER: Token = Token(1);
const FIRST_CONNECTION: usize = 2;

/// How long to wait before accepting again after `accept` failed for lack of
/// resources (descriptors, memory).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Connections accepted per loop iteration at most: a flood of new connections
/// cannot keep the thread from answering the ones it has.
const ACCEPTS_PER_TURN: usize = 32;

/// Reads of a closing connection's unwanted input per loop iteration at most
/// (4 KiB each): a client that keeps sending cannot hold the thread.
const LINGER_READS_PER_TURN: usize = 16;

/// A running server; [`ServerHandle::shutdown`] stops it and closes the listener.
#[derive(Debug)]
#[must_use = "dropping it stops the server"]
pub(crate) struct ServerHandle {
    stop: Arc<AtomicBool>,
    waker: Arc<Waker>,
    thread: Option<JoinHandle<()>>,
}

impl ServerHandle {
    /// Stops the loop, closes every connection and the listener, and waits for
    /// the thread to end.
    pub(crate) fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        if self.thread.is_none() {
            return;
        }
        self.stop.store(true, Ordering::Release);
        if let Err(e) = self.waker.wake() {
            tracing::error!(error = %e, "cannot wake the Prometheus server thread");
        }
        if let Some(thread) = self.thread.take() {
            if thread.join().is_err() {
                tracing::error!("the Prometheus server thread panicked");
            }
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// The agents of one process's endpoint are a body source: the key is the
/// directory version and the sum of the agents' publish counters.
impl BodySource for Directory {
    fn key(&self) -> (u64, u64) {
        let list = self.current();
        (
            list.version,
            list.agents
                .iter()
                .fold(0u64, |sum, a| sum.wrapping_add(a.version())),
        )
    }

    fn render(&self, format: Format) -> Vec<u8> {
        render(&self.current().agents, format)
    }
}

/// Starts serving `directory` on `listener` (already bound) in a new thread.
pub(crate) fn spawn(
    listener: std::net::TcpListener,
    directory: Arc<Directory>,
    limits: ServerLimits,
) -> io::Result<ServerHandle> {
    spawn_source(listener, directory, limits)
}

/// Starts serving the bodies of `directory` on `listener` (already bound) in
/// a new thread.
pub(crate) fn spawn_source(
    listener: std::net::TcpListener,
    directory: Arc<dyn BodySource>,
    limits: ServerLimits,
) -> io::Result<ServerHandle> {
    let local = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let mut listener = TcpListener::from_std(listener);
    let poll = Poll::new()?;
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
    let stop = Arc::new(AtomicBool::new(false));
    let mut server = Server {
        poll,
        listener,
        conns: Vec::new(),
        free: Vec::new(),
        open: 0,
        limits,
        stop: Arc::clone(&stop),
        core: Core::new(directory),
        accept_paused_until: None,
        accept_more: false,
        again: Vec::new(),
    };
    let thread = std::thread::Builder::new()
        .name(format!("nixl-prom-{}", local.port()))
        .spawn(move || {
            if let Err(e) = thread_priority::lower_current_thread() {
                tracing::debug!(error = %e, "the Prometheus server thread keeps its priority");
            }
            if let Err(e) = server.run() {
                tracing::error!(address = %local, error = %e, "the Prometheus server stopped");
            }
        })?;
    Ok(ServerHandle {
        stop,
        waker,
        thread: Some(thread),
    })
}

/// A rendered body and what it was rendered from.
struct CachedBody<B> {
    /// The directory version and the sum of the agents' publish counters.
    key: (u64, u64),
    /// Which rendering made it (`Core::renders` right after it): a request
    /// whose bytes were all read before that rendering began may be answered
    /// with it even if an agent published or joined or left since.
    seq: u64,
    body: B,
}

/// The state requests are answered from.
struct Core {
    directory: Arc<dyn BodySource>,
    /// Per format: the plain body of the agents' families.
    plain: [Option<CachedBody<Arc<[u8]>>>; 2],
    /// Per format: the same, deflated (for gzip answers).
    deflated: [Option<CachedBody<Arc<gzip::DeflatedBody>>>; 2],
    /// Renderings so far: the clock requests are stamped with when read.
    renders: u64,
    /// The endpoint's own `exposer_*` families.
    exposer: ExposerStats,
}

impl Core {
    fn new(directory: Arc<dyn BodySource>) -> Core {
        Core {
            directory,
            plain: [None, None],
            deflated: [None, None],
            renders: 0,
            exposer: ExposerStats::default(),
        }
    }

    /// The plain body in `format` for a request read when `read_at`
    /// renderings had been made, and the key it was rendered at. The cached
    /// body serves if nothing changed since it was rendered, or if it was
    /// rendered after the request was read (so it holds everything the client
    /// did before sending it); otherwise the body is rendered again. A client
    /// that publishes (or destroys an agent) and then scrapes always sees
    /// that, and requests read before a rendering share it, so the server
    /// renders about once per loop iteration however often agents publish.
    fn plain(&mut self, format: Format, read_at: u64) -> ((u64, u64), Arc<[u8]>) {
        let key = self.directory.key();
        let slot = &mut self.plain[format.index()];
        if let Some(cached) = slot {
            if cached.key == key || cached.seq > read_at {
                return (cached.key, Arc::clone(&cached.body));
            }
        }
        self.renders += 1;
        let body: Arc<[u8]> = self.directory.render(format).into();
        *slot = Some(CachedBody {
            key,
            seq: self.renders,
            body: Arc::clone(&body),
        });
        (key, body)
    }

    /// The answer to a scrape in `format` read when `read_at` renderings had
    /// been made: the exposer families (rendered now), then the agents'
    /// (cached), gzipped if `gzip` (the agents' part compressed once per
    /// rendering, see [`gzip`]).
    fn scrape(&mut self, format: Format, gzip: bool, read_at: u64) -> Parts {
        let (key, plain) = self.plain(format, read_at);
        let exposer = self.exposer.render(format, Instant::now());
        if !gzip {
            return Parts {
                prefix: exposer,
                body: plain,
                suffix: Vec::new(),
            };
        }
        let slot = &mut self.deflated[format.index()];
        let deflated = match slot {
            Some(cached) if cached.key == key => Arc::clone(&cached.body),
            _ => {
                let deflated = Arc::new(gzip::deflate_body(&plain));
                *slot = Some(CachedBody {
                    key,
                    seq: self.renders,
                    body: Arc::clone(&deflated),
                });
                deflated
            }
        };
        let (prefix, trailer) = gzip::wrap(&exposer, &deflated);
        Parts {
            prefix,
            body: Arc::clone(&deflated.stream),
            suffix: trailer.to_vec(),
        }
    }

    /// The response to a parsed request, or to a request refused with a
    /// status; `read_at`: the renderings made when its bytes were read.
    fn respond(
        &mut self,
        status_or_request: Result<&http::Request, Status>,
        read_at: u64,
    ) -> Outgoing {
        let (status, request) = match status_or_request {
            Ok(r) if !r.metrics => (Status::NotFound, Some(r)),
            Ok(r) if r.method == Method::Other => (Status::MethodNotAllowed, Some(r)),
            Ok(r) => (Status::Ok, Some(r)),
            Err(status) => (status, None),
        };
        let started = Instant::now();
        let keep_alive = request.is_some_and(|r| r.keep_alive);
        let head_only = request.is_some_and(|r| r.method == Method::Head);
        let (content_type, gzip, parts): (&str, bool, Parts) = match (status, request) {
            (Status::Ok, Some(r)) => (
                r.content_type,
                r.gzip,
                self.scrape(r.format, r.gzip, read_at),
            ),
            _ => (
                "text/plain; charset=utf-8",
                false,
                Parts {
                    prefix: Vec::new(),
                    body: Arc::from(status.body()),
                    suffix: Vec::new(),
                },
            ),
        };
        let length = parts.prefix.len() + parts.body.len() + parts.suffix.len();
        let head = http::response_head(status, content_type, length, gzip, keep_alive);
        // A GET of /metrics answered with its body is a scrape.
        let scrape = (status == Status::Ok && !head_only).then_some(Scrape {
            started,
            body_bytes: length,
        });
        let parts = if head_only {
            Parts {
                prefix: Vec::new(),
                body: Arc::from(&b""[..]),
                suffix: Vec::new(),
            }
        } else {
            parts
        };
        Outgoing {
            head,
            parts,
            written: 0,
            keep_alive,
            scrape,
        }
    }
}

/// A response body in three pieces, sent in order.
struct Parts {
    prefix: Vec<u8>,
    body: Arc<[u8]>,
    suffix: Vec<u8>,
}

/// A scrape being answered, for the exposer families.
#[derive(Clone, Copy)]
struct Scrape {
    started: Instant,
    body_bytes: usize,
}

/// A response being written.
struct Outgoing {
    head: Vec<u8>,
    parts: Parts,
    written: usize,
    keep_alive: bool,
    /// Set when the response answers a scrape: counted once all is out.
    scrape: Option<Scrape>,
}

enum Phase {
    /// Waiting for (the rest of) a request head.
    Request,
    /// Writing a response.
    Respond(Outgoing),
    /// The response is out and our side shut; discarding input until the
    /// client closes, so it reads the response rather than a reset.
    Linger,
}

struct Conn {
    stream: TcpStream,
    phase: Phase,
    /// Received bytes not yet consumed by a parsed request.
    input: Vec<u8>,
    /// How many bytes `input` held when it was last parsed and found
    /// incomplete (it is parsed again only when more have arrived).
    parsed_len: usize,
    /// `Core::renders` when bytes were last read into `input`.
    read_at: u64,
    /// When the current phase started.
    since: Instant,
    deadline: Instant,
}

/// What to do with a connection after driving it.
enum Next {
    /// Wait for its next readiness event.
    Keep,
    /// It answered a request and may have another one ready, or it used its
    /// turn's share of reading: drive it again in the next loop iteration,
    /// after every other ready connection had its turn.
    Again,
    Close,
}

struct Server {
    poll: Poll,
    listener: TcpListener,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    open: usize,
    limits: ServerLimits,
    stop: Arc<AtomicBool>,
    core: Core,
    accept_paused_until: Option<Instant>,
    /// The last accept stopped at [`ACCEPTS_PER_TURN`] with more connections
    /// possibly waiting: accept again in the next iteration.
    accept_more: bool,
    /// Connections that answered a request and may have more ready, or that
    /// have more input to discard (one response or one bounded drain per
    /// connection per iteration, so a client that always has more ready cannot
    /// keep the others waiting).
    again: Vec<usize>,
}

impl Server {
    fn run(&mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(256);
        let mut turn = Vec::new();
        loop {
            let timeout = if self.again.is_empty() && !self.accept_more {
                self.next_timeout()
            } else {
                Some(Duration::ZERO)
            };
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if self.stop.load(Ordering::Acquire) {
                return Ok(());
            }
            std::mem::swap(&mut turn, &mut self.again);
            let accept_now = std::mem::take(&mut self.accept_more);
            // Read first what every ready connection has sent, then answer:
            // requests read before a rendering can share it.
            for event in events.iter() {
                let Token(t) = event.token();
                if t >= FIRST_CONNECTION {
                    self.fill(t - FIRST_CONNECTION);
                }
            }
            for &index in &turn {
                self.fill(index);
            }
            for event in events.iter() {
                match event.token() {
                    LISTENER => self.accept(),
                    WAKER => {}
                    Token(t) => {
                        let index = t - FIRST_CONNECTION;
                        turn.retain(|&i| i != index);
                        self.drive(index);
                    }
                }
            }
            // Those that had more to do last time. (An index whose connection
            // closed meanwhile is harmless: driving it finds nothing to read.)
            for index in turn.drain(..) {
                self.drive(index);
            }
            if accept_now {
                self.accept();
            }
            if self
                .accept_paused_until
                .is_some_and(|until| Instant::now() >= until)
            {
                self.accept_paused_until = None;
                self.accept();
            }
            self.expire();
        }
    }

    fn next_timeout(&self) -> Option<Duration> {
        let earliest = self
            .conns
            .iter()
            .flatten()
            .map(|c| c.deadline)
            .chain(self.accept_paused_until)
            .min()?;
        // Round up so the deadline has passed when we wake.
        Some(earliest.saturating_duration_since(Instant::now()) + Duration::from_millis(1))
    }

    fn accept(&mut self) {
        if self.accept_paused_until.is_some() {
            return;
        }
        for _ in 0..ACCEPTS_PER_TURN {
            match self.listener.accept() {
                Ok((stream, _peer)) => self.add(stream),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted
                            | io::ErrorKind::ConnectionAborted
                            | io::ErrorKind::ConnectionReset
                    ) => {}
                Err(e) => {
                    // Out of descriptors or memory: the pending connections stay
                    // queued; try again a little later.
                    tracing::warn!(error = %e, "accept failed; retrying shortly");
                    self.accept_paused_until = Some(Instant::now() + ACCEPT_BACKOFF);
                    return;
                }
            }
        }
        // The listener's readiness is edge-triggered: come back for the rest.
        self.accept_more = true;
    }

    fn add(&mut self, mut stream: TcpStream) {
        if self.open >= self.limits.max_connections && !self.evict_one() {
            // Every slot is busy answering: refuse this one (dropping closes it).
            return;
        }
        let _ = stream.set_nodelay(true);
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                self.conns.push(None);
                self.conns.len() - 1
            }
        };
        if let Err(e) = self.poll.registry().register(
            &mut stream,
            Token(index + FIRST_CONNECTION),
            Interest::READABLE | Interest::WRITABLE,
        ) {
            tracing::warn!(error = %e, "cannot register a connection");
            self.free.push(index);
            return;
        }
        let now = Instant::now();
        self.conns[index] = Some(Conn {
            stream,
            phase: Phase::Request,
            input: Vec::new(),
            parsed_len: 0,
            read_at: 0,
            since: now,
            deadline: now + self.limits.request_timeout,
        });
        self.open += 1;
        self.drive(index);
    }

    /// Closes the connection that has waited longest for its request, if any;
    /// else the one closing for longest. A closing connection has its answer
    /// sent but perhaps not yet read, which a close with unread input (a
    /// reset) would throw away, and it ends by itself within the linger
    /// timeout: one still waiting for its request has been given nothing.
    fn evict_one(&mut self) -> bool {
        let victim = self
            .conns
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.as_ref().map(|c| (i, c)))
            .filter_map(|(i, c)| match c.phase {
                Phase::Request => Some((i, (0, c.since))),
                Phase::Linger => Some((i, (1, c.since))),
                Phase::Respond(_) => None,
            })
            .min_by_key(|&(_, order)| order)
            .map(|(i, _)| i);
        match victim {
            Some(i) => {
                self.close(i);
                true
            }
            None => false,
        }
    }

    fn close(&mut self, index: usize) {
        if let Some(mut conn) = self.conns[index].take() {
            let _ = self.poll.registry().deregister(&mut conn.stream);
            self.free.push(index);
            self.open -= 1;
        }
    }

    fn expire(&mut self) {
        let now = Instant::now();
        for index in 0..self.conns.len() {
            if self.conns[index]
                .as_ref()
                .is_some_and(|c| c.deadline <= now)
            {
                self.close(index);
            }
        }
    }

    /// Reads what connection `index` has sent while it waits for a request,
    /// without answering (see `Core::plain`); errors and EOF are left for
    /// [`Server::drive`] to find.
    fn fill(&mut self, index: usize) {
        let Some(conn) = self.conns.get_mut(index).and_then(Option::as_mut) else {
            return;
        };
        if matches!(conn.phase, Phase::Request) {
            while conn.input.len() < self.limits.max_request_bytes
                && matches!(
                    conn.read_more(self.limits.max_request_bytes, self.core.renders),
                    Ok(true)
                )
            {}
        }
    }

    fn drive(&mut self, index: usize) {
        let Some(conn) = self.conns.get_mut(index).and_then(Option::as_mut) else {
            return;
        };
        // A bug answering one connection must not take the endpoint down with
        // it: that connection is closed and the loop goes on.
        let (core, limits) = (&mut self.core, &self.limits);
        let next =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| conn.drive(core, limits)))
                .unwrap_or_else(|_| {
                    tracing::error!("answering a scrape panicked; closing that connection");
                    Next::Close
                });
        match next {
            Next::Keep => {}
            Next::Again => self.again.push(index),
            Next::Close => self.close(index),
        }
    }
}

impl Conn {
    /// Makes all the progress the socket allows.
    fn drive(&mut self, core: &mut Core, limits: &ServerLimits) -> Next {
        loop {
            match &mut self.phase {
                Phase::Request => match self.parse_input() {
                    Parsed::Complete { request, consumed } => {
                        self.input.drain(..consumed);
                        let outgoing = core.respond(Ok(&request), self.read_at);
                        self.start_response(outgoing, limits);
                    }
                    Parsed::Invalid(status) => {
                        self.input.clear();
                        let outgoing = core.respond(Err(status), self.read_at);
                        self.start_response(outgoing, limits);
                    }
                    Parsed::Incomplete if self.input.len() >= limits.max_request_bytes => {
                        self.input.clear();
                        self.parsed_len = 0;
                        let outgoing = core.respond(Err(Status::HeadersTooLarge), self.read_at);
                        self.start_response(outgoing, limits);
                    }
                    Parsed::Incomplete => {
                        match self.read_more(limits.max_request_bytes, core.renders) {
                            Ok(true) => {}
                            Ok(false) => return Next::Keep,
                            Err(()) => return Next::Close,
                        }
                    }
                },
                Phase::Respond(out) => match write_out(&mut self.stream, out) {
                    Ok(false) => return Next::Keep,
                    Ok(true) => {
                        let now = Instant::now();
                        if let Some(scrape) = out.scrape.take() {
                            core.exposer.record(
                                scrape.body_bytes,
                                now.saturating_duration_since(scrape.started),
                                now,
                            );
                        }
                        self.since = now;
                        if out.keep_alive {
                            self.phase = Phase::Request;
                            self.deadline = now + limits.request_timeout;
                            return Next::Again;
                        } else {
                            let _ = self.stream.shutdown(Shutdown::Write);
                            self.phase = Phase::Linger;
                            self.deadline = now + limits.linger_timeout;
                        }
                    }
                    Err(_) => return Next::Close,
                },
                Phase::Linger => {
                    let mut sink = [0u8; 4096];
                    for _ in 0..LINGER_READS_PER_TURN {
                        match self.stream.read(&mut sink) {
                            Ok(0) => return Next::Close,
                            Ok(_) => {}
                            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Next::Keep,
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                            Err(_) => return Next::Close,
                        }
                    }
                    // More may be waiting (readiness is edge-triggered): go on
                    // in the next iteration, after the others; the linger
                    // deadline still ends it.
                    return Next::Again;
                }
            }
        }
    }

    /// Parses the request head in `input` if bytes arrived since it was last
    /// found incomplete. Every arrival is parsed, so bytes that cannot begin a
    /// request are refused as soon as they are in (the work is bounded: at
    /// most `max_request_bytes` are parsed per arrival).
    fn parse_input(&mut self) -> Parsed {
        if self.input.len() == self.parsed_len {
            return Parsed::Incomplete;
        }
        let parsed = http::parse(&self.input);
        // A complete or refused head is removed from `input`.
        self.parsed_len = match parsed {
            Parsed::Incomplete => self.input.len(),
            _ => 0,
        };
        parsed
    }

    fn start_response(&mut self, outgoing: Outgoing, limits: &ServerLimits) {
        let now = Instant::now();
        self.since = now;
        self.deadline = now + limits.write_timeout;
        self.phase = Phase::Respond(outgoing);
    }

    /// Reads what is available, up to `limit` bytes buffered in all.
    /// `Ok(true)`: got bytes; `Ok(false)`: nothing more for now; `Err`: the
    /// peer closed or the socket failed.
    fn read_more(&mut self, limit: usize, renders: u64) -> Result<bool, ()> {
        let start = self.input.len();
        let room = limit.saturating_sub(start).clamp(1, 4096);
        self.input.resize(start + room, 0);
        let result = loop {
            match self.stream.read(&mut self.input[start..]) {
                Ok(0) => break Err(()),
                Ok(n) => break Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break Ok(0),
                Err(_) => break Err(()),
            }
        };
        match result {
            Ok(n) => {
                self.input.truncate(start + n);
                if n > 0 {
                    self.read_at = renders;
                }
                Ok(n > 0)
            }
            Err(()) => {
                self.input.truncate(start);
                Err(())
            }
        }
    }
}

/// Writes as much of `out` as the socket takes: `Ok(true)` when all is out.
fn write_out(stream: &mut TcpStream, out: &mut Outgoing) -> io::Result<bool> {
    let pieces: [&[u8]; 4] = [
        &out.head,
        &out.parts.prefix,
        &out.parts.body,
        &out.parts.suffix,
    ];
    let total: usize = pieces.iter().map(|p| p.len()).sum();
    while out.written < total {
        // The unsent rest of each piece, in order.
        let mut skip = out.written;
        let mut slices = [IoSlice::new(&[]); 4];
        let mut n = 0;
        for piece in pieces {
            if skip >= piece.len() {
                skip -= piece.len();
                continue;
            }
            slices[n] = IoSlice::new(&piece[skip..]);
            skip = 0;
            n += 1;
        }
        let result = if n == 1 {
            // std's TcpStream::write sends with MSG_NOSIGNAL.
            stream.write(&slices[0])
        } else {
            socket_send::send_vectored(&*stream, &slices[..n])
        };
        match result {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => out.written += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection in the linger phase whose peer has sent `bytes` bytes
    /// that are waiting to be read, and the peer's end.
    fn lingering_with(bytes: usize) -> (Conn, std::net::TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut peer = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (ours, _) = listener.accept().unwrap();
        ours.set_nonblocking(true).unwrap();
        // Without blocking: what does not fit in the socket buffers is not sent.
        peer.set_nonblocking(true).unwrap();
        let chunk = vec![b'x'; bytes];
        let mut sent = 0;
        while sent < bytes {
            match peer.write(&chunk[sent..]) {
                Ok(n) => sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            }
        }
        assert!(sent >= bytes.min(1 << 17), "only {sent} bytes fit");
        let now = Instant::now();
        let conn = Conn {
            stream: TcpStream::from_std(ours),
            phase: Phase::Linger,
            input: Vec::new(),
            parsed_len: 0,
            read_at: 0,
            since: now,
            deadline: now + Duration::from_secs(2),
        };
        (conn, peer)
    }

    fn core() -> Core {
        Core::new(Arc::new(Directory::default()))
    }

    #[test]
    fn draining_a_closing_connection_yields_after_a_bounded_read() {
        let more_than_a_turn = 4096 * LINGER_READS_PER_TURN * 2;
        let (mut conn, _peer) = lingering_with(more_than_a_turn);
        // Let every byte arrive in our receive queue.
        std::thread::sleep(Duration::from_millis(50));
        let (mut core, limits) = (core(), ServerLimits::default());
        // One turn reads at most LINGER_READS_PER_TURN * 4 KiB, so more is
        // left: it hands the thread back instead of reading on.
        assert!(matches!(conn.drive(&mut core, &limits), Next::Again));
        // Later turns take the rest and then wait for more.
        let turns = (0..100)
            .position(|_| matches!(conn.drive(&mut core, &limits), Next::Keep))
            .expect("the input is drained in a few turns");
        assert!(
            turns >= 1,
            "the second turn drained {more_than_a_turn} bytes"
        );
    }

    #[test]
    fn a_closing_connection_is_dropped_when_its_peer_closes() {
        let (mut conn, peer) = lingering_with(10);
        drop(peer);
        std::thread::sleep(Duration::from_millis(50));
        assert!(matches!(
            conn.drive(&mut core(), &ServerLimits::default()),
            Next::Close
        ));
    }
}
