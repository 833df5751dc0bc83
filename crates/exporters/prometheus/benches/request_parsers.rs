//! The endpoint's request-head parsing (`httparse`) on real scrape heads.
//! The side-by-side run against the hand-written parser it replaced is in
//! crates/bench/results/prometheus.md ("Prometheus request parsing: httparse
//! against the hand-written parser"), made with this file at commit `432f334`.
//!
//! ```text
//! cargo bench -p nixl-telemetry-prometheus --bench request_parsers [-- --rounds R]
//! ```
//!
//! Heads: the one a real Prometheus 2.42.0 sends (captured,
//! `tests/fixtures/prometheus-2.42.0-scrape-head.http`) and Prometheus 3.x's
//! (`prometheus-3-scrape-head.http`). Cases, each as the server does it:
//! `whole`, the head arrives in one read and is parsed; `pieces-16` /
//! `pieces-1`, it arrives in 16-byte (1-byte) reads and everything received
//! is parsed after each (which is what lets the server refuse garbage at
//! once). For scale, `read-1` times what the server spends anyway per piece
//! in the `pieces-1` case: a 1-byte `read(2)` from a loopback TCP socket (the
//! bytes already queued), per head's worth of bytes. Figures are medians over
//! rounds, ns per head.

use std::hint::black_box;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use nixl_telemetry_prometheus::request_parsers::{parse, Verdict};

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

/// The server's steps for one head arriving in `piece`-byte reads: a parse
/// after every piece.
fn in_pieces(head: &[u8], piece: usize) -> Verdict {
    let mut len = 0;
    while len < head.len() {
        len = (len + piece).min(head.len());
        match parse(black_box(&head[..len])) {
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
        server.read_exact(&mut byte).expect("read");
        // Let every byte arrive in the server's receive queue.
        std::thread::sleep(Duration::from_millis(1));
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
    println!("rounds: {rounds} (medians, ns per head)");
    println!("{:<16} {:<10} {:>10}", "head", "case", "httparse");
    for (name, head) in HEADS {
        let expected = parse(head);
        assert!(matches!(expected, Some(Ok(_))), "{name}: {expected:?}");
        for piece in [head.len(), 16, 1] {
            assert_eq!(in_pieces(head, piece), expected);
            let case = if piece == head.len() {
                "whole".to_owned()
            } else {
                format!("pieces-{piece}")
            };
            let batch = if piece == 1 { 200 } else { 5000 };
            let mut times = Vec::new();
            for _ in 0..rounds {
                let t = Instant::now();
                for _ in 0..batch {
                    black_box(in_pieces(black_box(head), piece));
                }
                times.push(t.elapsed().as_nanos() as f64 / batch as f64);
            }
            println!("{name:<16} {case:<10} {:>10.0}", median(&mut times));
        }
        println!(
            "{name:<16} {:<10} {:>10.0} (1-byte reads of a queued head, for scale)",
            "read-1",
            one_byte_reads(head, rounds)
        );
    }
}
