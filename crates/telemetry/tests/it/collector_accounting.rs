//! The collector loses nothing silently: concurrent producers, full staging,
//! full rings and shutdown all balance to the event.

use std::sync::Arc;
use std::time::Duration;

use nixl_telemetry::ring::{ReadMode, RingReader};
use nixl_telemetry::{
    Category, Direction, Event, ExportOutcome, Exporter, Telemetry, EVENTS_DROPPED_EVENT,
};

fn balanced(t: &Telemetry) -> nixl_telemetry::TelemetryStats {
    let s = t.stats();
    assert_eq!(
        s.recorded + s.generated,
        s.delivered + s.dropped.total() + s.pending,
        "{s:?}"
    );
    s
}

/// Keeps every event it gets, shared with the test.
#[derive(Clone, Default)]
struct Keep(Arc<std::sync::Mutex<Vec<Event>>>);

impl Exporter for Keep {
    fn name(&self) -> &str {
        "keep"
    }
    fn export(&mut self, events: &[Event]) -> ExportOutcome {
        self.0.lock().unwrap().extend_from_slice(events);
        ExportOutcome::delivered(events.len())
    }
}

/// Remembers the largest batch it was handed.
#[derive(Clone, Default)]
struct LargestBatch(Arc<std::sync::atomic::AtomicUsize>);

impl Exporter for LargestBatch {
    fn name(&self) -> &str {
        "largest-batch"
    }
    fn export(&mut self, events: &[Event]) -> ExportOutcome {
        self.0
            .fetch_max(events.len(), std::sync::atomic::Ordering::Relaxed);
        ExportOutcome::delivered(events.len())
    }
}

#[test]
fn no_batch_is_larger_than_the_buffer_size_even_when_transfers_expand() {
    // A completed transfer takes one staging slot and becomes three events:
    // a full queue of them must still reach the exporter in batches of at
    // most NIXL_TELEMETRY_BUFFER_SIZE events (what plug-ins are promised).
    const BUFFER: usize = 8;
    let largest = LargestBatch::default();
    let config = Telemetry::builder("batches")
        .buffer_size(BUFFER)
        .unwrap()
        .run_interval(Duration::from_secs(3600))
        .unwrap();
    let t = Telemetry::with_exporter(
        "batches",
        config.as_config().clone(),
        Box::new(largest.clone()),
    )
    .unwrap();
    for _ in 0..BUFFER {
        t.transfer_completed(10, Direction::Write, 4096);
    }
    t.flush();
    let s = balanced(&t);
    assert_eq!(s.delivered, 3 * BUFFER as u64, "{s:?}");
    let largest = largest.0.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        (1..=BUFFER).contains(&largest),
        "a batch of {largest} events; the buffer size is {BUFFER}"
    );
}

/// Telemetry for `agent` whose exporter keeps every event, flushed every
/// millisecond from staging queues of `buffer_size` slots.
fn kept(agent: &str, buffer_size: usize) -> (Arc<Telemetry>, Keep) {
    let keep = Keep::default();
    let config = Telemetry::builder(agent)
        .buffer_size(buffer_size)
        .unwrap()
        .run_interval(Duration::from_millis(1))
        .unwrap();
    let t = Telemetry::with_exporter(agent, config.as_config().clone(), Box::new(keep.clone()))
        .unwrap();
    (Arc::new(t), keep)
}

#[test]
fn concurrent_producers_are_accounted_exactly_and_keep_their_order() {
    let (t, keep) = kept("a", 1 << 12);
    let per_thread = 50_000u64;
    let threads: Vec<_> = (0..4u64)
        .map(|id| {
            let t = Arc::clone(&t);
            std::thread::spawn(move || {
                let h = t.handle(Category::CUSTOM, &format!("thread_{id}"));
                for i in 0..per_thread {
                    h.record(i);
                    if i % 1024 == 0 {
                        std::thread::yield_now();
                    }
                }
            })
        })
        .collect();
    for th in threads {
        th.join().unwrap();
    }
    t.flush();
    let s = balanced(&t);
    assert_eq!(s.recorded, 4 * per_thread);
    assert_eq!(s.pending, 0);
    let got = keep.0.lock().unwrap();
    let user: Vec<&Event> = got
        .iter()
        .filter(|e| e.category() == Category::CUSTOM)
        .collect();
    assert_eq!(
        user.len() as u64,
        s.recorded - s.dropped.total() + s.dropped.exporter_full
    );
    for id in 0..4 {
        let name = format!("thread_{id}");
        let values: Vec<u64> = user
            .iter()
            .filter(|e| e.name() == name)
            .map(|e| e.value)
            .collect();
        assert!(values.windows(2).all(|w| w[0] < w[1]), "order of {name}");
    }
    let reported: u64 = got
        .iter()
        .filter(|e| e.category() == Category::SYSTEM && e.name() == EVENTS_DROPPED_EVENT)
        .map(|e| e.value)
        .sum();
    assert_eq!(reported, s.dropped.total());
}

#[test]
fn full_staging_drops_are_counted_and_reported() {
    // Collect only: nothing drains until we do, so staging (4 events) fills.
    let t = Telemetry::builder("c")
        .buffer_size(4)
        .unwrap()
        .build()
        .unwrap();
    assert!(!t.has_exporter());
    for v in 0..10 {
        t.record(Category::CUSTOM, "e", v);
    }
    let s = balanced(&t);
    assert_eq!((s.recorded, s.dropped.staging_full, s.pending), (10, 6, 4));
    let mut out = Vec::new();
    assert_eq!(t.drain(&mut out), 5);
    let values: Vec<u64> = out[..4].iter().map(|e| e.value).collect();
    assert_eq!(values, vec![0, 1, 2, 3]);
    assert_eq!(out[4].name(), EVENTS_DROPPED_EVENT);
    assert_eq!(out[4].category(), Category::SYSTEM);
    assert_eq!(out[4].value, 6);
    let s = balanced(&t);
    assert_eq!((s.generated, s.delivered, s.pending), (1, 5, 0));
    // No new drops: no new report.
    t.record(Category::CUSTOM, "e", 1);
    out.clear();
    assert_eq!(t.drain(&mut out), 1);
}

#[test]
fn a_staged_transfer_counts_as_its_three_events_kept_or_dropped_whole() {
    // Collect only, 4 slots: a transfer takes one slot and stands for 3 events.
    let t = Telemetry::builder("p")
        .buffer_size(4)
        .unwrap()
        .build()
        .unwrap();
    t.transfer_completed_at(10, 7, Direction::Write, 4096);
    t.record(Category::CUSTOM, "e", 1);
    t.transfer_completed_at(11, 8, Direction::Read, 512);
    t.record(Category::CUSTOM, "e", 2);
    // Full: one transfer (3 events) and one event are dropped.
    t.transfer_completed_at(12, 9, Direction::Read, 1);
    t.record(Category::CUSTOM, "e", 3);
    let s = balanced(&t);
    assert_eq!(
        (s.recorded, s.pending, s.dropped.staging_full),
        (3 + 1 + 3 + 1 + 3 + 1, 8, 4)
    );
    let mut out = Vec::new();
    assert_eq!(t.drain(&mut out), 9);
    let got: Vec<(u64, i32, String, u64)> = out
        .iter()
        .map(|e| (e.timestamp_us, e.category, e.name().into_owned(), e.value))
        .collect();
    let want = [
        (10, 5, "agent_xfer_time", 7),
        (10, 1, "agent_tx_bytes", 4096),
        (10, 1, "agent_tx_requests_num", 1),
        (0, 7, "e", 1),
        (11, 5, "agent_xfer_time", 8),
        (11, 1, "agent_rx_bytes", 512),
        (11, 1, "agent_rx_requests_num", 1),
        (0, 7, "e", 2),
        (0, 6, EVENTS_DROPPED_EVENT, 4),
    ];
    for (g, w) in got.iter().zip(want) {
        if w.0 != 0 {
            assert_eq!(g.0, w.0, "{g:?}");
        }
        assert_eq!((g.1, g.2.as_str(), g.3), (w.1, w.2, w.3));
    }
    assert!(out.iter().all(|e| e.reserved == 0));
    let s = balanced(&t);
    assert_eq!((s.pending, s.delivered), (0, 9));
}

#[test]
fn concurrent_transfers_arrive_whole_in_order_with_exact_books() {
    // Small queues and a fast flush: staging overflows now and then.
    let (t, keep) = kept("x", 256);
    let per_thread = 30_000u64;
    let threads: Vec<_> = (0..3u64)
        .map(|id| {
            let t = Arc::clone(&t);
            std::thread::spawn(move || {
                let h = t.handle(Category::CUSTOM, &format!("thread_{id}"));
                for i in 0..per_thread {
                    if i % 2 == 0 {
                        let direction = if i % 4 == 0 {
                            Direction::Write
                        } else {
                            Direction::Read
                        };
                        // Thread and sequence ride in the values.
                        t.transfer_completed_at(i, id << 32 | i, direction, id << 32 | i);
                    } else {
                        h.record(i);
                    }
                    if i % 512 == 0 {
                        std::thread::yield_now();
                    }
                }
            })
        })
        .collect();
    for th in threads {
        th.join().unwrap();
    }
    t.flush();
    let s = balanced(&t);
    assert_eq!(s.recorded, 3 * (per_thread / 2) * 4);
    assert_eq!(s.pending, 0);
    let got = keep.0.lock().unwrap();
    assert_eq!(
        got.len() as u64,
        s.delivered,
        "the exporter saw every delivered event"
    );
    // Every transfer arrives as its three events, together and in order; a
    // thread's transfers keep their order.
    let mut last = [None::<u64>; 3];
    let mut transfers = 0u64;
    let mut i = 0;
    while i < got.len() {
        let e = &got[i];
        if e.name() != "agent_xfer_time" {
            assert!(
                e.reserved == 0 && !e.name().contains("bytes") && !e.name().contains("requests")
            );
            i += 1;
            continue;
        }
        let (id, seq) = (e.value >> 32, e.value & 0xffff_ffff);
        let (bytes, requests) = if seq % 4 == 0 {
            ("agent_tx_bytes", "agent_tx_requests_num")
        } else {
            ("agent_rx_bytes", "agent_rx_requests_num")
        };
        assert_eq!(got[i + 1].name(), bytes);
        assert_eq!(got[i + 1].value, e.value);
        assert_eq!(got[i + 2].name(), requests);
        assert_eq!(got[i + 2].value, 1);
        assert!(got[i..i + 3].iter().all(|x| x.timestamp_us == seq));
        assert!(
            last[id as usize].is_none_or(|l| l < seq),
            "order of thread {id}"
        );
        last[id as usize] = Some(seq);
        transfers += 1;
        i += 3;
    }
    let plain = got
        .iter()
        .filter(|e| e.category() == Category::CUSTOM)
        .count() as u64;
    let reports: u64 = got
        .iter()
        .filter(|e| e.name() == EVENTS_DROPPED_EVENT)
        .map(|e| e.value)
        .sum();
    assert_eq!(reports, s.dropped.total());
    assert_eq!(
        transfers * 3 + plain + s.dropped.total(),
        s.recorded,
        "kept and dropped events add up to the recorded ones"
    );
}

#[test]
fn a_full_ring_counts_drops_in_stats_and_trailer() {
    let dir = tempfile::tempdir().unwrap();
    let t = Telemetry::builder("ring")
        .buffer_size(8)
        .unwrap()
        .ring_directory(dir.path())
        .build()
        .unwrap();
    for v in 0..5 {
        t.record(Category::CUSTOM, "e", v);
    }
    t.flush();
    for v in 5..10 {
        t.record(Category::CUSTOM, "e", v);
    }
    t.flush();
    let s = balanced(&t);
    // 7 slots usable: 7 delivered, 3 user events and 2 drop reports lost at the ring.
    assert_eq!(s.recorded, 10);
    assert_eq!(s.delivered, 7);
    assert!(s.dropped.exporter_full >= 3, "{s:?}");
    let mut r = RingReader::open(&dir.path().join("ring"), ReadMode::Peek).unwrap();
    let tr = r.trailer().unwrap();
    assert_eq!(tr.dropped_ring_full, s.dropped.exporter_full);
    assert_eq!(tr.events_written, 7);
    let mut out = Vec::new();
    r.read_batch(&mut out, usize::MAX).unwrap();
    assert_eq!(
        out.iter().map(|e| e.value).collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4, 5, 6]
    );
}

#[test]
fn dropping_the_handle_flushes_everything() {
    let dir = tempfile::tempdir().unwrap();
    {
        let t = Telemetry::builder("shut")
            .buffer_size(1 << 14)
            .unwrap()
            .run_interval(Duration::from_secs(3600))
            .unwrap()
            .ring_directory(dir.path())
            .build()
            .unwrap();
        let th = {
            let h = t.handle(Category::TRANSFER, "agent_tx_bytes");
            std::thread::spawn(move || (0..3000).for_each(|v| h.record(v)))
        };
        th.join().unwrap();
        t.memory_registered(1 << 20);
        t.transfer_completed(120, Direction::Read, 4096);
        t.error("NIXL_ERR_BACKEND");
    }
    let mut r = RingReader::open(&dir.path().join("shut"), ReadMode::Consume).unwrap();
    let mut out = Vec::new();
    r.read_batch(&mut out, usize::MAX).unwrap();
    assert_eq!(out.len(), 3000 + 1 + 3 + 1);
    assert!(r.trailer().unwrap().closed);
    let xfer: Vec<&Event> = out
        .iter()
        .filter(|e| e.name().starts_with("agent_"))
        .filter(|e| e.name() != "agent_tx_bytes" && e.name() != "agent_memory_registered")
        .collect();
    assert_eq!(xfer.len(), 3);
    assert!(
        xfer.iter().all(|e| e.timestamp_us == xfer[0].timestamp_us),
        "one timestamp"
    );
    let names: Vec<String> = xfer.iter().map(|e| e.name().into_owned()).collect();
    assert_eq!(
        names,
        ["agent_xfer_time", "agent_rx_bytes", "agent_rx_requests_num"]
    );
    assert_eq!(
        xfer.iter().map(|e| e.value).collect::<Vec<_>>(),
        vec![120, 4096, 1]
    );
    let err = out
        .iter()
        .find(|e| e.category() == Category::ERROR)
        .unwrap();
    assert_eq!((err.name().as_ref(), err.value), ("NIXL_ERR_BACKEND", 1));
}

#[test]
fn disabled_and_filtered_record_nothing() {
    let t = Telemetry::builder("off").enabled(false).build().unwrap();
    t.record(Category::CUSTOM, "x", 1);
    assert!(!t.handle(Category::CUSTOM, "x").is_enabled());
    assert_eq!(t.stats(), Default::default());

    let t = Telemetry::builder("f")
        .enabled_metrics("agent_tx_*, NIXL_ERR_*")
        .build()
        .unwrap();
    t.transfer_completed(5, Direction::Write, 10);
    t.error("NIXL_ERR_NOT_FOUND");
    t.backend_event("ucx_writes", 3);
    assert!(!t.handle(Category::BACKEND, "ucx_writes").is_enabled());
    let mut out = Vec::new();
    t.drain(&mut out);
    let names: Vec<String> = out.iter().map(|e| e.name().into_owned()).collect();
    assert_eq!(
        names,
        [
            "agent_tx_bytes",
            "agent_tx_requests_num",
            "NIXL_ERR_NOT_FOUND"
        ]
    );
}

#[test]
fn env_errors_name_the_variable_value_and_accepted_values() {
    let config = nixl_telemetry::TelemetryConfig::from_lookup(|k| {
        (k == "NIXL_TELEMETRY_BUFFER_SIZE").then(|| "1000".to_owned())
    });
    let err = config.unwrap_err().to_string();
    assert!(
        err.contains("NIXL_TELEMETRY_BUFFER_SIZE")
            && err.contains("1000")
            && err.contains("power of two")
    );
    for bad in ["", "a/b", ".", "..", "nul\0"] {
        let err = Telemetry::builder(bad).build().unwrap_err().to_string();
        assert!(
            err.contains("agent name") && err.contains("accepted"),
            "{err}"
        );
    }
    let file = tempfile::NamedTempFile::new().unwrap();
    let err = Telemetry::builder("a")
        .ring_directory(file.path())
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a directory"), "{err}");
}

#[test]
fn names_are_cut_at_31_bytes_and_multibyte_boundaries() {
    let t = Telemetry::builder("n").build().unwrap();
    t.record(
        Category::CUSTOM,
        "gds_mt_backend_posix_aio_submit_failures_total_count",
        1,
    );
    t.record(Category::CUSTOM, &format!("{}é", "x".repeat(30)), 2);
    t.record(Category(99), "unknown_category", 3);
    let mut out = Vec::new();
    t.drain(&mut out);
    assert_eq!(out[0].name(), "gds_mt_backend_posix_aio_submit");
    assert_eq!(out[1].name(), "x".repeat(30));
    assert_eq!(out[2].category(), Category(99));
}

#[test]
fn a_full_ring_nobody_reads_does_not_get_a_report_every_pass() {
    let dir = tempfile::tempdir().unwrap();
    let t = Telemetry::builder("quiet")
        .buffer_size(4)
        .unwrap()
        .ring_directory(dir.path())
        .build()
        .unwrap();
    for v in 0..10 {
        t.record(Category::CUSTOM, "e", v);
        t.flush();
    }
    let before = balanced(&t);
    for _ in 0..20 {
        t.flush();
    }
    let after = balanced(&t);
    assert_eq!(
        after.generated, before.generated,
        "no new losses, no new reports"
    );
    assert_eq!(after.dropped, before.dropped);
}

/// Panics on its second batch.
struct Fragile(u32);

impl Exporter for Fragile {
    fn name(&self) -> &str {
        "fragile"
    }
    fn export(&mut self, events: &[Event]) -> ExportOutcome {
        self.0 += 1;
        assert!(self.0 < 2, "fragile exporter breaks");
        ExportOutcome::delivered(events.len())
    }
}

#[test]
fn a_panicking_exporter_is_disabled_and_the_host_goes_on() {
    let config = Telemetry::builder("p")
        .run_interval(Duration::from_secs(3600))
        .unwrap();
    let t =
        Telemetry::with_exporter("p", config.as_config().clone(), Box::new(Fragile(0))).unwrap();
    t.record(Category::CUSTOM, "a", 1);
    t.flush();
    t.record(Category::CUSTOM, "b", 2);
    t.flush();
    t.record(Category::CUSTOM, "c", 3);
    t.flush();
    let s = balanced(&t);
    assert_eq!(s.delivered, 1);
    assert!(s.dropped.exporter_failed >= 2, "{s:?}");
}
