//! gzip answers made of a small part that changes every scrape (the
//! exposer families) followed by a large cached part (the agents' families),
//! without compressing the large part again.
//!
//! The cached part is kept as a complete raw deflate stream with its CRC-32
//! and length. An answer is one gzip member: the header, the small part in
//! stored (uncompressed, non-final) deflate blocks, the cached stream as is
//! (its back-references never reach before its own start, since it was
//! compressed alone), and a trailer with the combined CRC-32 and length. Any
//! gzip reader reads it as one member holding the two parts in order.

use std::io::Write;

use flate2::write::DeflateEncoder;
use flate2::{Compression, Crc};

/// The fixed 10-byte gzip header: deflate, no flags, no time, unknown OS.
const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

/// The most bytes one stored deflate block holds.
const STORED_MAX: usize = u16::MAX as usize;

/// A body compressed once, to be sent after any prefix.
#[derive(Debug)]
pub(crate) struct DeflatedBody {
    /// A complete raw deflate stream (its last block final).
    pub(crate) stream: std::sync::Arc<[u8]>,
    crc: Crc,
}

/// Compresses `body` at the fastest level (scrape bodies are very repetitive:
/// about a tenth of the size either way).
pub(crate) fn deflate_body(body: &[u8]) -> DeflatedBody {
    let mut encoder =
        DeflateEncoder::new(Vec::with_capacity(body.len() / 8 + 64), Compression::fast());
    let stream = encoder
        .write_all(body)
        .and_then(|()| encoder.finish())
        .expect("compressing into memory cannot fail");
    let mut crc = Crc::new();
    crc.update(body);
    DeflatedBody {
        stream: stream.into(),
        crc,
    }
}

/// What goes before and after `body.stream` so that the three make one gzip
/// member whose content is `prefix` followed by the body.
///
/// The prefix goes in stored (uncompressed) deflate blocks: it is a few
/// hundred bytes, and storing costs nothing, where compressing it would cost
/// tens of µs per scrape for a compressor's state. Each block is byte-aligned
/// and not final, so the cached stream follows it directly.
pub(crate) fn wrap(prefix: &[u8], body: &DeflatedBody) -> (Vec<u8>, [u8; 8]) {
    let blocks = prefix.len().div_ceil(STORED_MAX);
    let mut head = Vec::with_capacity(HEADER.len() + prefix.len() + 5 * blocks);
    head.extend_from_slice(&HEADER);
    for chunk in prefix.chunks(STORED_MAX) {
        let len = chunk.len() as u16;
        // BFINAL 0, BTYPE 00 (stored), then padding to the byte boundary.
        head.push(0);
        head.extend_from_slice(&len.to_le_bytes());
        head.extend_from_slice(&(!len).to_le_bytes());
        head.extend_from_slice(chunk);
    }
    let mut crc = Crc::new();
    crc.update(prefix);
    crc.combine(&body.crc);
    let mut trailer = [0u8; 8];
    trailer[..4].copy_from_slice(&crc.sum().to_le_bytes());
    trailer[4..].copy_from_slice(&crc.amount().to_le_bytes());
    (head, trailer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn gunzip_one_member(bytes: &[u8]) -> Vec<u8> {
        // GzDecoder reads a single member: everything must be in it.
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(bytes)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn prefix_and_cached_body_make_one_gzip_member() {
        let body: Vec<u8> = (0..20_000)
            .flat_map(|i| format!("agent_tx_bytes_total{{agent_name=\"a{i}\"}} {i}\n").into_bytes())
            .collect();
        let deflated = deflate_body(&body);
        // Past 65535 bytes the prefix takes several stored blocks.
        for prefix in [
            &b""[..],
            b"exposer_scrapes_total 3\n",
            &body[..5000],
            &body[..150_000],
        ] {
            let (head, trailer) = wrap(prefix, &deflated);
            let whole = [&head[..], &deflated.stream, &trailer].concat();
            let mut expected = prefix.to_vec();
            expected.extend_from_slice(&body);
            assert_eq!(gunzip_one_member(&whole), expected);
        }
    }

    #[test]
    fn an_empty_body_works_too() {
        let deflated = deflate_body(b"");
        let (head, trailer) = wrap(b"x 1\n", &deflated);
        let whole = [&head[..], &deflated.stream, &trailer].concat();
        assert_eq!(gunzip_one_member(&whole), b"x 1\n");
    }
}
