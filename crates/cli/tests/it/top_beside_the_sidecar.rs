//! `nixl-telemetry top --plain` beside the consumer NIXL users run: the real
//! `nixl-telemetry export` sidecar (`nop` exporter) consuming the same
//! rings. `top` follows the writer, not the consumer: its rates equal what
//! the writers wrote, on this project's rings and on one written as NIXL's
//! writer does (no trailer, an event at a time). A writer that goes round a
//! tiny ring faster than `top` can look is flagged instead: counted with the
//! trailer on this project's ring, suspected from the positions on NIXL's.

#[allow(unused_imports)] // what the export tests use of it
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::export_support::{export_command, Sidecar};
use crate::read_support::{kill, positions, wait_until};
use crate::top_support::{number, start, tables, wait_tables};
use crate::view_support::{ring, transfer};
use nixl_telemetry::ring::{layout, RingWriter, TrailerCounts};
use nixl_telemetry::{Category, Event};
use nixl_telemetry_testsupport::nixl_ring::hide_trailer;

/// The sidecar on `dir`, reading every `interval_ms`.
fn sidecar(dir: &Path, log_dir: &Path, interval_ms: u32) -> Sidecar {
    Sidecar::start(
        export_command(dir, "nop").args(["--interval", &interval_ms.to_string()]),
        &log_dir.join("export.log"),
    )
}

/// Whether the sidecar has consumed everything in `agent`'s ring within
/// `limit`.
fn consumed_within(dir: &Path, agent: &str, limit: Duration) -> bool {
    let path = dir.join(agent);
    wait_until(limit, || {
        let (read, write) = positions(&path);
        read == write
    })
}

/// A writer thread: every `tick` (on a fixed schedule, catching up when
/// late), `batch` into each ring, the rings without a trailer an event at a
/// time (NIXL's writer publishes each); this project's writers flush their
/// trailer after each batch. Returns the number of ticks written and the
/// most a tick was late.
fn writer(
    mut rings: Vec<(RingWriter, bool)>,
    batch: Vec<Event>,
    tick: Duration,
    stop: Arc<AtomicBool>,
) -> JoinHandle<(u64, Duration)> {
    std::thread::spawn(move || {
        let start = Instant::now();
        let mut ticks = 0u64;
        let mut late = Duration::ZERO;
        while !stop.load(Ordering::Relaxed) {
            late = late.max(Instant::now().saturating_duration_since(start + tick * ticks as u32));
            for (ring, nixl) in &mut rings {
                if *nixl {
                    for event in &batch {
                        ring.push_batch(std::slice::from_ref(event));
                    }
                } else {
                    ring.push_batch(&batch);
                    ring.update_trailer(&TrailerCounts::default());
                }
            }
            ticks += 1;
            if let Some(wait) = (start + tick * ticks as u32).checked_duration_since(Instant::now())
            {
                std::thread::sleep(wait);
            }
        }
        (ticks, late)
    })
}

/// A ring written as NIXL's writer writes it.
fn nixl_ring(
    dir: &Path,
    agent: &str,
    capacity: usize,
    ring_layout: &'static layout::RingLayout,
) -> RingWriter {
    let w = ring(dir, agent, capacity, ring_layout);
    hide_trailer(&w);
    w
}

/// Each ring gets 20 transfers of 4096 bytes (60 events) every 10 ms: 6000
/// events/s, 2000 requests/s, 8 192 000 bytes/s, while the sidecar consumes
/// them every 20 ms (which took the memory registered at the start before
/// `top` came: shown all the same on this project's rings, whose trailer
/// tells where the oldest event is). `top` shows, never `?` and without a
/// note, those rates
/// within 10 % in each interval (an interval of 0.5 s holds 50 batches; a
/// few may land a look early or late) and within 3 % over eight intervals,
/// each widened by the most the writer ran late on a busy machine (which
/// moves that much writing into the next interval).
#[test]
fn beside_the_sidecar_top_shows_the_true_rates() {
    let dir = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let agents = ["ours", "typed", "nixl"];
    let rings = vec![
        (ring(dir.path(), "ours", 4096, &layout::V1), false),
        (ring(dir.path(), "typed", 4096, &layout::V4), false),
        (nixl_ring(dir.path(), "nixl", 4096, &layout::V3), true),
    ];
    let mut rings = rings;
    // Memory registered at the start, consumed by the sidecar before top
    // comes: top reads it all the same on this project's rings (their
    // trailer tells where the oldest event is), not on NIXL's.
    let registered = Event::new(1, Category::MEMORY, "agent_memory_registered", 1 << 20);
    for (ring, _) in &mut rings {
        ring.push_batch(std::slice::from_ref(&registered));
        ring.update_trailer(&TrailerCounts::default());
    }
    let side = sidecar(dir.path(), logs.path(), 20);
    for agent in agents {
        assert!(consumed_within(dir.path(), agent, Duration::from_secs(10)));
    }
    let (mut top, lines) = start(dir.path(), &[]);
    wait_tables(&lines, 1);
    let batch: Vec<Event> = (0..20).flat_map(|i| transfer(i, true, 4096, 30)).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let writing = writer(rings, batch, Duration::from_millis(10), Arc::clone(&stop));
    // The table being printed and the first of the writes, then eight.
    let first = tables(&lines).len() + 2;
    wait_tables(&lines, first + 8);
    stop.store(true, Ordering::Relaxed);
    let (ticks, late) = writing.join().unwrap();
    assert!(ticks > 400, "{ticks} batches written");
    // The sidecar consumed them all: the rings were not just peeked at.
    for agent in agents {
        assert!(
            consumed_within(dir.path(), agent, Duration::from_secs(5)),
            "{agent}: the sidecar did not consume its ring: {:?}\n{}",
            positions(&dir.path().join(agent)),
            side.log()
        );
    }
    kill(top.id(), "TERM");
    assert!(top.wait().unwrap().success());
    let all = tables(&lines);
    let shown = &all[first..first + 8];
    let seen: Vec<String> = all
        .iter()
        .map(|t| {
            format!(
                "{:.3} s: {:?}",
                t.interval,
                agents.map(|a| t.row(a)[2].clone())
            )
        })
        .collect();
    for agent in agents {
        let mut events = 0.0;
        let mut seconds = 0.0;
        for t in shown {
            let row = t.row(agent);
            assert!(!row[2..8].contains(&"?".to_owned()), "{agent}: {row:?}");
            assert_eq!(t.note(agent), "", "{agent}: {row:?}");
            let per_s = number(&row[2]);
            let tolerance = 0.10 + late.as_secs_f64() / t.interval;
            assert!(
                (per_s / 6000.0 - 1.0).abs() <= tolerance,
                "{agent}: {per_s} events/s in {} s, written 6000/s (the writer up to {late:?} \
                 late); every table from {first}: {seen:#?}",
                t.interval
            );
            // The same events' bytes and requests.
            let requests = number(&row[5]);
            assert!((requests * 3.0 - per_s).abs() <= 0.35, "{agent}: {row:?}");
            assert!(
                (number(&row[3]) - requests * 4096.0).abs() <= 4096.0 * 0.05 + 0.1,
                "{agent}: {row:?}"
            );
            let registered = if agent == "nixl" { "0" } else { "1048576" };
            assert_eq!(row[9], registered, "{agent}: memory registered: {row:?}");
            events += per_s * t.interval;
            seconds += t.interval;
        }
        let mean = events / seconds;
        let tolerance = 0.03 + late.as_secs_f64() / seconds;
        assert!(
            (mean / 6000.0 - 1.0).abs() <= tolerance,
            "{agent}: {mean} events/s over {seconds} s, written 6000/s (the writer up to {late:?} late)"
        );
    }
    let (status, log) = side.stop("TERM");
    assert!(status.success(), "{log}");
}

/// Tiny rings (16 slots), a writer putting 5 transfers (15 events) into
/// each every 100 µs, the sidecar consuming: far more than a ring holds
/// passes between two looks of `top` (one a millisecond at the fastest). On
/// this project's ring the trailer counts the events lapped; on NIXL's
/// ring the positions can only tell that a lap may have hidden. Either
/// way the rates are `?`, never made of what was seen.
#[test]
fn a_writer_that_laps_top_is_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let rings = vec![
        (ring(dir.path(), "ours", 16, &layout::V1), false),
        (nixl_ring(dir.path(), "nixl", 16, &layout::V4), true),
    ];
    let side = sidecar(dir.path(), logs.path(), 1);
    let (mut top, lines) = start(dir.path(), &[]);
    wait_tables(&lines, 1);
    let batch: Vec<Event> = (0..5).flat_map(|i| transfer(i, true, 4096, 30)).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let writing = writer(rings, batch, Duration::from_micros(100), Arc::clone(&stop));
    let flagged = |agent: &str, words: &str| {
        tables(&lines)
            .iter()
            .any(|t| t.note(agent).contains(words) && t.row(agent)[2].starts_with('?'))
    };
    let seen = wait_until(Duration::from_secs(30), || {
        flagged("ours", "ring wrapped: ")
            && flagged("nixl", "ring may have wrapped between two looks")
    });
    stop.store(true, Ordering::Relaxed);
    writing.join().unwrap();
    kill(top.id(), "TERM");
    assert!(top.wait().unwrap().success());
    assert!(seen, "{:#?}\n{}", lines.lock().unwrap(), side.log());
    let all = tables(&lines);
    let t = all
        .iter()
        .find(|t| t.note("ours").contains("ring wrapped: "))
        .unwrap();
    let note = t.note("ours");
    let missed: u64 = note
        .split("ring wrapped: ")
        .nth(1)
        .and_then(|n| n.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {note:?}"));
    assert!(missed > 0, "{note}");
    // The trailer still says how busy the producer is.
    assert!(note.contains("producer wrote"), "{note}");
    let _ = side.stop("TERM");
}

/// What a ring held when `top` came, consumed by the sidecar already, is
/// read (its totals show: memory registered, errors) but is no rate: the
/// rates of the first interval count only what was written in it. Here
/// 3000 transfers and an error were written before `top` came, and the
/// writers then only flush (their trailer's heartbeat, which lets `top`
/// trust the slots the sidecar gave back): every table says 0 events/s.
#[test]
fn what_a_ring_held_before_top_came_is_no_rate() {
    let dir = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let agents = ["ours", "typed"];
    let mut rings = vec![
        ring(dir.path(), "ours", 16384, &layout::V1),
        ring(dir.path(), "typed", 16384, &layout::V4),
    ];
    let mut backlog = vec![
        Event::new(1, Category::MEMORY, "agent_memory_registered", 1 << 20),
        Event::new(1, Category::ERROR, "NIXL_ERR_NOT_FOUND", 1),
    ];
    backlog.extend((0..3000).flat_map(|i| transfer(i, true, 4096, 30)));
    for ring in &mut rings {
        ring.push_batch(&backlog);
        ring.update_trailer(&TrailerCounts::default());
    }
    let side = sidecar(dir.path(), logs.path(), 20);
    for agent in agents {
        assert!(consumed_within(dir.path(), agent, Duration::from_secs(10)));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let flushing = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(10));
                for ring in &mut rings {
                    ring.update_trailer(&TrailerCounts::default());
                }
            }
        })
    };
    let (mut top, lines) = start(dir.path(), &[]);
    wait_tables(&lines, 3);
    stop.store(true, Ordering::Relaxed);
    flushing.join().unwrap();
    kill(top.id(), "TERM");
    assert!(top.wait().unwrap().success());
    let all = tables(&lines);
    for agent in agents {
        for t in &all[..3] {
            let row = t.row(agent);
            assert_eq!(row[2..6], ["0.0", "0.0", "0.0", "0.0"], "{agent}: {row:?}");
            assert_eq!(row[8], "1(not_found:1)", "{agent}: {row:?}");
            assert_eq!(row[9], "1048576", "{agent}: {row:?}");
            assert_eq!(t.note(agent), "", "{agent}: {row:?}");
        }
    }
    let (status, log) = side.stop("TERM");
    assert!(status.success(), "{log}");
}
