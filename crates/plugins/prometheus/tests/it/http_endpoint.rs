//! The HTTP side over real loopback sockets: formats by `Accept`, 404/405/HEAD,
//! keep-alive and pipelining, garbage, oversized heads, and clients that stall
//! or never read, none of which may keep other scrapes from being answered.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{
    connect, ev, exchange, exporter, exporter_with_limits, read_pipelined, read_response, scrape,
    split_exposer, unlabelled,
};
use nixl_telemetry_abi::Category;
use nixl_telemetry_prometheus::{
    Format, ServerLimits, OPENMETRICS_CONTENT_TYPE, TEXT_CONTENT_TYPE,
};

const PROMETHEUS_ACCEPT: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

fn short_limits() -> ServerLimits {
    ServerLimits {
        max_connections: 16,
        max_request_bytes: 1024,
        request_timeout: Duration::from_millis(400),
        write_timeout: Duration::from_millis(400),
        linger_timeout: Duration::from_millis(200),
    }
}

/// Whether the server has closed `s` (EOF or reset) within `within`.
fn closed_by_server(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 65536];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn serves_text_by_default_and_openmetrics_when_asked() {
    let mut e = exporter("formats");
    e.record(&[ev(Category::TRANSFER, "agent_tx_bytes", 77)]);
    let text = scrape(e.local_addr(), None);
    assert_eq!(text.status, 200);
    assert_eq!(text.header("content-type"), Some(TEXT_CONTENT_TYPE));
    assert_eq!(split_exposer(&text.body).1, e.render(Format::Text));
    assert!(text.text().lines().any(|l| l
        .starts_with("agent_tx_bytes_total{agent_name=\"formats\",")
        && l.ends_with("} 77")));

    let om = scrape(e.local_addr(), Some(PROMETHEUS_ACCEPT));
    assert_eq!(om.status, 200);
    assert_eq!(om.header("content-type"), Some(OPENMETRICS_CONTENT_TYPE));
    assert!(om.text().ends_with("# EOF\n"));
    assert_eq!(split_exposer(&om.body).1, e.render(Format::OpenMetrics));

    let plain = scrape(e.local_addr(), Some("text/plain;version=0.0.4"));
    assert_eq!(plain.header("content-type"), Some(TEXT_CONTENT_TYPE));
}

#[test]
fn the_server_counts_its_scrapes_as_nixl_does() {
    let e = exporter("exposer");
    // The first scrape sees nothing yet: zeros and NaN quantiles, as NIXL's.
    let first = scrape(e.local_addr(), None).text();
    let (exposer, _) = split_exposer(first.as_bytes());
    let exposer = String::from_utf8(exposer.to_vec()).unwrap();
    for (name, value) in [
        ("exposer_transferred_bytes_total", "0"),
        ("exposer_scrapes_total", "0"),
        ("exposer_request_latencies_count", "0"),
        ("exposer_request_latencies_sum", "0"),
        ("exposer_request_latencies{quantile=\"0.5\"}", "NaN"),
        ("exposer_request_latencies{quantile=\"0.9\"}", "NaN"),
        ("exposer_request_latencies{quantile=\"0.99\"}", "NaN"),
    ] {
        assert_eq!(unlabelled(&exposer, name).as_deref(), Some(value), "{name}");
    }
    // Neither a 404 nor a HEAD is a scrape.
    assert_eq!(
        exchange(e.local_addr(), "GET /nope HTTP/1.1\r\n\r\n").status,
        404
    );
    let openmetrics = scrape(e.local_addr(), Some(PROMETHEUS_ACCEPT)).text();
    assert!(openmetrics.contains("\n# TYPE exposer_scrapes counter\nexposer_scrapes_total 1\n"));
    let third = scrape(e.local_addr(), None).text();
    let bytes: usize = unlabelled(&third, "exposer_transferred_bytes_total")
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(bytes, first.len() + openmetrics.len());
    assert_eq!(
        unlabelled(&third, "exposer_scrapes_total").as_deref(),
        Some("2")
    );
    assert_eq!(
        unlabelled(&third, "exposer_request_latencies_count").as_deref(),
        Some("2")
    );
    let median: u64 = unlabelled(&third, "exposer_request_latencies{quantile=\"0.5\"}")
        .unwrap()
        .parse()
        .expect("a number of µs once there were scrapes");
    let sum: u64 = unlabelled(&third, "exposer_request_latencies_sum")
        .unwrap()
        .parse()
        .unwrap();
    assert!(median <= sum, "{median} > {sum}");
    nixl_telemetry_testsupport::promtool::assert_exporter_output_accepted(&third);
}

#[test]
fn gzip_when_the_scraper_accepts_it() {
    let mut e = exporter("gzip");
    let names: Vec<_> = (0..50)
        .map(|i| ev(Category::CUSTOM, &format!("custom_event_{i}"), i))
        .collect();
    e.record(&names);
    let request = |extra: &str| {
        exchange(
            e.local_addr(),
            &format!(
                "GET /metrics HTTP/1.1\r\nAccept-Encoding: {extra}\r\nConnection: close\r\n\r\n"
            ),
        )
    };
    let zipped = request("gzip, deflate");
    assert_eq!(zipped.status, 200);
    assert_eq!(zipped.header("content-encoding"), Some("gzip"));
    assert_eq!(zipped.header("vary"), Some("Accept, Accept-Encoding"));
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(&zipped.body[..])
        .read_to_end(&mut plain)
        .expect("a valid gzip body");
    assert_eq!(split_exposer(&plain).1, e.render(Format::Text));
    assert!(
        zipped.body.len() * 4 < plain.len(),
        "{} bytes zipped from {}",
        zipped.body.len(),
        plain.len()
    );
    let refused = request("identity, gzip;q=0");
    assert_eq!(refused.header("content-encoding"), None);
    // The same agents' part; the exposer's part counts the zipped scrape.
    assert_eq!(split_exposer(&refused.body).1, split_exposer(&plain).1);
    let exposer = String::from_utf8(split_exposer(&refused.body).0.to_vec()).unwrap();
    assert_eq!(
        unlabelled(&exposer, "exposer_transferred_bytes_total"),
        Some(zipped.body.len().to_string()),
        "bytes as sent, zipped"
    );
    // HEAD tells the length of what GET would send (a HEAD is not a scrape:
    // the GET after it shows the same exposer values).
    let head = exchange(
        e.local_addr(),
        "HEAD /metrics HTTP/1.1\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(head.header("content-encoding"), Some("gzip"));
    let zipped_again = request("gzip");
    assert_eq!(
        head.header("content-length").unwrap(),
        zipped_again.body.len().to_string()
    );
}

#[test]
fn head_answers_the_headers_of_get() {
    let e = exporter("head");
    let mut s = connect(e.local_addr());
    s.write_all(b"HEAD /metrics HTTP/1.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let head = read_response(&mut s, true);
    // A HEAD is not a scrape: the GET after it has the same exposer values.
    let get = scrape(e.local_addr(), None);
    assert_eq!(
        unlabelled(&get.text(), "exposer_scrapes_total").as_deref(),
        Some("0")
    );
    assert_eq!(head.status, 200);
    assert_eq!(
        head.header("content-length").unwrap(),
        get.body.len().to_string()
    );
    assert_eq!(head.header("content-type"), Some(TEXT_CONTENT_TYPE));
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "HEAD sent a body: {} bytes", rest.len());
}

#[test]
fn other_paths_are_404_and_other_methods_405() {
    let e = exporter("routes");
    let addr = e.local_addr();
    for path in ["/", "/metrics/", "/metricsx", "/favicon.ico"] {
        let r = exchange(addr, &format!("GET {path} HTTP/1.1\r\n\r\n"));
        assert_eq!(r.status, 404, "{path}");
        assert!(r.text().contains("/metrics"));
    }
    for method in ["POST", "PUT", "DELETE", "OPTIONS", "PATCH"] {
        let r = exchange(
            addr,
            &format!("{method} /metrics HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi"),
        );
        assert_eq!(r.status, 405, "{method}");
        assert_eq!(r.header("allow"), Some("GET, HEAD"));
        assert_eq!(r.header("connection"), Some("close"));
    }
    assert_eq!(exchange(addr, "POST /other HTTP/1.1\r\n\r\n").status, 404);
    // The query string is not part of the path.
    assert_eq!(
        exchange(addr, "GET /metrics?debug=1 HTTP/1.1\r\n\r\n").status,
        200
    );
}

#[test]
fn keep_alive_and_pipelined_requests() {
    let e = exporter("keepalive");
    let mut s = connect(e.local_addr());
    s.write_all(
        b"HEAD /metrics HTTP/1.1\r\n\r\nGET /metrics HTTP/1.1\r\n\r\nGET /nope HTTP/1.1\r\n\r\n",
    )
    .unwrap();
    let mut pending = Vec::new();
    let first = read_pipelined(&mut s, &mut pending, true);
    assert_eq!(first.status, 200);
    assert_eq!(first.header("connection"), Some("keep-alive"));
    let second = read_pipelined(&mut s, &mut pending, false);
    assert_eq!(second.status, 200);
    assert_eq!(
        first.header("content-length").unwrap(),
        second.body.len().to_string()
    );
    assert_eq!(read_pipelined(&mut s, &mut pending, false).status, 404);
    assert!(pending.is_empty());
    // Later, on the same connection.
    std::thread::sleep(Duration::from_millis(50));
    s.write_all(b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let last = read_response(&mut s, false);
    assert_eq!(last.status, 200);
    assert_eq!(last.header("connection"), Some("close"));
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
}

#[test]
fn a_head_sent_a_byte_at_a_time_is_answered() {
    let e = exporter("trickle");
    let addr = e.local_addr();
    let mut s = connect(addr);
    s.set_nodelay(true).unwrap();
    // Two pipelined requests, one byte per packet; the second asks for
    // OpenMetrics, so each answer shows that its own head was parsed whole.
    let heads = format!(
        "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\nGET /metrics HTTP/1.1\r\nHost: t\r\nAccept: {PROMETHEUS_ACCEPT}\r\n\r\n"
    );
    for b in heads.as_bytes() {
        s.write_all(std::slice::from_ref(b)).unwrap();
        std::thread::sleep(Duration::from_micros(200));
    }
    let mut pending = Vec::new();
    let first = read_pipelined(&mut s, &mut pending, false);
    let second = read_pipelined(&mut s, &mut pending, false);
    assert_eq!(first.status, 200);
    assert_eq!(first.header("Content-Type"), Some(TEXT_CONTENT_TYPE));
    assert_eq!(second.status, 200);
    assert_eq!(
        second.header("Content-Type"),
        Some(OPENMETRICS_CONTENT_TYPE)
    );
}

#[test]
fn garbage_is_refused_and_the_listener_survives() {
    let e = exporter_with_limits("garbage", short_limits());
    let addr = e.local_addr();
    let bad: [&[u8]; 6] = [
        b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n",
        b"GET\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\nbroken header\r\n\r\n",
        b"\0\0\0\0\n\n",
        b"GET /metrics HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
        b"GET /metrics FTP/1.0\r\n\r\n",
    ];
    for request in bad {
        let mut s = connect(addr);
        s.write_all(request).unwrap();
        let r = read_response(&mut s, false);
        assert_eq!(r.status, 400, "{request:?}");
        assert!(closed_by_server(&mut s, Duration::from_secs(5)));
    }
    let r = exchange(addr, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    assert_eq!(r.status, 505);
    // Too large a head.
    let mut s = connect(addr);
    let huge = format!(
        "GET /metrics HTTP/1.1\r\nX-Filler: {}\r\n\r\n",
        "a".repeat(4096)
    );
    let _ = s.write_all(huge.as_bytes());
    assert_eq!(read_response(&mut s, false).status, 431);
    // Connections that close at once, or mid-request.
    for partial in [&b""[..], b"GET /met"] {
        let mut s = connect(addr);
        s.write_all(partial).unwrap();
        drop(s);
    }
    assert_eq!(scrape(addr, None).status, 200);
}

#[test]
fn random_bytes_from_many_clients_leave_the_listener_serving() {
    let e = exporter_with_limits("noise", short_limits());
    let addr = e.local_addr();
    // A small deterministic generator (xorshift), so a failure can be replayed.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..200 {
        let len = (next() % 3000) as usize;
        let mut junk: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        if round % 3 == 0 {
            // Sometimes a plausible start, then junk.
            junk.splice(0..0, b"GET /metrics HTTP/1.1\r\n".iter().copied());
        }
        if round % 5 == 0 {
            junk.extend_from_slice(b"\r\n\r\n");
        }
        let mut s = connect(addr);
        let _ = s.write_all(&junk);
        if round % 2 == 0 {
            // Half of them go away at once, the others wait for whatever comes.
            drop(s);
        } else {
            let _ = closed_by_server(&mut s, Duration::from_millis(20));
        }
    }
    let r = scrape(addr, None);
    assert_eq!(r.status, 200);
    assert!(r.text().contains("agent_name=\"noise\""));
}

#[test]
fn stalled_clients_time_out_and_cannot_starve_scrapes() {
    let e = exporter_with_limits("stalled", short_limits());
    let addr = e.local_addr();
    // Twice as many silent or trickling connections as there are slots.
    let mut stalled: Vec<TcpStream> = (0..32)
        .map(|i| {
            let mut s = connect(addr);
            if i % 2 == 0 {
                s.write_all(b"GET /metrics HTTP/1.1\r\nX-Slow: ").unwrap();
            }
            s
        })
        .collect();
    let started = Instant::now();
    for _ in 0..5 {
        assert_eq!(scrape(addr, None).status, 200);
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "scrapes waited {:?} behind stalled clients",
        started.elapsed()
    );
    // Every stalled connection is closed: evicted for room, or timed out.
    for s in &mut stalled {
        assert!(closed_by_server(s, Duration::from_secs(5)));
    }
}

#[test]
fn a_client_that_never_reads_cannot_hold_up_others() {
    let mut e = exporter_with_limits("hog", short_limits());
    // A few hundred series make each response some tens of kilobytes.
    let names: Vec<_> = (0..200)
        .map(|i| ev(Category::BACKEND, &format!("backend_event_{i}"), 1))
        .collect();
    e.record(&names);
    let addr = e.local_addr();
    // Pipeline far more responses than the socket buffers hold, then never read.
    let mut hog = connect(addr);
    let requests = "GET /metrics HTTP/1.1\r\n\r\n".repeat(400);
    hog.write_all(requests.as_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    for _ in 0..5 {
        assert_eq!(scrape(addr, None).status, 200);
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "scrapes waited {:?} behind a client that does not read",
        started.elapsed()
    );
    // The hog is cut off once its write deadline passes.
    std::thread::sleep(Duration::from_millis(600));
    assert!(closed_by_server(&mut hog, Duration::from_secs(5)));
}

#[test]
fn a_greedy_pipelining_client_cannot_starve_others() {
    let e = exporter("greedy");
    let addr = e.local_addr();
    const PIPELINED: usize = 20_000;
    let greedy = connect(addr);
    let mut greedy_reader = greedy.try_clone().unwrap();
    let answered = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        // One client pipelines 20 000 small requests (answered 404) and reads
        // the answers as fast as it can.
        scope.spawn(|| {
            let mut w = &greedy;
            w.write_all(&b"GET /x HTTP/1.1\r\n\r\n".repeat(PIPELINED))
                .unwrap();
        });
        let reader = scope.spawn(|| {
            // Status lines are counted across reads: keep the 7 bytes before
            // each read in front of it.
            let mut buf = vec![0u8; 7 + (1 << 16)];
            let mut seen = 0;
            let mut carried = 0;
            while seen < PIPELINED {
                let n = greedy_reader
                    .read(&mut buf[carried..])
                    .expect("the greedy client reads");
                assert!(n > 0, "closed after {seen} answers");
                let end = carried + n;
                seen += buf[..end].windows(8).filter(|w| w == b"HTTP/1.1").count();
                answered.store(seen, std::sync::atomic::Ordering::Relaxed);
                carried = end.min(7);
                buf.copy_within(end - carried..end, 0);
            }
        });
        while answered.load(std::sync::atomic::Ordering::Relaxed) == 0 {
            std::thread::yield_now();
        }
        // Another client is answered long before the greedy one is done.
        assert_eq!(scrape(addr, None).status, 200);
        let by_then = answered.load(std::sync::atomic::Ordering::Relaxed);
        reader.join().unwrap();
        assert!(
            by_then < PIPELINED / 2,
            "the scrape waited for {by_then} of {PIPELINED} pipelined answers"
        );
    });
}

#[test]
fn a_client_flooding_its_closing_connection_cannot_hold_the_server() {
    let e = exporter("flooded");
    let addr = e.local_addr();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        // The request is refused (405) and the connection closed, so the
        // server drains what the client sends until it closes; the client
        // keeps sending as fast as it can.
        let flooder = scope.spawn(|| {
            let mut s = connect(addr);
            s.write_all(b"POST /metrics HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n")
                .unwrap();
            let chunk = vec![b'x'; 1 << 16];
            let started = Instant::now();
            let mut sent = 0usize;
            while !stop.load(std::sync::atomic::Ordering::Relaxed)
                && started.elapsed() < Duration::from_secs(6)
            {
                match s.write(&chunk) {
                    Ok(n) => sent += n,
                    Err(_) => break,
                }
            }
            sent
        });
        std::thread::sleep(Duration::from_millis(200));
        for _ in 0..5 {
            let started = Instant::now();
            assert_eq!(scrape(addr, None).status, 200);
            let took = started.elapsed();
            assert!(
                took < Duration::from_millis(1500),
                "a scrape took {took:?} while another client flooded its closing connection"
            );
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(flooder.join().unwrap() > 0);
    });
}

#[test]
fn a_flood_of_new_connections_cannot_starve_an_open_one() {
    let e = exporter("accept-flood");
    let addr = e.local_addr();
    let mut kept = connect(addr);
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                let started = Instant::now();
                while !stop.load(std::sync::atomic::Ordering::Relaxed)
                    && started.elapsed() < Duration::from_secs(6)
                {
                    // Opened and dropped at once, without a request.
                    drop(TcpStream::connect(addr));
                }
            });
        }
        std::thread::sleep(Duration::from_millis(200));
        for _ in 0..5 {
            let started = Instant::now();
            kept.write_all(b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
                .unwrap();
            assert_eq!(read_response(&mut kept, false).status, 200);
            let took = started.elapsed();
            assert!(
                took < Duration::from_millis(1500),
                "a scrape took {took:?} during a flood of new connections"
            );
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
}

#[test]
fn the_oldest_idle_connection_makes_room() {
    let limits = ServerLimits {
        max_connections: 4,
        request_timeout: Duration::from_secs(30),
        ..ServerLimits::default()
    };
    let e = exporter_with_limits("room", limits);
    let addr = e.local_addr();
    let mut idle: Vec<TcpStream> = (0..4).map(|_| connect(addr)).collect();
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(scrape(addr, None).status, 200);
    assert!(closed_by_server(&mut idle[0], Duration::from_secs(5)));
}

/// The nice value in a `/proc/…/stat` line (field 19).
#[cfg(target_os = "linux")]
fn nice_in_stat(stat: &str) -> i32 {
    // After "pid (comm) " come the fields from 3 (state) on.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    rest.split(' ').nth(16).unwrap().parse().unwrap()
}

/// The nice value of this process's thread named `name`.
#[cfg(target_os = "linux")]
fn nice_of_thread_named(name: &str) -> Option<i32> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .find_map(|task| {
            let dir = task.unwrap().path();
            let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
            (comm.trim_end() == name)
                .then(|| nice_in_stat(&std::fs::read_to_string(dir.join("stat")).unwrap()))
        })
}

#[cfg(target_os = "linux")]
#[test]
fn the_server_thread_yields_the_cpu_to_the_host() {
    let e = exporter("nice");
    let port = e.local_addr().port();
    // The thread lowers itself as it starts; a scrape proves it has started.
    assert_eq!(scrape(e.local_addr(), None).status, 200);
    let name = format!("nixl-prom-{port}");
    assert_eq!(nice_of_thread_named(&name), Some(19), "thread {name}");
    // Only that thread: the host's threads keep their priority.
    let own = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    assert_ne!(nice_in_stat(&own), 19);
}
