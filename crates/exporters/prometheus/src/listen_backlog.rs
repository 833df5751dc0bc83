//! A deeper queue of connections waiting to be accepted.
//!
//! `std::net::TcpListener::bind` listens with a backlog of 128. When more
//! connections than that arrive at once (a client opening hundreds, a burst of
//! reconnections), the kernel drops the further handshakes and each such
//! client, a scraper among them, retries only after a second or more. The
//! endpoint's server accepts quickly and bounds what it keeps (see
//! `ServerLimits::max_connections`), so a deeper queue costs nothing while
//! idle and keeps a well-formed scrape from waiting behind a flood.

use std::io;
use std::net::TcpListener;

/// The listen backlog asked for (the kernel caps it at
/// `/proc/sys/net/core/somaxconn`, 4096 by default).
pub(crate) const LISTEN_BACKLOG: i32 = 1024;

/// Sets `listener`'s backlog to [`LISTEN_BACKLOG`]: calling `listen` again on
/// a listening socket changes its backlog (Linux and the BSDs).
pub(crate) fn deepen(listener: &TcpListener) -> io::Result<()> {
    rustix::net::listen(listener, LISTEN_BACKLOG).map_err(io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backlog_takes_a_burst_of_connections_without_accepting() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        deepen(&listener).unwrap();
        let addr = listener.local_addr().unwrap();
        // More than std's 128 complete their handshake while nobody accepts.
        let held: Vec<_> = (0..300)
            .map(|i| {
                std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_millis(500))
                    .unwrap_or_else(|e| panic!("connection {i}: {e}"))
            })
            .collect();
        assert_eq!(held.len(), 300);
    }
}
