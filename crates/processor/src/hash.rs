//! A fast, per-process seeded hasher for metric keys.
//!
//! Metric keys are long (labeled keys run to a few hundred bytes) and each record
//! hashes several of them, so the map's hasher dominates. This one folds 16 bytes per
//! 64×64→128-bit multiply, in two independent chains for input past 32 bytes. Its
//! seed comes from the standard library's random `RandomState`, so key collisions
//! cannot be planned from outside a process.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

const K0: u64 = 0xa076_1d64_78bd_642f;
const K1: u64 = 0xe703_7ed1_a0b4_28db;
const K2: u64 = 0x8ebc_6af0_9c88_c6e3;

#[inline]
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

#[inline]
fn read_u64(b: &[u8], at: usize) -> u64 {
    let mut buf = [0u8; 8];
    buf.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(buf)
}

#[inline]
fn read_u32(b: &[u8], at: usize) -> u64 {
    let mut buf = [0u8; 4];
    buf.copy_from_slice(&b[at..at + 4]);
    u64::from(u32::from_le_bytes(buf))
}

/// Up to 16 bytes as two words that are equal exactly for equal byte strings of the
/// same length (longer strings: their first and last eight bytes only).
#[inline]
pub(crate) fn tail_words(b: &[u8]) -> (u64, u64) {
    if b.is_empty() {
        (0, 0)
    } else {
        read_tail(b)
    }
}

/// Reads 1 to 16 bytes as two words, with overlapping fixed-size loads.
#[inline]
fn read_tail(b: &[u8]) -> (u64, u64) {
    let n = b.len();
    if n >= 8 {
        (read_u64(b, 0), read_u64(b, n - 8))
    } else if n >= 4 {
        (read_u32(b, 0), read_u32(b, n - 4))
    } else {
        let word = u64::from(b[0]) | u64::from(b[n / 2]) << 8 | u64::from(b[n - 1]) << 16;
        (word, 0)
    }
}

/// Hashes bytes from `seed` as a [`KeyHasher`] writing them once would, finished (for
/// tables that store hashes themselves).
#[inline]
pub(crate) fn hash_bytes(seed: u64, bytes: &[u8]) -> u64 {
    let mut hasher = KeyHasher { state: seed };
    hasher.write(bytes);
    hasher.finish()
}

/// Whether two byte strings are equal, comparing strings of up to 16 bytes as two
/// words (no library call).
#[inline]
pub(crate) fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    if a.is_empty() || a.len() > 16 {
        return a == b;
    }
    read_tail(a) == read_tail(b)
}

/// Builds [`KeyHasher`]s with one random seed per map.
#[derive(Debug, Clone)]
pub(crate) struct KeyHashState {
    seed: u64,
}

impl Default for KeyHashState {
    fn default() -> Self {
        let seed = RandomState::new().hash_one(0x5eed_u64);
        KeyHashState { seed }
    }
}

impl KeyHashState {
    /// The random seed.
    pub(crate) fn seed(&self) -> u64 {
        self.seed
    }
}

impl BuildHasher for KeyHashState {
    type Hasher = KeyHasher;
    fn build_hasher(&self) -> KeyHasher {
        KeyHasher { state: self.seed }
    }
}

/// The hasher built by [`KeyHashState`].
#[derive(Debug, Clone)]
pub(crate) struct KeyHasher {
    state: u64,
}

impl Hasher for KeyHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut h = self.state ^ (bytes.len() as u64).wrapping_mul(K2);
        let mut bytes = bytes;
        if bytes.len() > 32 {
            // Two chains of multiplies side by side, 32 bytes a round: each multiply
            // waits for the one before it in its chain only.
            let mut g = h ^ K1;
            let mut pairs = bytes.chunks_exact(32);
            for c in &mut pairs {
                h = fold(read_u64(c, 0) ^ K0, read_u64(c, 8) ^ h);
                g = fold(read_u64(c, 16) ^ K1, read_u64(c, 24) ^ g);
            }
            h = fold(h ^ K2, g ^ K0);
            bytes = pairs.remainder();
        }
        let mut chunks = bytes.chunks_exact(16);
        for c in &mut chunks {
            h = fold(read_u64(c, 0) ^ K0, read_u64(c, 8) ^ h);
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let (a, b) = read_tail(rest);
            h = fold(a ^ K0, b ^ h ^ K1);
        }
        self.state = h;
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.state = fold(self.state ^ u64::from(i), K1);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.state = fold(self.state ^ i as u64, K1);
    }

    #[inline]
    fn finish(&self) -> u64 {
        fold(self.state ^ K2, K0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_keys_hash_alike_and_neighbours_differ() {
        let s = KeyHashState::default();
        let a = "tao_job_total{tao_action=\"train\"}";
        assert_eq!(s.hash_one(a), s.hash_one(String::from(a)));
        let mut seen = std::collections::HashSet::new();
        for i in 0..10_000u32 {
            assert!(seen.insert(s.hash_one(format!("key_{i}"))));
        }
        assert_ne!(s.hash_one("ab"), s.hash_one("ba"));
        assert_ne!(s.hash_one(""), s.hash_one("\0"));
    }

    /// Past 32 bytes the input runs through two chains: a change of any one byte, in
    /// either chain or in the tail, changes the hash.
    #[test]
    fn long_keys_differing_in_any_one_byte_hash_apart() {
        let s = KeyHashState::default();
        for len in [33, 47, 48, 63, 64, 65, 100, 257] {
            let base: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            let mut seen = std::collections::HashSet::new();
            assert!(seen.insert(s.hash_one(&base)));
            for i in 0..len {
                let mut other = base.clone();
                other[i] = b'_';
                assert!(seen.insert(s.hash_one(&other)), "length {len}, byte {i}");
            }
        }
    }

    #[test]
    fn bytes_eq_compares_every_byte() {
        let text = b"abcdefghijklmnopqrstuvwxyz";
        for n in 0..=text.len() {
            let a = &text[..n];
            assert!(bytes_eq(a, a));
            for i in 0..n {
                let mut b = a.to_vec();
                b[i] ^= 1;
                assert!(!bytes_eq(a, &b), "{n} {i}");
            }
            assert!(!bytes_eq(a, &text[..n.saturating_sub(1)]) || n == 0);
        }
    }
}
