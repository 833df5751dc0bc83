//! The ring under concurrency and hostile neighbours: a writer and a consuming
//! reader on two threads lose nothing they do not count, and a reader that
//! scribbles over the header cannot make the writer leave its slots.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use nixl_telemetry::ring::{layout, ReadMode, RingError, RingReader, RingWriter};
use nixl_telemetry::{Category, Event};

#[test]
fn writer_and_consuming_reader_on_two_threads_account_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = RingWriter::create(dir.path(), "spsc", 256).unwrap();
    let path = dir.path().join("spsc");
    let total = 300_000u64;
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut r = RingReader::open(&path, ReadMode::Consume).unwrap();
            let mut got = Vec::new();
            loop {
                let finished = done.load(Ordering::Acquire);
                if r.read_batch(&mut got, 64).unwrap() == 0 && finished {
                    break;
                }
            }
            got
        })
    };
    let mut written = 0u64;
    let mut batch = Vec::with_capacity(32);
    for chunk in 0..total / 32 {
        batch.clear();
        batch.extend((0..32).map(|i| {
            Event::new(
                chunk * 32 + i,
                Category::TRANSFER,
                "agent_tx_bytes",
                chunk * 32 + i,
            )
        }));
        written += writer.push_batch(&batch) as u64;
    }
    done.store(true, Ordering::Release);
    let got = reader.join().unwrap();
    assert_eq!(written + writer.dropped_ring_full(), total);
    assert_eq!(got.len() as u64, written);
    // What arrived is in order and intact.
    assert!(got.windows(2).all(|w| w[0].value < w[1].value));
    assert!(got
        .iter()
        .all(|e| e.timestamp_us == e.value && e.name() == "agent_tx_bytes"));
}

fn write_u64(path: &std::path::Path, offset: u64, value: u64) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(&value.to_le_bytes(), offset).unwrap();
}

#[test]
fn a_hostile_read_pos_cannot_move_the_writer_outside_the_slots() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = RingWriter::create(dir.path(), "h", 8).unwrap();
    let path = dir.path().join("h");
    let trailer_at = layout::trailer_offset(8).unwrap() as usize;
    let before_trailer = std::fs::read(&path).unwrap()[trailer_at..].to_vec();
    for hostile in [u64::MAX, 8, 1 << 40, 3] {
        write_u64(&path, layout::READ_POS_OFFSET as u64, hostile);
        let batch: Vec<Event> = (0..20)
            .map(|i| Event::new(i, Category::CUSTOM, "x", i))
            .collect();
        writer.push_batch(&batch);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(
            bytes.len() as u64,
            layout::file_size_with_trailer(8).unwrap(),
            "file never grows"
        );
        let write_pos = u64::from_le_bytes(bytes[0..8].try_into().unwrap());
        assert!(write_pos < 8);
        // The trailer's fixed part (magic, version, size, pid) is untouched.
        assert_eq!(bytes[trailer_at..trailer_at + 20], before_trailer[..20]);
    }
}

#[test]
fn a_reader_reports_positions_corrupted_while_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = RingWriter::create(dir.path(), "c", 8).unwrap();
    writer.push_batch(&[Event::new(1, Category::CUSTOM, "x", 1)]);
    let path = dir.path().join("c");
    let mut r = RingReader::open(&path, ReadMode::Peek).unwrap();
    write_u64(&path, 0, 1 << 33);
    let err = r.read_batch(&mut Vec::new(), 10).unwrap_err();
    assert!(
        matches!(
            err,
            RingError::PositionOutOfRange {
                field: "write_pos",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_reader_reports_a_file_truncated_under_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = RingWriter::create(dir.path(), "t", 8).unwrap();
    writer.push_batch(&[Event::new(1, Category::CUSTOM, "x", 1)]);
    let path = dir.path().join("t");
    let mut r = RingReader::open(&path, ReadMode::Consume).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(100)
        .unwrap();
    let err = r.read_batch(&mut Vec::new(), 10).unwrap_err();
    assert!(matches!(err, RingError::Truncated { .. }), "{err}");
    assert!(err.to_string().contains("truncated"));
}

/// Damages a good ring file's bytes.
type Corruption = Box<dyn Fn(&mut Vec<u8>)>;

#[test]
fn hostile_headers_are_rejected_before_mapping() {
    let dir = tempfile::tempdir().unwrap();
    let good = {
        let mut w = RingWriter::create(dir.path(), "g", 8).unwrap();
        w.push_batch(&[Event::new(1, Category::CUSTOM, "x", 1)]);
        std::fs::read(dir.path().join("g")).unwrap()
    };
    let cases: Vec<(&str, Corruption, &str)> = vec![
        ("short", Box::new(|b| b.truncate(39)), "too short"),
        (
            "version",
            Box::new(|b| b[16..20].copy_from_slice(&5i32.to_le_bytes())),
            "version 5",
        ),
        (
            "cap0",
            Box::new(|b| b[24..32].copy_from_slice(&0u64.to_le_bytes())),
            "is zero",
        ),
        (
            "cap6",
            Box::new(|b| b[24..32].copy_from_slice(&6u64.to_le_bytes())),
            "not a power of two",
        ),
        (
            "capbig",
            Box::new(|b| b[24..32].copy_from_slice(&(1u64 << 40).to_le_bytes())),
            "but the file is",
        ),
        (
            "capmax",
            Box::new(|b| b[24..32].copy_from_slice(&(1u64 << 63).to_le_bytes())),
            "capacity",
        ),
        (
            "mask",
            Box::new(|b| b[32..40].copy_from_slice(&5u64.to_le_bytes())),
            "mask 5",
        ),
        (
            "wpos",
            Box::new(|b| b[0..8].copy_from_slice(&8u64.to_le_bytes())),
            "write_pos = 8",
        ),
        (
            "rpos",
            Box::new(|b| b[8..16].copy_from_slice(&99u64.to_le_bytes())),
            "read_pos = 99",
        ),
    ];
    for (name, corrupt, want) in cases {
        let mut bytes = good.clone();
        corrupt(&mut bytes);
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        for mode in [ReadMode::Peek, ReadMode::Consume] {
            let err = RingReader::open(&path, mode)
                .err()
                .unwrap_or_else(|| panic!("{name} accepted"));
            let text = err.to_string();
            assert!(text.contains(want) && text.contains(name), "{name}: {text}");
        }
    }
    let err = RingReader::open(&dir.path().join("missing"), ReadMode::Peek)
        .err()
        .unwrap();
    assert!(
        err.to_string().contains("missing") && err.to_string().contains("No such file"),
        "{err}"
    );
}
