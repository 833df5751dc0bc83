//! Sending on a socket without raising SIGPIPE.
//!
//! The plug-in runs inside a host that may keep SIGPIPE's default action (C
//! and C++ programs do): a write to a connection the scraper has reset would
//! then end the whole host. `std`'s `TcpStream::write` sends with
//! `MSG_NOSIGNAL`, but its `write_vectored` is a plain `writev`, which raises
//! the signal. [`send_vectored`] is the vectored send with `MSG_NOSIGNAL`.

use std::io::{self, IoSlice};
use std::os::fd::AsFd;

use rustix::net::{SendAncillaryBuffer, SendFlags};

/// Sends as much of `bufs`, in order, as the socket takes, in one `sendmsg`
/// with `MSG_NOSIGNAL`: a reset connection is an `EPIPE` error, never a signal.
/// Returns the number of bytes sent.
pub(crate) fn send_vectored(socket: impl AsFd, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
    rustix::net::sendmsg(
        socket,
        bufs,
        &mut SendAncillaryBuffer::default(),
        SendFlags::NOSIGNAL,
    )
    .map_err(io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn the_buffers_arrive_in_order() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let sender = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut receiver, _) = listener.accept().unwrap();
        let sent = send_vectored(
            &sender,
            &[
                IoSlice::new(b"head "),
                IoSlice::new(b""),
                IoSlice::new(b"body"),
            ],
        )
        .unwrap();
        assert_eq!(sent, 9);
        drop(sender);
        let mut got = String::new();
        receiver.read_to_string(&mut got).unwrap();
        assert_eq!(got, "head body");
    }

    #[test]
    fn a_closed_peer_is_an_error_not_a_signal() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let sender = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (receiver, _) = listener.accept().unwrap();
        drop(receiver);
        // The first send may still be accepted (and answered with a reset);
        // a later one fails. With the default SIGPIPE action, a plain writev
        // would end this process here; the test harness ignores SIGPIPE, so
        // the child-process test in tests/ checks that part.
        let failed = (0..100).find_map(|_| {
            std::thread::sleep(std::time::Duration::from_millis(5));
            send_vectored(&sender, &[IoSlice::new(b"x")]).err()
        });
        let err = failed.expect("sending to a closed peer fails");
        assert!(
            matches!(
                err.kind(),
                io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
            ),
            "{err:?}"
        );
    }
}
