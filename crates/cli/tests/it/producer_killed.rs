//! A producer process killed with SIGKILL: both readers read what it left
//! without error and never show a torn event; a producer started again under
//! the same agent name keeps what the dead one flushed and nobody consumed; a
//! second live producer of the agent is refused clearly.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::read_support::*;
use nixl_telemetry::ring::{ReadMode, RingReader};

/// `nixl-telemetry emit` for agent `a`, rings in `dir`.
fn emit(dir: &Path, events: &str, hold: &str) -> Command {
    let mut cmd = cli();
    cmd.args(["emit", "--agent", "a", "--events", events, "--hold", hold])
        .env("NIXL_TELEMETRY_ENABLE", "1")
        .env("NIXL_TELEMETRY_DIR", dir);
    cmd
}

/// `n` JSON lines `{"name": "s<v>", "value": v}` for `v` in `from..from+n`.
fn lines(from: u64, n: u64) -> String {
    (from..from + n)
        .map(|v| format!("{{\"category\": \"CUSTOM\", \"name\": \"s{v}\", \"value\": {v}}}\n"))
        .collect()
}

/// Events written to the ring at `path` and not yet consumed (0 while it is absent).
fn unread(path: &Path) -> u64 {
    RingReader::open(path, ReadMode::Peek)
        .and_then(|mut r| r.pending())
        .unwrap_or(0)
}

/// Events as (name, value) pairs.
type Events = Vec<(String, u64)>;

/// The (name, value) pairs a reader prints with `--json`, after checking it
/// exited 0 and reported no error.
fn read_json(mut cmd: Command) -> Events {
    let out = run(&mut cmd);
    let err = stderr(&out);
    assert!(
        out.status.success() && !err.to_lowercase().contains("error"),
        "{:?}: {}",
        out.status,
        err
    );
    stdout(&out)
        .lines()
        .map(|l| {
            let v: serde_json::Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}"));
            (
                v["name"].as_str().unwrap().to_owned(),
                v["value"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Both readers, once, peeking, as JSON: `(rust, python)`.
fn both_readers(dir: &Path) -> (Events, Events) {
    let mut rust = cli();
    rust.args(["read", "--once", "--peek", "--json"]).arg(dir);
    let mut python = python_reader();
    python
        .args(["--once", "--peek", "--json", "--telemetry_path"])
        .arg(dir);
    (read_json(rust), read_json(python))
}

/// Every event whole (its name says its value: a torn slot would mix two
/// events) and in the order recorded, none twice.
fn whole_and_in_order(events: &[(String, u64)], what: &str) {
    for (name, value) in events {
        assert_eq!(name, &format!("s{value}"), "{what}: torn event");
    }
    assert!(
        events.windows(2).all(|w| w[0].1 < w[1].1),
        "{what}: out of order or repeated"
    );
}

fn kill9(child: &mut Child) {
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
}

#[test]
fn a_restarted_producer_keeps_what_the_killed_one_flushed() {
    let tmp = tempfile::tempdir().unwrap();
    let (rings, events) = (tmp.path().join("rings"), tmp.path().join("events"));
    std::fs::write(&events, lines(0, 109)).unwrap();
    let ring = rings.join("a");
    let mut first = emit(&rings, events.to_str().unwrap(), "60")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(30), || unread(&ring) == 109),
        "the first producer's 109 events never reached the ring"
    );

    // A second live producer of the agent is refused, naming the holder.
    let refused = run(&mut emit(&rings, events.to_str().unwrap(), "0"));
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let said = stderr(&refused);
    assert!(
        said.contains("in use by another running producer")
            && said.contains(&first.id().to_string()),
        "{said}"
    );

    kill9(&mut first);
    std::fs::write(&events, lines(109, 109)).unwrap();
    let restarted = run(&mut emit(&rings, events.to_str().unwrap(), "0"));
    assert!(restarted.status.success(), "{}", stderr(&restarted));

    let (rust, python) = both_readers(&rings);
    let values: Vec<u64> = rust.iter().map(|e| e.1).collect();
    assert_eq!(
        values,
        (0..218).collect::<Vec<_>>(),
        "events lost at the restart"
    );
    whole_and_in_order(&rust, "rust reader");
    assert_eq!(rust, python);
    // Nothing was moved aside: the ring was adopted.
    assert_eq!(std::fs::read_dir(&rings).unwrap().count(), 1);
}

#[test]
fn a_restart_with_another_ring_size_moves_the_old_ring_aside_and_readers_say_stale() {
    let tmp = tempfile::tempdir().unwrap();
    let (rings, events) = (tmp.path().join("rings"), tmp.path().join("events"));
    std::fs::write(&events, lines(0, 50)).unwrap();
    let mut first = emit(&rings, events.to_str().unwrap(), "60")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_until(Duration::from_secs(30), || unread(
        &rings.join("a")
    ) == 50));
    kill9(&mut first);
    std::fs::write(&events, lines(50, 5)).unwrap();
    let restarted =
        run(emit(&rings, events.to_str().unwrap(), "0").env("NIXL_TELEMETRY_BUFFER_SIZE", "8192"));
    assert!(restarted.status.success(), "{}", stderr(&restarted));

    let (rust, python) = both_readers(&rings);
    assert_eq!(rust.len(), 55);
    assert_eq!(rust, python);
    for mut reader in [
        {
            let mut c = cli();
            c.args(["read", "--once", "--peek", "--summary"])
                .arg(&rings);
            c
        },
        {
            let mut c = python_reader();
            c.args(["--once", "--peek", "--summary", "--telemetry_path"])
                .arg(&rings);
            c
        },
    ] {
        let out = run(&mut reader);
        let said = stderr(&out) + &stdout(&out);
        let stale: Vec<&str> = said.lines().filter(|l| l.contains("Producer:")).collect();
        assert_eq!(stale.len(), 2, "{said}");
        assert!(
            stale.iter().any(|l| l.contains("Agent a.stale-")
                && l.contains(nixl_telemetry::ring::STALE_WORDS)
                && l.contains("50 events written")),
            "{said}"
        );
    }
}

#[test]
fn a_producer_killed_mid_stream_leaves_a_ring_both_readers_read_whole() {
    // The producer is fed a stream through a pipe and killed at a different
    // moment each round, while a consuming reader drains its ring.
    for (round, delay_ms) in [150u64, 400, 900].into_iter().enumerate() {
        let tmp = tempfile::tempdir().unwrap();
        let rings = tmp.path().join("rings");
        std::fs::create_dir(&rings).unwrap();
        let mut producer = emit(&rings, "-", "0")
            .env("NIXL_TELEMETRY_BUFFER_SIZE", "65536")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        assert!(wait_until(Duration::from_secs(30), || rings
            .join("a")
            .exists()));
        let mut consume = cli();
        consume.args(["read", "--json"]).arg(&rings);
        let (consumer, consumed) = follow(consume);
        let mut input = producer.stdin.take().unwrap();
        let feeder = std::thread::spawn(move || {
            let mut v = 0u64;
            // Until the pipe breaks: the producer was killed.
            while input.write_all(lines(v, 1000).as_bytes()).is_ok() {
                v += 1000;
            }
            v
        });
        assert!(wait_until(Duration::from_secs(30), || unread(
            &rings.join("a")
        ) > 0
            || count(&consumed, "\"s") > 0));
        std::thread::sleep(Duration::from_millis(delay_ms));
        kill9(&mut producer);
        let fed = feeder.join().unwrap();
        // Let the consumer catch up with what the producer published, then stop it.
        let deadline = Instant::now() + Duration::from_secs(20);
        while unread(&rings.join("a")) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        kill(consumer.id(), "INT");
        let (code, err) = finish(consumer);
        assert_eq!(code, Some(0), "round {round}: {err}");
        assert!(
            !err.to_lowercase().contains("error"),
            "round {round}: {err}"
        );
        let drained: Vec<(String, u64)> = consumed
            .lock()
            .unwrap()
            .iter()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                (
                    v["name"].as_str().unwrap().to_owned(),
                    v["value"].as_u64().unwrap(),
                )
            })
            .collect();
        // What is left (the consumer may have stopped a little early) is read
        // whole by both readers.
        let (rust, python) = both_readers(&rings);
        assert_eq!(rust, python, "round {round}");
        let all: Vec<(String, u64)> = drained.into_iter().chain(rust).collect();
        assert!(!all.is_empty(), "round {round}: nothing was read");
        whole_and_in_order(&all, &format!("round {round}"));
        assert!(all.last().unwrap().1 < fed, "round {round}");
        // The ring file itself is still a valid ring for the library reader.
        let mut r = RingReader::open(&rings.join("a"), ReadMode::Peek).unwrap();
        r.read_batch(&mut Vec::new(), usize::MAX).unwrap();
    }
}
