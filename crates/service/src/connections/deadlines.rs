//! The two clocks of a connection: how long a request's headers may take, and
//! how long a kept-alive connection may wait for its next request.
//!
//! A connection is in one of three phases:
//!
//! * **waiting**: no request under way and no byte of the next one read yet;
//!   closed after the idle timeout (a new connection starts here, but must send
//!   its first request within the header timeout);
//! * **reading a head**: a byte of a request has arrived, its headers have not all;
//!   closed after the header timeout, counted from that first byte;
//! * **serving**: the headers are in and the answer is not yet written; no clock
//!   runs here (the body has its own timeout, the routes theirs).
//!
//! The socket wrapper [`TimedIo`] sees the first byte, the service wrapper sees
//! the headers complete ([`ConnectionPhase::serving`]), and the answer's body,
//! once dropped by hyper after its last byte, starts the wait again
//! ([`ResponseEnd`]). [`ConnectionPhase::expired`] is watched by a task beside
//! the connection, which drops it when its time is up. When the connection cap
//! is reached, waiting connections are closed at once, to make room.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::Instant;

/// Where a connection is, and since when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No request under way; `first` while the connection has not had one.
    Waiting { since: Instant, first: bool },
    /// A request's first byte arrived at `since`; its headers have not all.
    ReadingHead { since: Instant },
    /// A request is being answered.
    Serving,
}

/// The timeouts a connection's phases run under.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PhaseTimeouts {
    /// From a request's first byte to its last header (and, for a new
    /// connection, from its accepting to its first request's last header).
    pub header: Duration,
    /// From an answer's last byte to the next request's first byte.
    pub idle: Duration,
}

/// One connection's phase, shared by its socket, its service and its watchdog.
#[derive(Debug)]
pub(crate) struct ConnectionPhase {
    phase: Mutex<Phase>,
    timeouts: PhaseTimeouts,
    /// Woken when the phase changes in a way that moves the deadline.
    changed: Notify,
}

impl ConnectionPhase {
    /// A connection just accepted.
    pub fn new(timeouts: PhaseTimeouts) -> Arc<ConnectionPhase> {
        Arc::new(ConnectionPhase {
            phase: Mutex::new(Phase::Waiting {
                since: Instant::now(),
                first: true,
            }),
            timeouts,
            changed: Notify::new(),
        })
    }

    fn set(&self, phase: Phase) {
        *self.phase.lock().unwrap_or_else(|e| e.into_inner()) = phase;
        self.changed.notify_one();
    }

    fn get(&self) -> Phase {
        *self.phase.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes arrived: a waiting connection starts reading a request's head.
    fn bytes_read(&self) {
        let mut phase = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        if let Phase::Waiting { since, first } = *phase {
            // A new connection's header time runs from its accepting.
            let since = if first { since } else { Instant::now() };
            *phase = Phase::ReadingHead { since };
            drop(phase);
            self.changed.notify_one();
        }
    }

    /// A request's headers are all in.
    pub fn serving(&self) {
        self.set(Phase::Serving);
    }

    /// An answer has been written: the connection waits for the next request.
    fn answered(&self) {
        self.set(Phase::Waiting {
            since: Instant::now(),
            first: false,
        });
    }

    /// When the current phase runs out, if it has a clock.
    fn deadline(&self) -> Option<Instant> {
        match self.get() {
            Phase::Waiting { since, first: true } => Some(since + self.timeouts.header),
            Phase::Waiting { since, .. } => Some(since + self.timeouts.idle),
            Phase::ReadingHead { since } => Some(since + self.timeouts.header),
            Phase::Serving => None,
        }
    }

    /// Whether the connection waits for a request with nothing of it read: the
    /// one kind that may be closed at once to make room.
    fn waiting(&self) -> bool {
        matches!(self.get(), Phase::Waiting { first: false, .. })
    }

    /// Completes when the connection's current phase has run out, or, while it
    /// waits for a request, when `room_wanted` is notified.
    pub async fn expired(&self, room_wanted: &Notify) {
        loop {
            let changed = self.changed.notified();
            let room = room_wanted.notified();
            match self.deadline() {
                Some(deadline) if Instant::now() >= deadline => return,
                Some(deadline) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(deadline) => {}
                        () = changed => {}
                        () = room, if self.waiting() => return,
                    }
                }
                None => changed.await,
            }
        }
    }
}

/// A socket that tells its connection's phase when bytes arrive.
pub(crate) struct TimedIo<S> {
    inner: S,
    phase: Arc<ConnectionPhase>,
}

impl<S> TimedIo<S> {
    pub fn new(inner: S, phase: Arc<ConnectionPhase>) -> TimedIo<S> {
        TimedIo { inner, phase }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for TimedIo<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.phase.bytes_read();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for TimedIo<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// An answer's body that starts the connection's wait for the next request when
/// hyper drops it, after its last byte (or when the connection ends).
pub(crate) struct ResponseEnd {
    body: axum::body::Body,
    phase: Arc<ConnectionPhase>,
}

impl ResponseEnd {
    pub fn new(body: axum::body::Body, phase: Arc<ConnectionPhase>) -> ResponseEnd {
        ResponseEnd { body, phase }
    }
}

impl Drop for ResponseEnd {
    fn drop(&mut self) {
        self.phase.answered();
    }
}

impl HttpBody for ResponseEnd {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUTS: PhaseTimeouts = PhaseTimeouts {
        header: Duration::from_secs(2),
        idle: Duration::from_secs(30),
    };

    #[tokio::test(start_paused = true)]
    async fn each_phase_runs_its_own_clock() {
        let phase = ConnectionPhase::new(TIMEOUTS);
        let accepted = Instant::now();
        // A new connection: the header timeout, from its accepting.
        assert_eq!(phase.deadline(), Some(accepted + TIMEOUTS.header));
        tokio::time::advance(Duration::from_secs(1)).await;
        phase.bytes_read();
        assert_eq!(phase.deadline(), Some(accepted + TIMEOUTS.header));
        phase.serving();
        assert_eq!(phase.deadline(), None);
        tokio::time::advance(Duration::from_secs(100)).await;
        phase.answered();
        let answered = Instant::now();
        assert_eq!(phase.deadline(), Some(answered + TIMEOUTS.idle));
        // The next request's first byte starts the header clock afresh.
        tokio::time::advance(Duration::from_secs(20)).await;
        phase.bytes_read();
        assert_eq!(
            phase.deadline(),
            Some(answered + Duration::from_secs(20) + TIMEOUTS.header)
        );
        // More bytes of the same head do not move it.
        tokio::time::advance(Duration::from_secs(1)).await;
        phase.bytes_read();
        assert_eq!(
            phase.deadline(),
            Some(answered + Duration::from_secs(20) + TIMEOUTS.header)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn expires_when_its_phase_runs_out_and_not_while_serving() {
        let phase = ConnectionPhase::new(TIMEOUTS);
        let room = Notify::new();
        phase.serving();
        let waited = tokio::time::timeout(Duration::from_secs(3600), phase.expired(&room)).await;
        assert!(waited.is_err(), "no clock runs while serving");
        phase.answered();
        let started = Instant::now();
        phase.expired(&room).await;
        assert_eq!(started.elapsed(), TIMEOUTS.idle);
    }

    /// A task that ends when `phase` expires.
    fn watch(phase: &Arc<ConnectionPhase>, room: &Arc<Notify>) -> tokio::task::JoinHandle<()> {
        let (phase, room) = (phase.clone(), room.clone());
        tokio::spawn(async move { phase.expired(&room).await })
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_connection_makes_room_and_a_busy_one_does_not() {
        let phase = ConnectionPhase::new(TIMEOUTS);
        let room = Arc::new(Notify::new());
        phase.bytes_read();
        let reading = watch(&phase, &room);
        tokio::task::yield_now().await;
        room.notify_waiters();
        tokio::time::advance(Duration::from_millis(10)).await;
        assert!(!reading.is_finished(), "a head being read is not cut short");
        reading.abort();
        phase.serving();
        phase.answered();
        let waiting = watch(&phase, &room);
        tokio::task::yield_now().await;
        room.notify_waiters();
        tokio::time::timeout(Duration::from_millis(10), waiting)
            .await
            .expect("a waiting connection gives up its place")
            .unwrap();
    }
}
