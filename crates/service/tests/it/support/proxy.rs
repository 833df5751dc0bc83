//! A TCP relay between the service and the real PostgreSQL of the tests, which can
//! stall the traffic (a frozen server, a stalled network: bytes are held, then
//! delivered late) or cut a connection right after a `COMMIT` reached the server
//! and before its answer reaches the service.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

#[derive(Default)]
struct Shared {
    /// Nothing is relayed while set.
    frozen: AtomicBool,
    /// The next `COMMIT` freezes the relay before it is passed on.
    freeze_at_commit: AtomicBool,
    /// The next `COMMIT` is passed on, then its connection is cut before the answer.
    cut_after_commit: AtomicBool,
    /// How many connections were cut (counted when the `COMMIT` is passed on).
    cuts: AtomicUsize,
}

/// A running relay to a PostgreSQL server.
pub struct Proxy {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

/// The bytes of a simple-protocol `COMMIT` query.
const COMMIT: &[u8] = b"Q\0\0\0\x0bCOMMIT\0";

impl Proxy {
    /// Relays a loopback port to `upstream`.
    pub fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared::default());
        let accept_shared = shared.clone();
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                relay(client, server, accept_shared.clone());
            }
        });
        Proxy { addr, shared }
    }

    /// `url` (a PostgreSQL URL on the upstream server) through this relay.
    pub fn url(&self, url: &str) -> String {
        let start = url.find('@').expect("a URL with credentials") + 1;
        let end = start + url[start..].find('/').expect("a URL with a database");
        format!("{}{}{}", &url[..start], self.addr, &url[end..])
    }

    /// Holds every byte from now on (until [`Proxy::thaw`]).
    pub fn freeze(&self) {
        self.shared.frozen.store(true, Ordering::SeqCst);
    }

    /// Holds every byte from the next `COMMIT` on (that `COMMIT` included).
    pub fn freeze_at_next_commit(&self) {
        self.shared.freeze_at_commit.store(true, Ordering::SeqCst);
    }

    /// Whether the relay holds its bytes.
    pub fn is_frozen(&self) -> bool {
        self.shared.frozen.load(Ordering::SeqCst)
    }

    /// Delivers what was held and relays again.
    pub fn thaw(&self) {
        self.shared.frozen.store(false, Ordering::SeqCst);
    }

    /// Passes the next `COMMIT` on, waits until the server has run it, and cuts
    /// the connection before its answer reaches the client.
    pub fn cut_after_next_commit(&self) {
        self.shared.cut_after_commit.store(true, Ordering::SeqCst);
    }

    /// How many connections were cut after a `COMMIT`.
    pub fn cuts(&self) -> usize {
        self.shared.cuts.load(Ordering::SeqCst)
    }
}

fn wait_while_frozen(shared: &Shared) {
    while shared.frozen.load(Ordering::SeqCst) {
        thread::sleep(Duration::from_millis(5));
    }
}

fn relay(client: TcpStream, server: TcpStream, shared: Arc<Shared>) {
    let severed = Arc::new(AtomicBool::new(false));
    let (mut from_client, mut to_server) =
        (client.try_clone().unwrap(), server.try_clone().unwrap());
    let (mut from_server, mut to_client) = (server, client);
    {
        let shared = shared.clone();
        let severed = severed.clone();
        let to_client = to_client.try_clone().unwrap();
        let from_server = from_server.try_clone().unwrap();
        thread::spawn(move || {
            let mut buffer = vec![0u8; 64 * 1024];
            loop {
                let n = match from_client.read(&mut buffer) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let chunk = &buffer[..n];
                let commit = chunk.windows(COMMIT.len()).any(|w| w == COMMIT);
                if commit && shared.freeze_at_commit.swap(false, Ordering::SeqCst) {
                    shared.frozen.store(true, Ordering::SeqCst);
                }
                wait_while_frozen(&shared);
                let cut = commit && shared.cut_after_commit.swap(false, Ordering::SeqCst);
                if cut {
                    severed.store(true, Ordering::SeqCst);
                    shared.cuts.fetch_add(1, Ordering::SeqCst);
                }
                if to_server.write_all(chunk).is_err() {
                    break;
                }
                if cut {
                    // Time for the server to commit, then the answer is lost.
                    thread::sleep(Duration::from_millis(500));
                    let _ = to_client.shutdown(Shutdown::Both);
                    let _ = from_server.shutdown(Shutdown::Both);
                    return;
                }
            }
            let _ = to_server.shutdown(Shutdown::Write);
        });
    }
    thread::spawn(move || {
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            let n = match from_server.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            wait_while_frozen(&shared);
            if severed.load(Ordering::SeqCst) || to_client.write_all(&buffer[..n]).is_err() {
                break;
            }
        }
        let _ = to_client.shutdown(Shutdown::Both);
    });
}
