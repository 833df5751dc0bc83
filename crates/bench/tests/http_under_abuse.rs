//! The endpoint under abuse, with the server in its own process
//! (`prometheus-abuse serve`): 1 000 idle connections, 200 slow-loris
//! connections, 1 MB request lines, 10 000 headers, garbage bytes, conflicting
//! `Content-Length`/`Transfer-Encoding`, clients vanishing mid-response; each
//! alone, then all at once. Under each, well-formed scrapes (the head a real
//! Prometheus sends) get a correct 200, every abuser gets the answer it must
//! get (431, 400) or none where none is due, the server's memory stays within a
//! bound, and its descriptors return to their baseline once the abusers leave.
//! Functional only: no timing is asserted (the `prometheus-abuse measure`
//! binary measures, see docs/testing.md "HTTP under abuse").
//!
//! The server's timeouts are shortened (request 3 s, write 3 s, linger 1 s) so
//! slots held by slow clients come back within the test's time; the counts are
//! the full ones above.

#![forbid(unsafe_code)]

#[path = "../src/bin/prometheus-abuse/abuse.rs"]
mod abuse;

use std::path::Path;
use std::time::Duration;

use abuse::{Abuse, Intensity, Kind, ServeOptions, Server};

/// RSS growth allowed under abuse, KiB (see `RSS_BOUND_KIB` in the binary):
/// at most 256 connections of at most 8 KiB of request each are held.
const RSS_BOUND_KIB: u64 = 16 * 1024;

/// Raises this process's descriptor limit to at least 4 096 if the hard limit
/// allows (or the process may raise it: root), else to the hard limit: the
/// abusers hold about 1 300 connections at once. Returns the soft limit now
/// in force.
fn raise_fd_limit() -> u64 {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    const WANTED: u64 = 4096;
    let limit = getrlimit(Resource::Nofile);
    // `None` is no limit.
    let raise = |v: Option<u64>| v.map(|v| v.max(WANTED));
    let wanted = Rlimit {
        current: raise(limit.current),
        maximum: raise(limit.maximum),
    };
    if setrlimit(Resource::Nofile, wanted).is_err() {
        let _ = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            },
        );
    }
    getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
}

fn scrapes_succeed(server: &Server, n: usize, during: &str) {
    for i in 0..n {
        if let Err(e) = abuse::scrape(server.addr) {
            panic!("scrape {i} under {during}: {e}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn scrapes_are_answered_under_every_abuse_and_resources_come_back() {
    let fd_limit = raise_fd_limit();
    // The full counts above; they need about 1 300 descriptors in this process.
    let intensity = Intensity::default();
    assert!(
        fd_limit >= 2048,
        "this test holds about 1 300 connections; the descriptor limit is {fd_limit} \
         (the hard limit is too low and cannot be raised here: run it with `ulimit -n 4096`)"
    );
    let options = ServeOptions {
        request_timeout_ms: 3000,
        write_timeout_ms: 3000,
        linger_ms: 1000,
        max_connections: 256,
        agents: 16,
    };
    let server = Server::start(Path::new(env!("CARGO_BIN_EXE_prometheus-abuse")), &options)
        .expect("the endpoint process starts");
    assert!(
        server.body_bytes > 256 * 1024,
        "the plain body ({} bytes) must exceed the socket buffers for clients to vanish mid-response",
        server.body_bytes
    );
    scrapes_succeed(&server, 5, "no abuse");
    // The warm-up scrapes' connections close as the server sees their end.
    let fds_baseline = server.settled_fds();
    let rss_baseline = server.rss_kib();
    assert!(rss_baseline > 0 && fds_baseline > 0);
    // Request + linger + write timeouts and a margin for a loaded machine.
    let settle = Duration::from_secs(15);

    let mut phases: Vec<Vec<Kind>> = Kind::ALL.iter().map(|&k| vec![k]).collect();
    phases.push(Kind::ALL.to_vec());
    for kinds in phases {
        let name = if kinds.len() == 1 {
            kinds[0].name().to_owned()
        } else {
            "all abuses at once".to_owned()
        };
        let abuse = Abuse::start(&kinds, server.addr, intensity);
        // Let the abusers build up their connections.
        std::thread::sleep(Duration::from_secs(1));
        scrapes_succeed(&server, 5, &name);
        let rss_during = server.rss_kib();
        let fds_during = server.fds();
        let tally = abuse.stop();
        assert_eq!(
            tally.unexpected_count, 0,
            "{name}: abusers got answers they must not get: {:?}",
            tally.unexpected
        );
        for &kind in &kinds {
            match kind {
                // Every idle connection was accepted by the kernel; the server
                // keeps at most max_connections of them.
                Kind::Idle => assert!(
                    tally.connections >= intensity.idle as u64,
                    "{name}: {tally:?}"
                ),
                Kind::SlowLoris => {
                    assert!(
                        tally.connections >= intensity.slow_loris as u64,
                        "{name}: {tally:?}"
                    )
                }
                // Each repeating abuser was answered as it must be at least once.
                _ => assert!(tally.expected > 0, "{name}: {tally:?}"),
            }
        }
        assert!(
            fds_during <= fds_baseline + options.max_connections + 2,
            "{name}: {fds_during} descriptors open in the server (baseline {fds_baseline}, at most {} connections)",
            options.max_connections
        );
        assert!(
            rss_during <= rss_baseline + RSS_BOUND_KIB,
            "{name}: server RSS {rss_during} KiB, baseline {rss_baseline} KiB"
        );
        let fds_after = server.wait_for_fds(fds_baseline, settle);
        assert_eq!(
            fds_after, fds_baseline,
            "{name}: the server's descriptors did not return to the baseline within {settle:?}"
        );
        // And the endpoint still serves once they are gone.
        scrapes_succeed(&server, 1, &format!("after {name}"));
    }
    let rss_after = server.rss_kib();
    assert!(
        rss_after <= rss_baseline + RSS_BOUND_KIB,
        "server RSS {rss_after} KiB after the abuses, baseline {rss_baseline} KiB"
    );
}
