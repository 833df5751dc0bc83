//! Registered memory: regions of real, touched bytes, split into blocks that
//! are locked one at a time while a transfer copies into or out of them.

use std::sync::RwLock;

/// A region id that no agent ever registers: a transfer to it fails with
/// `NIXL_ERR_NOT_FOUND`.
pub const UNREGISTERED_REGION: u64 = u64::MAX;

/// Where a transfer reads or writes: a byte range of one agent's region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descriptor {
    /// The agent's index in the workload.
    pub agent: usize,
    /// The region's id.
    pub region: u64,
    /// First byte, from the region's start.
    pub offset: usize,
    /// Number of bytes.
    pub len: usize,
}

/// One registered memory region.
#[derive(Debug)]
pub struct Region {
    id: u64,
    size: usize,
    block_size: usize,
    blocks: Vec<RwLock<Box<[u8]>>>,
}

impl Region {
    /// Allocates `size` bytes in blocks of `block_size` (the last may be
    /// shorter) and writes every byte, so the memory is really there.
    pub fn allocate(id: u64, size: usize, block_size: usize) -> Region {
        assert!(size > 0 && block_size > 0, "empty region or block");
        let fill = (id as u8).wrapping_mul(37) | 1;
        let blocks = (0..size.div_ceil(block_size))
            .map(|b| {
                let len = block_size.min(size - b * block_size);
                RwLock::new(vec![fill; len].into_boxed_slice())
            })
            .collect();
        Region {
            id,
            size,
            block_size,
            blocks,
        }
    }

    /// The region's id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Its size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The size of its blocks.
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    /// Whether `offset..offset + len` lies inside the region.
    pub fn contains(&self, offset: usize, len: usize) -> bool {
        offset.checked_add(len).is_some_and(|end| end <= self.size)
    }

    /// A copy of `len` bytes at `offset` (for checks in tests).
    pub fn read(&self, offset: usize, len: usize) -> Vec<u8> {
        assert!(self.contains(offset, len), "range outside the region");
        let mut out = Vec::with_capacity(len);
        let mut at = offset;
        while out.len() < len {
            let (block, within) = (at / self.block_size, at % self.block_size);
            let guard = self.blocks[block].read().unwrap_or_else(|e| e.into_inner());
            let take = (len - out.len()).min(guard.len() - within);
            out.extend_from_slice(&guard[within..within + take]);
            at += take;
        }
        out
    }
}

/// A block's place in the global lock order.
type BlockKey = (usize, u64, usize);

/// Copies `len` bytes from `src` (agent `src_agent`) at `src_offset` to `dst`
/// (agent `dst_agent`) at `dst_offset`, block piece by block piece. Each piece
/// holds the source block's read lock and the destination block's write lock,
/// taken in one global order so that concurrent copies never deadlock.
/// Both ranges must lie inside their regions, and the regions must differ.
pub fn copy(
    (src_agent, src, src_offset): (usize, &Region, usize),
    (dst_agent, dst, dst_offset): (usize, &Region, usize),
    len: usize,
) {
    assert!(src.contains(src_offset, len) && dst.contains(dst_offset, len));
    assert!(
        (src_agent, src.id) != (dst_agent, dst.id),
        "copy within one region"
    );
    let mut done = 0;
    while done < len {
        let (s_block, s_within) = (
            (src_offset + done) / src.block_size,
            (src_offset + done) % src.block_size,
        );
        let (d_block, d_within) = (
            (dst_offset + done) / dst.block_size,
            (dst_offset + done) % dst.block_size,
        );
        let s_key: BlockKey = (src_agent, src.id, s_block);
        let d_key: BlockKey = (dst_agent, dst.id, d_block);
        let piece;
        if s_key < d_key {
            let s = src.blocks[s_block]
                .read()
                .unwrap_or_else(|e| e.into_inner());
            let mut d = dst.blocks[d_block]
                .write()
                .unwrap_or_else(|e| e.into_inner());
            piece = (len - done).min(s.len() - s_within).min(d.len() - d_within);
            d[d_within..d_within + piece].copy_from_slice(&s[s_within..s_within + piece]);
        } else {
            let mut d = dst.blocks[d_block]
                .write()
                .unwrap_or_else(|e| e.into_inner());
            let s = src.blocks[s_block]
                .read()
                .unwrap_or_else(|e| e.into_inner());
            piece = (len - done).min(s.len() - s_within).min(d.len() - d_within);
            d[d_within..d_within + piece].copy_from_slice(&s[s_within..s_within + piece]);
        }
        done += piece;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_are_filled_and_bounded() {
        let r = Region::allocate(3, 10_000, 4096);
        assert_eq!(r.size(), 10_000);
        assert!(r.contains(0, 10_000));
        assert!(!r.contains(1, 10_000));
        assert!(!r.contains(usize::MAX, 2));
        let bytes = r.read(0, 10_000);
        assert!(bytes.iter().all(|&b| b == bytes[0] && b != 0));
    }

    #[test]
    fn copies_span_blocks_on_both_sides() {
        let a = Region::allocate(1, 20_000, 4096);
        let b = Region::allocate(2, 20_000, 3000);
        let before = b.read(0, 20_000);
        copy((0, &a, 1000), (1, &b, 2500), 9000);
        let after = b.read(0, 20_000);
        assert_eq!(&after[2500..11_500], &a.read(1000, 9000)[..]);
        assert_eq!(&after[..2500], &before[..2500]);
        assert_eq!(&after[11_500..], &before[11_500..]);
    }
}
