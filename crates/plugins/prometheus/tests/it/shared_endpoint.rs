//! Several agents of one process on one address share one endpoint; names must
//! be unique there; agents take their series with them; the last one closes
//! the listener; an address held by another process fails creation; a scrape
//! sent after a publish or a departure always shows it.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};

use common::{connect, ev, read_pipelined, scrape};
use nixl_telemetry_abi::Category;
use nixl_telemetry_prometheus::{PrometheusError, PrometheusExporter, Settings};

fn free_addr() -> SocketAddr {
    nixl_telemetry_testsupport::loopback::unused_address()
}

fn create(agent: &str, addr: SocketAddr) -> Result<PrometheusExporter, PrometheusError> {
    PrometheusExporter::with_settings(agent, &Settings::new(addr))
}

fn agents_in(body: &str, sample: &str) -> Vec<String> {
    body.lines()
        .filter(|l| l.starts_with(&format!("{sample}{{")))
        .map(|l| {
            let at = l.find("agent_name=\"").unwrap() + 12;
            l[at..at + l[at..].find('"').unwrap()].to_owned()
        })
        .collect()
}

#[test]
fn agents_on_one_address_share_the_endpoint() {
    let addr = free_addr();
    let mut a = create("agent-a", addr).unwrap();
    let mut b = create("agent-b", addr).expect("the second agent joins, it does not bind again");
    assert_eq!(a.local_addr(), b.local_addr());
    a.record(&[ev(Category::TRANSFER, "agent_tx_bytes", 10)]);
    b.record(&[ev(Category::TRANSFER, "agent_tx_bytes", 20)]);
    let body = scrape(addr, None).text();
    assert_eq!(
        agents_in(&body, "agent_tx_bytes_total"),
        ["agent-a", "agent-b"]
    );
    assert!(body.lines().any(
        |l| l.starts_with("agent_tx_bytes_total{agent_name=\"agent-a\",") && l.ends_with("} 10")
    ));
    assert!(body.lines().any(
        |l| l.starts_with("agent_tx_bytes_total{agent_name=\"agent-b\",") && l.ends_with("} 20")
    ));
    assert_eq!(
        body.matches("# TYPE agent_tx_bytes_total counter\n")
            .count(),
        1,
        "one family, two series"
    );

    drop(b);
    let body = scrape(addr, None).text();
    assert_eq!(agents_in(&body, "agent_tx_bytes_total"), ["agent-a"]);
    assert!(
        !body.contains("agent-b"),
        "a destroyed agent's series remain"
    );

    // Joining and leaving show in the very next answer, however the server's
    // loop iterations fall (its thread runs at low priority and is often
    // preempted between two requests).
    for round in 0..50 {
        let c = create("agent-c", addr).unwrap();
        let body = scrape(addr, None).text();
        assert_eq!(
            agents_in(&body, "agent_tx_bytes_total"),
            ["agent-a", "agent-c"],
            "round {round}: a new agent is missing"
        );
        drop(c);
        let body = scrape(addr, None).text();
        assert_eq!(
            agents_in(&body, "agent_tx_bytes_total"),
            ["agent-a"],
            "round {round}: a destroyed agent's series remain"
        );
    }
}

#[test]
fn one_name_twice_on_one_endpoint_is_refused() {
    let addr = free_addr();
    let a = create("twin", addr).unwrap();
    let err = create("twin", addr).unwrap_err();
    assert!(
        matches!(err, PrometheusError::DuplicateAgent { .. }),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("\"twin\"") && text.contains(&addr.to_string()),
        "{text}"
    );
    // The refused agent did not disturb the first.
    let body = scrape(addr, None).text();
    assert_eq!(agents_in(&body, "agent_rx_bytes_total"), ["twin"]);
    // Once the first is gone, the name is free again.
    drop(a);
    let again = create("twin", addr).expect("the name is free once its agent is destroyed");
    assert_eq!(again.local_addr(), addr);
}

#[test]
fn the_last_agent_closes_the_listener_and_the_port_can_be_reused() {
    let addr = free_addr();
    let a = create("first", addr).unwrap();
    let b = create("second", addr).unwrap();
    drop(a);
    assert_eq!(
        scrape(addr, None).status,
        200,
        "open while an agent remains"
    );
    drop(b);
    assert!(
        TcpStream::connect(addr).is_err(),
        "the listener is still open after the last agent"
    );
    let c = create("third", addr).expect("the port is free again");
    assert_eq!(scrape(addr, None).status, 200);
    drop(c);
}

#[test]
fn an_address_held_by_another_process_fails_creation_naming_it() {
    // A listener in another process.
    let mut holder = Command::new("python3")
        .args([
            "-c",
            "import socket,sys,time\n\
             s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen()\n\
             print(s.getsockname()[1], flush=True)\n\
             sys.stdin.read()",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    BufReader::new(holder.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line.trim().parse().expect("the holder's port");
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let err = create("late", addr).unwrap_err();
    holder.kill().ok();
    holder.wait().ok();
    assert!(matches!(err, PrometheusError::Bind { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains(&addr.to_string()), "{text}");
    assert!(text.to_lowercase().contains("in use"), "{text}");

    // Held in this process by someone else than the exporter: the same.
    let other = TcpListener::bind("127.0.0.1:0").unwrap();
    let err = create("late", other.local_addr().unwrap()).unwrap_err();
    assert!(err
        .to_string()
        .contains(&other.local_addr().unwrap().to_string()));
}

#[test]
fn port_zero_gives_each_agent_its_own_endpoint() {
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let a = create("zero-a", any).unwrap();
    let b = create("zero-a", any).expect("a fresh endpoint: no name clash");
    assert_ne!(a.local_addr(), b.local_addr());
    assert_ne!(a.local_addr().port(), 0);
    // Others may join an endpoint opened on port 0 by its real address.
    let c = create("zero-c", a.local_addr()).unwrap();
    let body = scrape(a.local_addr(), None).text();
    assert_eq!(
        agents_in(&body, "agent_tx_bytes_total"),
        ["zero-a", "zero-c"]
    );
    drop(c);
}

#[test]
#[ignore = "needs an IPv6 loopback (::1), which many containers lack; run it with `cargo test -p nixl-telemetry-exporter-prometheus --test it shared_endpoint -- --ignored` where ::1 exists"]
fn ipv6_loopback_serves() {
    if let Err(e) = TcpListener::bind("[::1]:0") {
        panic!("this test needs an IPv6 loopback (::1) and this machine has none: {e}");
    }
    let mut e = create("six", "[::1]:0".parse().unwrap()).unwrap();
    assert!(e.local_addr().is_ipv6());
    e.record(&[ev(Category::TRANSFER, "agent_rx_bytes", 6)]);
    let body = scrape(e.local_addr(), None).text();
    assert!(
        body.lines().any(
            |l| l.starts_with("agent_rx_bytes_total{agent_name=\"six\",") && l.ends_with("} 6")
        ),
        "{body}"
    );
}

#[test]
fn a_scrape_sent_after_a_publish_sees_it_while_others_scrape() {
    let addr = free_addr();
    let mut a = create("fresh", addr).unwrap();
    // Other clients keep the server rendering (on keep-alive connections, as
    // Prometheus scrapes), so a request can arrive in the middle of one of
    // its loop iterations.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let busy: Vec<_> = (0..3)
        .map(|_| {
            let stop = std::sync::Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut s = connect(addr);
                let mut pending = Vec::new();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: busy\r\n\r\n")
                        .unwrap();
                    assert_eq!(read_pipelined(&mut s, &mut pending, false).status, 200);
                }
            })
        })
        .collect();
    let mut total = 0u64;
    for round in 1..=300u64 {
        a.record(&[ev(Category::TRANSFER, "agent_tx_bytes", round)]);
        total += round;
        let body = scrape(addr, None).text();
        let line = body
            .lines()
            .find(|l| l.starts_with("agent_tx_bytes_total{agent_name="))
            .expect("the series is there");
        let value: u64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        assert_eq!(
            value, total,
            "round {round}: the answer predates the publish"
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for b in busy {
        b.join().unwrap();
    }
}
