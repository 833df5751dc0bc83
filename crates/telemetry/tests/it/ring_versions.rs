//! Every ring layout (versions 1–4, both layouts of version 2), from small rings
//! these tests write: the writer's bytes decode with an independent decoder
//! written here from the layout tables of docs/ring-format.md (not from the
//! crate's code), the reader detects the layout and hands out the same events,
//! events a typed version has no type for are dropped and counted as `format`,
//! and hostile files of every version are refused with clear errors.

use std::path::Path;

use nixl_telemetry::config::ExporterChoice;
use nixl_telemetry::ring::layout::{RingLayout, LAYOUTS, V1, V2_NAMED, V2_TYPED, V3, V4};
use nixl_telemetry::ring::{ReadMode, RingError, RingReader, RingRecord, RingWriter, SlotView};
use nixl_telemetry::{Category, Event, Telemetry, TelemetryConfig};

fn u32le(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64le(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// (timestamp, category, name, value) as the docs' tables place them.
type Decoded = (Option<u64>, Option<i32>, String, u64);

/// The event type table of the docs, by number.
const TABLE: [&str; 21] = [
    "agent_tx_bytes",
    "agent_rx_bytes",
    "agent_tx_requests_num",
    "agent_rx_requests_num",
    "agent_memory_registered",
    "agent_memory_deregistered",
    "agent_xfer_time",
    "agent_xfer_post_time",
    "agent_err_not_posted",
    "agent_err_invalid_param",
    "agent_err_backend",
    "agent_err_not_found",
    "agent_err_mismatch",
    "agent_err_not_allowed",
    "agent_err_repost_active",
    "agent_err_unknown",
    "agent_err_not_supported",
    "agent_err_remote_disconnect",
    "agent_err_canceled",
    "agent_err_no_telemetry",
    "agent_telemetry_events_dropped",
];

fn c_name(field: &[u8]) -> String {
    let end = field.iter().position(|&b| b == 0).expect("NUL-terminated");
    String::from_utf8(field[..end].to_vec()).unwrap()
}

fn type_name(t: u32, known: usize) -> String {
    if (t as usize) < known {
        TABLE[t as usize].to_owned()
    } else {
        format!("unknown_event_{t}")
    }
}

/// Decodes the unread events of `bytes`, a ring of `layout_name`.
fn independent_decode(layout_name: &str, bytes: &[u8]) -> Vec<Decoded> {
    let (write, read, capacity, mask) = (
        u64le(bytes, 0),
        u64le(bytes, 8),
        u64le(bytes, 24),
        u64le(bytes, 32),
    );
    assert_eq!(mask, capacity - 1);
    let slot = match layout_name {
        "v1" => 56,
        "v2-named" => 48,
        _ => 16,
    };
    let mut out = Vec::new();
    let mut pos = read;
    while pos != write {
        let s = 40 + slot * pos as usize;
        let b = &bytes[s..s + slot];
        out.push(match layout_name {
            "v1" => (
                Some(u64le(b, 0)),
                Some(u32le(b, 8) as i32),
                c_name(&b[12..44]),
                u64le(b, 48),
            ),
            "v2-named" => (
                None,
                Some(u32le(b, 0) as i32),
                c_name(&b[4..36]),
                u64le(b, 40),
            ),
            "v2-typed" => (
                None,
                Some(u32le(b, 0) as i32),
                type_name(u32le(b, 4), 20),
                u64le(b, 8),
            ),
            "v3" | "v4" => {
                assert_eq!(u32le(b, 4), 0, "our writer zeroes the padding");
                let known = if layout_name == "v3" { 20 } else { 21 };
                (None, None, type_name(u32le(b, 0), known), u64le(b, 8))
            }
            other => panic!("unknown layout {other}"),
        });
        pos = (pos + 1) & mask;
    }
    out
}

fn sample_events() -> Vec<Event> {
    vec![
        Event::new(
            1_700_000_000_000_001,
            Category::MEMORY,
            "agent_memory_registered",
            65536,
        ),
        Event::new(
            1_700_000_000_000_002,
            Category::PERFORMANCE,
            "agent_xfer_time",
            812,
        ),
        Event::new(
            1_700_000_000_000_002,
            Category::TRANSFER,
            "agent_tx_bytes",
            4096,
        ),
        Event::new(
            1_700_000_000_000_003,
            Category::BACKEND,
            "ucx_rdma_writes",
            3,
        ),
        Event::new(
            1_700_000_000_000_004,
            Category::ERROR,
            "NIXL_ERR_BACKEND",
            1,
        ),
        Event::new(
            1_700_000_000_000_005,
            Category::SYSTEM,
            "agent_telemetry_events_dropped",
            9,
        ),
        Event::new(
            1_700_000_000_000_006,
            Category(42),
            "agent_rx_requests_num",
            1,
        ),
    ]
}

/// What a reader of `layout` gets for `events` (those it can carry).
fn expected(layout: &RingLayout, events: &[Event]) -> Vec<Decoded> {
    let known = match layout.name {
        "v4" => 21,
        _ => 20,
    };
    events
        .iter()
        .filter_map(|e| {
            let name = e.name().into_owned();
            let typed_name = if name == "NIXL_ERR_BACKEND" {
                "agent_err_backend".to_owned()
            } else {
                name.clone()
            };
            let ts = Some(e.timestamp_us);
            let cat = Some(e.category);
            match layout.name {
                "v1" => Some((ts, cat, name, e.value)),
                "v2-named" => Some((None, cat, name, e.value)),
                _ => {
                    let t = TABLE[..known].iter().position(|n| *n == typed_name)?;
                    let cat = (layout.name == "v2-typed").then_some(e.category);
                    Some((None, cat, TABLE[t].to_owned(), e.value))
                }
            }
        })
        .collect()
}

fn record_tuple(r: &RingRecord) -> Decoded {
    (r.timestamp_us, r.category, r.name().into_owned(), r.value)
}

#[test]
fn every_layout_writes_what_its_table_says_and_reads_it_back() {
    let dir = tempfile::tempdir().unwrap();
    for layout in LAYOUTS {
        let mut w = RingWriter::create_with_layout(dir.path(), layout.name, 8, layout).unwrap();
        let events = sample_events();
        let want = expected(layout, &events);
        let pushed = w.push(&events);
        assert_eq!(pushed.written, want.len(), "{}", layout.name);
        assert_eq!(
            pushed.dropped_format,
            events.len() - want.len(),
            "{}",
            layout.name
        );
        assert_eq!(pushed.dropped_full, 0);
        assert_eq!(w.dropped_format(), pushed.dropped_format as u64);
        drop(w);

        let path = dir.path().join(layout.name);
        let bytes = std::fs::read(&path).unwrap();
        let slot = match layout.name {
            "v1" => 56,
            "v2-named" => 48,
            _ => 16,
        };
        assert_eq!(
            bytes.len(),
            40 + slot * 8 + 72,
            "{}: header, slots, trailer",
            layout.name
        );
        assert_eq!(u32le(&bytes, 16) as i32, layout.version, "version");
        assert_eq!(u32le(&bytes, 20) as i32, layout.version, "expected_version");
        assert_eq!(
            independent_decode(layout.name, &bytes),
            want,
            "{}",
            layout.name
        );
        // The trailer: magic, version 2, 72 bytes, dropped_format at 64.
        let t = 40 + slot * 8;
        assert_eq!(&bytes[t..t + 8], b"NXTLTRL\0");
        assert_eq!((u32le(&bytes, t + 8), u32le(&bytes, t + 12)), (2, 72));
        assert_eq!(u64le(&bytes, t + 64), (events.len() - want.len()) as u64);

        for mode in [ReadMode::Peek, ReadMode::Consume] {
            let mut r = RingReader::open(&path, mode).unwrap();
            assert_eq!(r.layout(), layout, "{}: detected", layout.name);
            let mut got = Vec::new();
            assert_eq!(r.peek_records(&mut got, usize::MAX).unwrap(), want.len());
            let got: Vec<Decoded> = got.iter().map(record_tuple).collect();
            assert_eq!(got, want, "{} {mode:?}", layout.name);
            let trailer = r.trailer().expect("our trailer");
            assert_eq!(trailer.dropped_format, (events.len() - want.len()) as u64);
            assert_eq!(trailer.events_lost(), u128::from(trailer.dropped_format));
            let mut v1 = Vec::new();
            match r.peek_batch(&mut v1, usize::MAX) {
                Ok(n) => assert!(layout == &V1 && n == want.len()),
                Err(RingError::NotVersion1 { layout: name, .. }) => {
                    assert!(layout != &V1);
                    assert_eq!(name, layout.name);
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
}

#[test]
fn typed_rings_fill_wrap_and_keep_their_order() {
    let dir = tempfile::tempdir().unwrap();
    for layout in [&V2_TYPED, &V3, &V4] {
        let mut w = RingWriter::create_with_layout(dir.path(), layout.name, 4, layout).unwrap();
        let mut r = RingReader::open(&dir.path().join(layout.name), ReadMode::Consume).unwrap();
        let ev = |v: u64| Event::new(v, Category::TRANSFER, "agent_tx_bytes", v);
        let skip = Event::new(0, Category::BACKEND, "not_in_any_table", 0);
        // Capacity 4 holds 3; the untyped event takes no slot.
        let p = w.push(&[ev(1), skip, ev(2), ev(3), ev(4)]);
        assert_eq!((p.written, p.dropped_full, p.dropped_format), (3, 1, 1));
        let mut out = Vec::new();
        assert_eq!(r.read_records(&mut out, 2).unwrap(), 2);
        // Wrap: write_pos goes 3 → 0 → 1.
        assert_eq!(w.push(&[ev(5), ev(6), ev(7)]).written, 2);
        assert_eq!(r.read_records(&mut out, usize::MAX).unwrap(), 3);
        let values: Vec<u64> = out.iter().map(|e| e.value).collect();
        assert_eq!(values, [1, 2, 3, 5, 6], "{}", layout.name);
        assert!(out.iter().all(|e| e.event_type == Some(0)));
        assert_eq!((w.dropped_ring_full(), w.dropped_format()), (2, 1));
    }
}

#[test]
fn slot_bytes_hold_the_records_of_every_layout_across_the_wrap() {
    let dir = tempfile::tempdir().unwrap();
    for layout in LAYOUTS {
        let agent = layout.name;
        let path = dir.path().join(agent);
        let mut w = RingWriter::create_with_layout(dir.path(), agent, 8, layout).unwrap();
        let mut consumer = RingReader::open(&path, ReadMode::Consume).unwrap();
        let ev = |v: u64| Event::new(v, Category::TRANSFER, "agent_tx_bytes", v * 3);
        let mut slots = vec![0xAA; 3];
        assert_eq!(consumer.read_slot_bytes(&mut slots, 16).unwrap(), 0);
        assert!(slots.is_empty(), "{agent}: an empty ring leaves no bytes");
        assert_eq!(w.push(&(1..=6).map(ev).collect::<Vec<_>>()).written, 6);
        assert_eq!(consumer.read_slot_bytes(&mut slots, 4).unwrap(), 4);
        assert_eq!(slots.len(), 4 * layout.slot.size, "{agent}");
        // Wrap: slots 6 and 7, then 0 to 2.
        assert_eq!(w.push(&(7..=11).map(ev).collect::<Vec<_>>()).written, 5);
        let mut peeker = RingReader::open(&path, ReadMode::Peek).unwrap();
        for (r, mode) in [(&mut peeker, "peek"), (&mut consumer, "consume")] {
            let mut records = Vec::new();
            assert_eq!(r.peek_records(&mut records, usize::MAX).unwrap(), 7);
            // Peeked again, as bytes: the same slots, the same fields.
            assert_eq!(r.peek_slot_bytes(&mut slots, usize::MAX).unwrap(), 7);
            assert_eq!(slots.len(), 7 * layout.slot.size, "{agent} {mode}");
            let viewed: Vec<RingRecord> =
                SlotView::all(layout, &slots).map(|s| s.record()).collect();
            assert_eq!(viewed, records, "{agent} {mode}");
            let values: Vec<u64> = SlotView::all(layout, &slots).map(|s| s.value()).collect();
            assert_eq!(values, [15, 18, 21, 24, 27, 30, 33], "{agent} {mode}");
            assert_eq!(r.read_slot_bytes(&mut slots, 2).unwrap(), 2);
            assert_eq!(r.pending().unwrap(), 5, "{agent} {mode}");
            assert_eq!(r.read_slot_bytes(&mut slots, 16).unwrap(), 5);
            assert_eq!(
                SlotView::new(layout, &slots[..layout.slot.size]).value(),
                21
            );
            assert_eq!(r.pending().unwrap(), 0, "{agent} {mode}");
        }
    }
}

#[test]
fn the_collector_counts_events_a_version_cannot_carry_as_format() {
    let dir = tempfile::tempdir().unwrap();
    let config = |layout: &'static RingLayout| TelemetryConfig {
        exporter: ExporterChoice::Buffer {
            dir: dir.path().to_owned(),
        },
        buffer_size: 64,
        ring_layout: layout,
        ..TelemetryConfig::default()
    };
    for (layout, agent) in [(&V3, "three"), (&V2_NAMED, "two-named")] {
        let t = Telemetry::new(agent, config(layout)).unwrap();
        t.memory_registered(4096);
        t.backend_event("ucx_rdma_writes", 3);
        t.record(Category::CUSTOM, "my_event", 1);
        t.error("NIXL_ERR_NOT_FOUND");
        t.flush();
        t.flush();
        let s = t.stats();
        if layout == &V3 {
            // Two events without a type, and the one loss report (SYSTEM
            // `agent_telemetry_events_dropped`, type 20, which version 3
            // lacks too): counted, never reported again.
            assert_eq!(s.generated, 1, "{agent}: {s:?}");
            assert_eq!(s.dropped.format, 3, "{agent}: {s:?}");
            assert_eq!(s.delivered, 2, "{agent}: {s:?}");
        } else {
            assert_eq!(s.generated, 0, "{agent}: {s:?}");
            assert_eq!(s.dropped.format, 0, "{agent}: {s:?}");
            assert_eq!(s.delivered, 4, "{agent}: {s:?}");
        }
        assert_eq!(s.dropped.total(), s.dropped.format, "{agent}: {s:?}");
        drop(t);
        let mut r = RingReader::open(&dir.path().join(agent), ReadMode::Peek).unwrap();
        assert_eq!(r.layout(), layout);
        let mut got = Vec::new();
        r.peek_records(&mut got, usize::MAX).unwrap();
        let names: Vec<String> = got.iter().map(|e| e.name().into_owned()).collect();
        if layout == &V3 {
            // The loss report has no type in version 3 either: counted, not repeated.
            assert_eq!(names, ["agent_memory_registered", "agent_err_not_found"]);
            assert_eq!(r.trailer().unwrap().dropped_format, s.dropped.format);
        } else {
            assert_eq!(
                names,
                [
                    "agent_memory_registered",
                    "ucx_rdma_writes",
                    "my_event",
                    "NIXL_ERR_NOT_FOUND"
                ]
            );
        }
    }
}

fn write_bytes(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap();
}

/// A header for `version`, `capacity`, followed by `slot_bytes` zero bytes.
fn file(version: i32, capacity: u64, slot_bytes: usize) -> Vec<u8> {
    let mut b = vec![0u8; 40 + slot_bytes];
    b[16..20].copy_from_slice(&version.to_le_bytes());
    b[20..24].copy_from_slice(&version.to_le_bytes());
    b[24..32].copy_from_slice(&capacity.to_le_bytes());
    b[32..40].copy_from_slice(&(capacity - 1).to_le_bytes());
    b
}

#[test]
fn hostile_files_of_every_version_are_refused_with_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let open = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        write_bytes(&path, bytes);
        RingReader::open(&path, ReadMode::Peek)
            .err()
            .map(|e| e.to_string())
    };
    // NIXL's own files: exactly header + slots, no trailer.
    assert_eq!(open("v2n", &file(2, 8, 8 * 48)), None);
    assert_eq!(open("v2t", &file(2, 8, 8 * 16)), None);
    assert_eq!(open("v3", &file(3, 8, 8 * 16)), None);
    assert_eq!(
        open("v4big", &file(4, 8, 8 * 16 + 5)),
        None,
        "larger is fine"
    );
    // Version 2 of another size: neither layout.
    let e = open("v2odd", &file(2, 8, 8 * 16 + 8)).expect("refused");
    assert!(
        e.contains("v2odd") && e.contains("424 bytes") && e.contains("168 bytes"),
        "{e}"
    );
    // Too short for the smallest layout of the version.
    for version in [2, 3, 4] {
        let e = open("short", &file(version, 8, 8 * 16 - 1)).expect("refused");
        assert!(
            e.contains(&format!("version {version}")) && e.contains("168"),
            "{e}"
        );
    }
    // Positions beyond the capacity, in a typed ring.
    let mut b = file(4, 8, 8 * 16);
    b[0..8].copy_from_slice(&8u64.to_le_bytes());
    let e = open("wpos", &b).expect("refused");
    assert!(e.contains("write_pos = 8"), "{e}");
    // A capacity whose slots overflow.
    let mut b = file(3, 8, 8 * 16);
    b[24..32].copy_from_slice(&(1u64 << 62).to_le_bytes());
    b[32..40].copy_from_slice(&((1u64 << 62) - 1).to_le_bytes());
    let e = open("huge", &b).expect("refused");
    assert!(e.contains("capacity 4611686018427387904"), "{e}");
    // A typed ring truncated under the reader: an error, never a fault.
    let mut w = RingWriter::create_with_layout(dir.path(), "cut", 8, &V4).unwrap();
    w.push_batch(&[Event::new(0, Category::TRANSFER, "agent_rx_bytes", 1)]);
    let path = dir.path().join("cut");
    let mut r = RingReader::open(&path, ReadMode::Peek).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(60)
        .unwrap();
    let mut out = Vec::new();
    let e = r.peek_records(&mut out, 8).unwrap_err().to_string();
    assert!(e.contains("truncated"), "{e}");
}
