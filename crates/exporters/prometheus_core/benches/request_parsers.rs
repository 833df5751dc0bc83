//! The endpoint's request-head parsing, `httparse` against the hand-written
//! parser it replaced, side by side in one run (figures in docs/PERFORMANCE.md,
//! "Prometheus request parsing: httparse against the hand-written parser").
//!
//! ```text
//! cargo bench -p nixl-telemetry-prometheus-core --bench request_parsers [-- --rounds R]
//! ```
//!
//! Heads: the one a real Prometheus 2.42.0 sends (captured,
//! `tests/fixtures/prometheus-2.42.0-scrape-head.http`) and Prometheus 3.x's
//! (`prometheus-3-scrape-head.http`). Cases, each as the server does it:
//!
//! * `whole`: the head arrives in one read. Hand-written: the end-of-head
//!   check, then the parse; httparse: the parse.
//! * `pieces-16` / `pieces-1`: the head arrives in 16-byte (1-byte) pieces and
//!   the server looks after each. Hand-written: the end-of-head check on the
//!   new bytes after each piece, the parse once it may end; httparse: a parse
//!   of everything received after each piece (which is what lets it refuse
//!   garbage at once).
//!
//! For scale, `read-1` times what the server spends anyway per piece in the
//! `pieces-1` case: a 1-byte `read(2)` from a loopback TCP socket (the bytes
//! already queued), per head's worth of bytes.
//!
//! Rounds alternate the two parsers so the machine's load weighs on both
//! alike; each round times a batch of heads; figures are medians over rounds
//! in ns per head, and the ratio httparse / hand-written of the medians.

use std::hint::black_box;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Instant;

use nixl_telemetry_prometheus_core::request_parsers::{
    may_end_a_head, parse_handwritten, parse_httparse, Verdict,
};

const HEADS: [(&str, &[u8]); 2] = [
    (
        "prometheus-2.42",
        include_bytes!("../tests/fixtures/prometheus-2.42.0-scrape-head.http"),
    ),
    (
        "prometheus-3",
        include_bytes!("../tests/fixtures/prometheus-3-scrape-head.http"),
    ),
];

/// The server's steps for one head arriving in `piece`-byte reads with the
/// hand-written parser.
fn handwritten_in_pieces(head: &[u8], piece: usize) -> Verdict {
    let mut scanned = 0;
    let mut len = 0;
    while len < head.len() {
        len = (len + piece).min(head.len());
        let buf = black_box(&head[..len]);
        if !may_end_a_head(buf, scanned) {
            scanned = len;
            continue;
        }
        match parse_handwritten(buf) {
            None => scanned = len,
            done => return done,
        }
    }
    None
}

/// The same with httparse: a parse after every piece.
fn httparse_in_pieces(head: &[u8], piece: usize) -> Verdict {
    let mut len = 0;
    while len < head.len() {
        len = (len + piece).min(head.len());
        match parse_httparse(black_box(&head[..len])) {
            None => {}
            done => return done,
        }
    }
    None
}

/// ns per head for reading `head.len()` queued bytes one `read(2)` at a time
/// from a loopback TCP socket.
fn one_byte_reads(head: &[u8], rounds: usize) -> f64 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let mut client = TcpStream::connect(listener.local_addr().unwrap()).expect("connect");
    let (mut server, _) = listener.accept().expect("accept");
    let mut times = Vec::new();
    let mut byte = [0u8; 1];
    for _ in 0..rounds {
        client.write_all(head).expect("write");
        // Let every byte arrive in the server's receive queue.
        server.set_nonblocking(false).unwrap();
        server.read_exact(&mut byte).expect("read");
        std::thread::sleep(std::time::Duration::from_millis(1));
        let t = Instant::now();
        for _ in 1..head.len() {
            black_box(server.read(&mut byte).expect("read"));
        }
        times.push(t.elapsed().as_nanos() as f64 * head.len() as f64 / (head.len() - 1) as f64);
    }
    median(&mut times)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut rounds = 201usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--rounds" {
            rounds = args
                .next()
                .and_then(|v| v.parse().ok())
                .expect("--rounds N");
        }
    }
    println!("rounds: {rounds} (medians, ns per head; ratio = httparse / hand-written)");
    println!(
        "{:<16} {:<10} {:>14} {:>10} {:>7}",
        "head", "case", "hand-written", "httparse", "ratio"
    );
    for (name, head) in HEADS {
        // Both parsers agree on these heads before anything is timed.
        let expected = parse_handwritten(head);
        assert!(matches!(expected, Some(Ok(_))), "{name}: {expected:?}");
        assert_eq!(parse_httparse(head), expected, "{name}");
        for piece in [head.len(), 16, 1] {
            assert_eq!(handwritten_in_pieces(head, piece), expected);
            assert_eq!(httparse_in_pieces(head, piece), expected);
            let case = if piece == head.len() {
                "whole".to_owned()
            } else {
                format!("pieces-{piece}")
            };
            let batch = if piece == 1 { 200 } else { 5000 };
            let (mut old, mut new) = (Vec::new(), Vec::new());
            for round in 0..rounds {
                let time = |f: &dyn Fn(&[u8], usize) -> Verdict| {
                    let t = Instant::now();
                    for _ in 0..batch {
                        black_box(f(black_box(head), piece));
                    }
                    t.elapsed().as_nanos() as f64 / batch as f64
                };
                let (a, b) = if round % 2 == 0 {
                    let a = time(&handwritten_in_pieces);
                    (a, time(&httparse_in_pieces))
                } else {
                    let b = time(&httparse_in_pieces);
                    (time(&handwritten_in_pieces), b)
                };
                old.push(a);
                new.push(b);
            }
            let (old, new) = (median(&mut old), median(&mut new));
            println!(
                "{name:<16} {case:<10} {old:>14.0} {new:>10.0} {:>7.2}",
                new / old
            );
        }
        println!(
            "{name:<16} {:<10} {:>14.0} (1-byte reads of a queued head, for scale)",
            "read-1",
            one_byte_reads(head, rounds)
        );
    }
}
