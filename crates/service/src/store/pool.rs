//! A few idle connections kept for the readers (`GET` requests, health checks).

use std::sync::Mutex;
use std::time::Duration;

use super::{Connection, StoreUrl};
use crate::error::StoreError;

/// Connections for reading, opened when none is idle and kept (up to a few) for the
/// next request.
pub(crate) struct Pool {
    url: StoreUrl,
    idle: Mutex<Vec<Connection>>,
    max_idle: usize,
    timeout: Duration,
}

impl Pool {
    /// A pool of connections to `url`, keeping at most `max_idle` idle ones. The
    /// schema must be current already (the writer's connection migrates it).
    pub fn new(url: StoreUrl, max_idle: usize, timeout: Duration) -> Pool {
        Pool {
            url,
            idle: Mutex::new(Vec::new()),
            max_idle,
            timeout,
        }
    }

    /// Runs `body` with a connection (blocking: call it where blocking is allowed).
    pub fn with<T>(
        &self,
        body: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut connection = match idle {
            Some(connection) => connection,
            None => Connection::open(&self.url, false, self.timeout)?,
        };
        let result = body(&mut connection);
        if !connection.is_broken() {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            if idle.len() < self.max_idle {
                idle.push(connection);
            }
        }
        result
    }
}
