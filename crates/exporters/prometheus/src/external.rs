//! The HTTP endpoint for exporters that keep their agents' totals somewhere
//! else than this crate's own per-agent storage: the multi-process
//! `prometheus_mp` plug-in keeps them in memory-mapped stores, one per
//! process, and renders every rank from there with this crate's renderer
//! ([`crate::render()`]). [`serve`] runs the single-process
//! exporter's HTTP server (its limits, gzip, `exposer_*` families) over any
//! [`BodySource`].

use std::io;
use std::sync::Arc;

use crate::render::Format;

use crate::server::{self, ServerHandle};
use crate::settings::ServerLimits;

/// What an HTTP endpoint serves: bodies rendered on demand, cached by key.
pub trait BodySource: Send + Sync + 'static {
    /// A value that changes whenever the body would: a cached body rendered at
    /// the same key is served again. A source that cannot tell returns a new
    /// key every call (then every scrape renders, and scrapes read together
    /// share one rendering).
    fn key(&self) -> (u64, u64);
    /// The whole body in `format`.
    fn render(&self, format: Format) -> Vec<u8>;
}

/// A running HTTP endpoint started by [`serve`]; dropping it (or
/// [`HttpServer::shutdown`]) stops it and closes the listener.
#[derive(Debug)]
pub struct HttpServer {
    handle: ServerHandle,
}

impl HttpServer {
    /// Stops serving, closes every connection and the listener, and waits for
    /// the server thread to end.
    pub fn shutdown(self) {
        self.handle.shutdown();
    }
}

/// Serves `GET /metrics` from `source` on `listener` (already bound) in a new
/// thread: the single-process exporter's HTTP server, with its limits.
pub fn serve(
    listener: std::net::TcpListener,
    limits: ServerLimits,
    source: Arc<dyn BodySource>,
) -> io::Result<HttpServer> {
    let handle = server::spawn_source(listener, source, limits)?;
    Ok(HttpServer { handle })
}
