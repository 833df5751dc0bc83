//! The byte layout of a store file: one per exporter (agent) of a process, in
//! the run's directory, written by that process only and read by the owner.
//!
//! Every number is in the machine's byte order (stores never leave the host)
//! at an offset aligned to its size. The file has a fixed size, whatever the
//! buckets and names, so a reader checks one number against `fstat`.
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 8 | magic `NXTLMPS` + 0x01 |
//! | 8 | 4 | layout version (1) |
//! | 12 | 4 | header length ([`off::SERIES`]) |
//! | 16 | 8 | file size ([`FILE_SIZE`]) |
//! | 24 | 8 | publish sequence: odd while a publish is under way |
//! | 32 | 8 | last update, ms since the Unix epoch |
//! | 40 | 8 | creation, ms since the Unix epoch |
//! | 48 | 4 | pid |
//! | 52 | 4 | 1 if `local_rank` is set |
//! | 56 | 4 | number of bucket bounds (1..=[`MAX_BOUNDS`]) |
//! | 60 | 4 | number of run-time series published (<= [`MAX_SERIES`]) |
//! | 64 | 4 | agent instance: the exporter's ordinal in its process |
//! | 72 | 64 | text: listen address |
//! | 136 | 256 | text: host name |
//! | 392 | 256 | text: agent name |
//! | 648 | 64 | text: local rank |
//! | 712 | 256 | bounds, f64 × [`MAX_BOUNDS`] |
//! | 968 | 128 | fixed readings, u64 × 16 |
//! | 1096 | 528 | histograms: 2 × [`BUCKET_SLOTS`] u64, per bucket, `+Inf` last |
//! | 1664 | 128 × [`MAX_SERIES`] | run-time series |
//!
//! A text field is a 2-byte length then the UTF-8 bytes. A series entry is
//! its value (u64, offset 0), category (i32, 8), kind (u32, 12: 1 error
//! status, 2 per-name counter) and its status or sample name (text, 16).

use nixl_telemetry_metrics::{histogram, slot, MAX_SERIES_NAME_LEN};

/// The first eight bytes of every store.
pub const MAGIC: [u8; 8] = *b"NXTLMPS\x01";
/// The layout version this crate writes and reads.
pub const VERSION: u32 = 1;
/// The most histogram bounds a store holds (a creation error beyond).
pub const MAX_BOUNDS: usize = 32;
/// Buckets per histogram: the bounds and `+Inf`.
pub const BUCKET_SLOTS: usize = MAX_BOUNDS + 1;
/// The most run-time series: the model's (the known error statuses and the
/// per-agent limit of distinct names).
pub const MAX_SERIES: usize = nixl_telemetry_metrics::MAX_SERIES;
/// How many fixed readings an agent has (the model's [`slot`]s).
pub const FIXED_READINGS: usize = slot::COUNT;

/// Field offsets.
pub mod off {
    /// Magic.
    pub const MAGIC: usize = 0;
    /// Layout version.
    pub const VERSION: usize = 8;
    /// Header length.
    pub const HEADER_LEN: usize = 12;
    /// File size.
    pub const FILE_SIZE: usize = 16;
    /// Publish sequence.
    pub const SEQ: usize = 24;
    /// Last update, ms.
    pub const UPDATED_MS: usize = 32;
    /// Creation, ms.
    pub const CREATED_MS: usize = 40;
    /// Process id.
    pub const PID: usize = 48;
    /// Whether the rank is set.
    pub const HAS_RANK: usize = 52;
    /// Bound count.
    pub const BOUND_COUNT: usize = 56;
    /// Series count.
    pub const SERIES_COUNT: usize = 60;
    /// Agent instance.
    pub const AGENT_INSTANCE: usize = 64;
    /// Listen address text.
    pub const LISTEN: usize = 72;
    /// Host name text.
    pub const HOSTNAME: usize = 136;
    /// Agent name text.
    pub const AGENT: usize = 392;
    /// Local rank text.
    pub const RANK: usize = 648;
    /// Bounds.
    pub const BOUNDS: usize = 712;
    /// Fixed readings.
    pub const FIXED: usize = 968;
    /// Histograms.
    pub const HISTOGRAMS: usize = 1096;
    /// First series entry.
    pub const SERIES: usize = 1664;
}

/// Text field sizes (including the 2-byte length).
pub mod text_len {
    /// Listen address.
    pub const LISTEN: usize = 64;
    /// Host name.
    pub const HOSTNAME: usize = 256;
    /// Agent name.
    pub const AGENT: usize = 256;
    /// Local rank.
    pub const RANK: usize = 64;
    /// A series' name.
    pub const SERIES_NAME: usize = 112;
}

/// Bytes of one series entry.
pub const SERIES_ENTRY: usize = 128;
/// Series entry field offsets.
pub mod entry {
    /// Value.
    pub const VALUE: usize = 0;
    /// Category.
    pub const CATEGORY: usize = 8;
    /// Kind.
    pub const KIND: usize = 12;
    /// Name text.
    pub const NAME: usize = 16;
}
/// Series kind: an error status.
pub const KIND_ERROR: u32 = 1;
/// Series kind: a per-name counter.
pub const KIND_COUNTER: u32 = 2;

/// The size of every store file.
pub const FILE_SIZE: usize = off::SERIES + SERIES_ENTRY * MAX_SERIES;

/// Offset of fixed reading `i`.
pub const fn fixed(i: usize) -> usize {
    off::FIXED + 8 * i
}

/// Offset of bucket `b` of histogram `h`.
pub const fn bucket(h: usize, b: usize) -> usize {
    off::HISTOGRAMS + 8 * (h * BUCKET_SLOTS + b)
}

/// Offset of series entry `i`.
pub const fn series(i: usize) -> usize {
    off::SERIES + SERIES_ENTRY * i
}

const _: () = {
    assert!(FIXED_READINGS == 16);
    assert!(histogram::COUNT == 2);
    // Every series name of the model fits its field.
    assert!(MAX_SERIES_NAME_LEN + 2 <= text_len::SERIES_NAME);
    assert!(off::LISTEN + text_len::LISTEN == off::HOSTNAME);
    assert!(off::HOSTNAME + text_len::HOSTNAME == off::AGENT);
    assert!(off::AGENT + text_len::AGENT == off::RANK);
    assert!(off::RANK + text_len::RANK == off::BOUNDS);
    assert!(off::BOUNDS + 8 * MAX_BOUNDS == off::FIXED);
    assert!(off::FIXED + 8 * FIXED_READINGS == off::HISTOGRAMS);
    assert!(bucket(histogram::COUNT, 0) <= off::SERIES);
    assert!(off::SERIES.is_multiple_of(64) && SERIES_ENTRY.is_multiple_of(8));
    assert!(entry::NAME + text_len::SERIES_NAME == SERIES_ENTRY);
};

/// Encodes `text` as a text field of `size` bytes; `None` if it does not fit.
pub fn encode_text(text: &str, size: usize) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    if bytes.len() > size - 2 {
        return None;
    }
    let mut out = Vec::with_capacity(2 + bytes.len());
    out.extend_from_slice(&(bytes.len() as u16).to_ne_bytes());
    out.extend_from_slice(bytes);
    Some(out)
}

/// Decodes the text field of `size` bytes at `offset` of `bytes`; `None` if
/// it is out of bounds, longer than its field or not UTF-8.
pub fn decode_text(bytes: &[u8], offset: usize, size: usize) -> Option<String> {
    let field = bytes.get(offset..offset.checked_add(size)?)?;
    let len = usize::from(u16::from_ne_bytes([field[0], field[1]]));
    let text = field.get(2..2 + len)?;
    String::from_utf8(text.to_vec()).ok()
}

/// The u64 at `offset` of `bytes`, if in bounds.
pub fn read_u64(bytes: &[u8], offset: usize) -> Option<u64> {
    let b = bytes.get(offset..offset.checked_add(8)?)?;
    Some(u64::from_ne_bytes(b.try_into().ok()?))
}

/// The u32 at `offset` of `bytes`, if in bounds.
pub fn read_u32(bytes: &[u8], offset: usize) -> Option<u32> {
    let b = bytes.get(offset..offset.checked_add(4)?)?;
    Some(u32::from_ne_bytes(b.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_round_trip_and_refuse_what_does_not_fit() {
        let field = encode_text("rank-0 é", 64).unwrap();
        let mut bytes = vec![0u8; 100];
        bytes[10..10 + field.len()].copy_from_slice(&field);
        assert_eq!(decode_text(&bytes, 10, 64).as_deref(), Some("rank-0 é"));
        assert!(encode_text(&"x".repeat(63), 64).is_none());
        assert!(encode_text(&"x".repeat(62), 64).is_some());
        // A length past its field, a field past the buffer, bad UTF-8.
        bytes[10..12].copy_from_slice(&200u16.to_ne_bytes());
        assert_eq!(decode_text(&bytes, 10, 64), None);
        assert_eq!(decode_text(&bytes, 90, 64), None);
        bytes[10..14].copy_from_slice(&[2, 0, 0xff, 0xfe]);
        assert_eq!(decode_text(&bytes, 10, 64), None);
    }

    #[test]
    fn the_file_size_is_fixed_and_numbers_are_aligned() {
        assert_eq!(FILE_SIZE, 1664 + 128 * 268);
        for o in [
            off::SEQ,
            off::UPDATED_MS,
            off::FIXED,
            off::HISTOGRAMS,
            off::BOUNDS,
        ] {
            assert_eq!(o % 8, 0);
        }
        assert_eq!(read_u64(&[0u8; 7], 0), None);
        assert_eq!(read_u32(&[1, 0, 0, 0], 0), Some(1u32.to_le()));
    }
}
