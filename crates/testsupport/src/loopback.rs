//! Loopback addresses for a test's server to bind.

use std::collections::HashSet;
use std::net::{SocketAddr, TcpListener};
use std::sync::Mutex;

/// Ports this process has handed out.
static HANDED_OUT: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

/// A loopback address whose port was free a moment ago and has not been
/// handed out before in this process. The kernel may give a port it just took
/// back to the next `bind` to port 0, so two tests running side by side could
/// otherwise get the same address, and one test's server would answer for
/// another's (or a closed endpoint seem open).
pub fn unused_address() -> SocketAddr {
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    let handed_out = handed_out.get_or_insert_with(HashSet::new);
    loop {
        let address = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free loopback port");
        if handed_out.insert(address.port()) {
            return address;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_port_is_handed_out_twice() {
        let ports: Vec<u16> = (0..2000).map(|_| unused_address().port()).collect();
        let distinct: HashSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), ports.len());
    }
}
