//! The key and hash of the per-agent name cache: the series map maps an
//! event's (category, name) to its series once and finds it again by this
//! key, so a repeated name costs one hash of the fixed-size name field.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hash, Hasher};

use nixl_telemetry_abi::EVENT_NAME_CAPACITY;

/// Key of a name cache: the category and the NUL-padded name.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct NameKey {
    /// The event's category (`Category.0`).
    pub category: i32,
    /// The event's name, NUL-padded (cut at [`EVENT_NAME_CAPACITY`] bytes).
    pub name: [u8; EVENT_NAME_CAPACITY],
}

impl NameKey {
    /// The key of `name` (its first [`EVENT_NAME_CAPACITY`] bytes) in `category`.
    pub fn new(category: i32, name: &[u8]) -> NameKey {
        let mut padded = [0u8; EVENT_NAME_CAPACITY];
        let n = name.len().min(EVENT_NAME_CAPACITY);
        padded[..n].copy_from_slice(&name[..n]);
        NameKey {
            category,
            name: padded,
        }
    }
}

impl fmt::Debug for NameKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}",
            self.category,
            String::from_utf8_lossy(&self.name)
        )
    }
}

impl Hash for NameKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_i32(self.category);
        state.write(&self.name);
    }
}

/// A fast multiplicative hash for the name caches (keys come from the host's
/// own event names and the caches are bounded, so no protection against
/// chosen collisions is needed).
#[derive(Debug, Default, Clone, Copy)]
pub struct NameHasher(u64);

impl NameHasher {
    #[inline]
    fn mix(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for NameHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.mix(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.mix(u64::from_le_bytes(w));
        }
    }
    #[inline]
    fn write_i32(&mut self, i: i32) {
        self.mix(i as u32 as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A name cache: [`NameKey`] to `V`, hashed with [`NameHasher`].
pub type NameMap<V> = HashMap<NameKey, V, BuildHasherDefault<NameHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_padded_and_cut_at_the_name_field() {
        let k = NameKey::new(3, b"abc");
        assert_eq!(&k.name[..4], b"abc\0");
        let long = [b'x'; EVENT_NAME_CAPACITY + 10];
        assert_eq!(NameKey::new(3, &long).name, [b'x'; EVENT_NAME_CAPACITY]);
        assert_ne!(NameKey::new(3, b"abc"), NameKey::new(4, b"abc"));
        let mut map = NameMap::default();
        map.insert(NameKey::new(3, b"abc"), 1);
        assert_eq!(map.get(&NameKey::new(3, b"abc")), Some(&1));
        assert_eq!(map.get(&NameKey::new(4, b"abc")), None);
    }
}
