//! The connection loop under the routes: HTTP/1.1 connections served by hyper,
//! with the limits that keep slow or numerous clients from starving the service.
//!
//! * Header timeout: a request's headers must all arrive within it, counted from
//!   the request's first byte (from its accepting, for a connection's first
//!   request).
//! * Idle timeout: a kept-alive connection may wait so long for its next request
//!   (see [`deadlines`]).
//! * Connection cap: at most so many connections are served at once. When the cap
//!   is reached, kept-alive connections waiting for a request are closed to make
//!   room; the next connections wait in the kernel's queue until one closes. A
//!   line is logged when the cap is reached, and when accepting fails for want of
//!   file descriptors.
//! * Shutdown grace: once shutdown begins, no connection is accepted, idle ones
//!   close, requests under way may finish within the grace period; connections
//!   still open after it are closed.

mod deadlines;

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinSet;
use tower::ServiceExt;

pub(crate) use deadlines::PhaseTimeouts;
use deadlines::{ConnectionPhase, ResponseEnd, TimedIo};

/// The limits of the connection loop.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionLimits {
    /// How long a request's headers may take, and how long a kept-alive
    /// connection may wait for its next request.
    pub timeouts: PhaseTimeouts,
    /// The most connections served at once.
    pub max_connections: usize,
    /// How long requests under way may take to finish once shutdown begins.
    pub shutdown_grace: Duration,
}

/// A log line at most every so often, saying how many were not logged.
struct Throttled {
    every: Duration,
    last: Option<Instant>,
    skipped: u64,
}

impl Throttled {
    fn new(every: Duration) -> Throttled {
        Throttled {
            every,
            last: None,
            skipped: 0,
        }
    }

    /// Whether to log now, and how many times it was not logged since.
    fn due(&mut self) -> Option<u64> {
        let now = Instant::now();
        if self.last.is_some_and(|at| now - at < self.every) {
            self.skipped += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.skipped))
    }
}

/// Whether an accept error means the process or the system ran out of file
/// descriptors.
fn out_of_descriptors(error: &io::Error) -> bool {
    // EMFILE is 24 and ENFILE 23 on Linux, macOS and the BSDs.
    matches!(error.raw_os_error(), Some(23 | 24))
}

/// Serves `app` on `listener` until `shutdown` completes, then closes as the
/// module says.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut connections = JoinSet::new();
    // Woken when the cap is reached: connections waiting for a request close.
    let room_wanted = Arc::new(Notify::new());
    let mut builder = http1::Builder::new();
    // The header timeout is kept by each connection's phase (hyper's own would
    // also run while a kept-alive connection waits, and so be its idle timeout).
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(None)
        .keep_alive(true);
    let mut cap_log = Throttled::new(Duration::from_secs(10));
    let mut descriptor_log = Throttled::new(Duration::from_secs(10));
    tokio::pin!(shutdown);
    loop {
        while connections.try_join_next().is_some() {}
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                room_wanted.notify_waiters();
                if let Some(skipped) = cap_log.due() {
                    tracing::warn!(
                        "{} connections open, the cap (--max-connections): those waiting for a \
                         request are closed, new connections wait until one closes{}",
                        limits.max_connections,
                        if skipped > 0 {
                            format!(" (reached {skipped} more times since the last line)")
                        } else {
                            String::new()
                        }
                    );
                }
                tokio::select! {
                    slot = slots.clone().acquire_owned() => match slot {
                        Ok(slot) => slot,
                        Err(_) => break,
                    },
                    () = &mut shutdown => break,
                }
            }
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    if out_of_descriptors(&e) {
                        if let Some(skipped) = descriptor_log.due() {
                            tracing::error!(
                                "cannot accept a connection: {e} ({} connections open; raise the \
                                 descriptor limit, `ulimit -n`, or lower --max-connections){}",
                                limits.max_connections - slots.available_permits() - 1,
                                if skipped > 0 {
                                    format!(" ({skipped} more failures since the last line)")
                                } else {
                                    String::new()
                                }
                            );
                        }
                    } else {
                        tracing::debug!("cannot accept a connection: {e}");
                    }
                    // Let connections close before trying again.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let phase = ConnectionPhase::new(limits.timeouts);
        let io = TokioIo::new(TimedIo::new(stream, phase.clone()));
        let connection = builder.serve_connection(io, answer_with(app.clone(), phase.clone()));
        let connection = graceful.watch(connection);
        let room_wanted = room_wanted.clone();
        connections.spawn(async move {
            let _slot = slot;
            tokio::select! {
                ended = connection => if let Err(e) = ended {
                    tracing::debug!("connection ended: {e}");
                },
                () = phase.expired(&room_wanted) => {
                    tracing::debug!("connection closed: it waited past its timeout, or made room");
                }
            }
        });
    }
    drop(listener);
    let open = graceful.count();
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(limits.shutdown_grace) => {
            tracing::warn!(
                "shutdown: {} connection(s) still open after the grace period of {} s are closed \
                 ({open} were open when shutdown began)",
                connections.len(),
                limits.shutdown_grace.as_secs_f64()
            );
        }
    }
    connections.abort_all();
    while connections.join_next().await.is_some() {}
    Ok(())
}

/// The routes as one connection's hyper service: each request marks the
/// connection as serving, and its answer's end starts the wait for the next.
fn answer_with(
    app: Router,
    phase: Arc<ConnectionPhase>,
) -> impl hyper::service::Service<
    hyper::Request<hyper::body::Incoming>,
    Response = hyper::Response<ResponseEnd>,
    Error = Infallible,
    Future = impl Future<Output = Result<hyper::Response<ResponseEnd>, Infallible>> + Send,
> + Clone {
    hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
        phase.serving();
        let phase = phase.clone();
        let answer = app.clone().oneshot(request);
        async move {
            let response = answer.await?;
            Ok(response.map(|body| ResponseEnd::new(body, phase)))
        }
    })
}
