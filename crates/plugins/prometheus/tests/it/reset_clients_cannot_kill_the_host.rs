//! A scraper that resets its connection must not kill the host process.
//!
//! The plug-in lives in a C or C++ host, where SIGPIPE keeps its default
//! action: a write to a socket the peer has reset ends the whole process
//! unless the write asks for no signal. Rust programs (and so this test
//! binary) ignore SIGPIPE, which would hide the problem: the test runs itself
//! again as a child with SIGPIPE restored to its default, and that child sends
//! requests and resets the connection before the answer is written.

use crate::common;
use nixl_telemetry_testsupport::child;

use std::io::Write;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::Duration;

use common::{connect, ev, exporter, read_response, scrape};
use nixl_telemetry_abi::Category;

/// Set in the child process.
const CHILD: &str = "NIXL_PROMETHEUS_TEST_SIGPIPE_CHILD";
const RESETS: usize = 300;

#[test]
fn a_scraper_that_resets_cannot_kill_the_host() {
    if child::is_child(CHILD) {
        reset_scrapes_with_default_sigpipe();
        return;
    }
    let (status, said) = child::run_as_child(
        &child::test_name(module_path!(), "a_scraper_that_resets_cannot_kill_the_host"),
        CHILD,
    );
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        status.signal(),
        None,
        "the child (SIGPIPE at its default action) was killed by signal {:?}: {said}",
        status.signal()
    );
    assert!(status.success(), "child failed: {said}");
    assert!(said.contains("endpoint alive after"), "{said}");
}

/// Runs in the child: SIGPIPE back to its default (as in a C host), then
/// requests whose connections are reset before they can be answered, then a
/// normal scrape.
fn reset_scrapes_with_default_sigpipe() {
    // SAFETY: signal() with SIG_DFL installs no handler; nothing else in this
    // process is changing signal dispositions at the same time.
    let previous = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    assert_ne!(previous, libc::SIG_ERR);
    let mut e = exporter("reset-target");
    e.record(&[ev(Category::TRANSFER, "agent_tx_bytes", 4096)]);
    let addr = e.local_addr();
    const REQUEST: &[u8] = b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n";
    for _ in 0..RESETS {
        // One full exchange first, so the server holds the connection waiting
        // for its next request (a fresh connection is answered at once).
        let mut s = connect(addr);
        s.write_all(REQUEST).unwrap();
        read_response(&mut s, false);
        // The next request and the reset arrive together: the server reads
        // the request, then the reset, then writes its answer.
        s.write_all(REQUEST).unwrap();
        reset_on_close(&s);
        drop(s);
    }
    // Give the server time to get to every reset connection.
    std::thread::sleep(Duration::from_millis(200));
    let body = scrape(addr, None).text();
    assert!(body.contains("agent_tx_bytes_total{"), "{body}");
    println!("endpoint alive after {RESETS} reset scrapes");
}

/// Makes closing `s` send a reset (linger on, timeout 0) instead of a FIN.
fn reset_on_close(s: &TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: the descriptor is open for the call; the option value is a
    // valid `linger` of the size given.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "SO_LINGER: {}", std::io::Error::last_os_error());
}
