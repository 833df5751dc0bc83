//! Which attributes read a record member: the registry's raw keys in a small hash
//! table, so that one pass over a record's members finds every attribute's member
//! instead of a scan of the members per attribute.
//!
//! The table holds only the registry's keys and is at most a quarter full, so a
//! lookup probes at most as many slots as the registry has attributes, whatever keys a
//! record brings: the hash needs no secret seed, and two registries with the same
//! attributes have equal tables.

use crate::hash::tail_words;
use crate::types::AttributeDef;

/// Where a key's probe starts: a multiplicative hash of its length, first and last
/// bytes (what tells attribute names apart; other keys only probe further).
#[inline]
fn start(key: &[u8], mask: usize) -> usize {
    let (first, last) = match key {
        [] => (0, 0),
        [first, .., last] => (*first, *last),
        [only] => (*only, *only),
    };
    let packed = (key.len() as u32) ^ (u32::from(first) << 8) ^ (u32::from(last) << 16);
    (packed.wrapping_mul(0x9e37_79b1) >> 16) as usize & mask
}

/// The attributes by raw key (see the module).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct RawKeyIndex {
    /// The first attribute with each raw key, and the key's summary; the length is a
    /// power of two and at least four times the number of attributes.
    table: Vec<Entry>,
    /// For each attribute, the next attribute (position + 1) with the same raw key, 0
    /// after the last.
    next_same: Vec<u32>,
}

/// A slot of the table: an attribute (position + 1; 0 where free) and its raw key's
/// length and words ([`tail_words`]: keys of up to 16 bytes are equal exactly when
/// these are; longer ones are compared in full), so that a probe compares the key
/// it is given without reading the registry.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Entry {
    attr: u32,
    len: u32,
    words: (u64, u64),
}

impl RawKeyIndex {
    /// The index of `attrs`' raw keys.
    pub(crate) fn new(attrs: &[AttributeDef]) -> RawKeyIndex {
        let len = (attrs.len() * 4).next_power_of_two().max(16);
        let mut index = RawKeyIndex {
            table: vec![Entry::default(); len],
            next_same: vec![0; attrs.len()],
        };
        for (i, attr) in attrs.iter().enumerate() {
            let key = attr.raw_key.as_bytes();
            let mut at = start(key, len - 1);
            loop {
                match index.table[at].attr {
                    0 => {
                        index.table[at] = Entry {
                            attr: i as u32 + 1,
                            len: key.len() as u32,
                            words: tail_words(key),
                        };
                        break;
                    }
                    slot if attrs[slot as usize - 1].raw_key == attr.raw_key => {
                        let mut last = slot as usize - 1;
                        while index.next_same[last] != 0 {
                            last = index.next_same[last] as usize - 1;
                        }
                        index.next_same[last] = i as u32 + 1;
                        break;
                    }
                    _ => at = (at + 1) & (len - 1),
                }
            }
        }
        index
    }

    /// The first attribute (in registry order) whose raw key is `key`.
    #[inline]
    pub(crate) fn first(&self, attrs: &[AttributeDef], key: &str) -> Option<usize> {
        let key = key.as_bytes();
        let mask = self.table.len().wrapping_sub(1);
        let mut at = start(key, mask);
        let words = tail_words(key);
        while let Some(entry) = self.table.get(at) {
            if entry.attr == 0 {
                return None;
            }
            let attr = entry.attr as usize - 1;
            if entry.len as usize == key.len()
                && entry.words == words
                && (key.len() <= 16 || attrs[attr].raw_key.as_bytes() == key)
            {
                return Some(attr);
            }
            at = (at + 1) & mask;
        }
        None
    }

    /// The attribute after `attr` (in registry order) reading the same raw key.
    #[inline]
    pub(crate) fn next_same(&self, attr: usize) -> Option<usize> {
        match self.next_same[attr] {
            0 => None,
            next => Some(next as usize - 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{AttributeType, DefaultValue};

    fn attr(name: &str, raw_key: &str) -> AttributeDef {
        AttributeDef::new(
            name,
            raw_key,
            AttributeType::Integer,
            DefaultValue::Integer(0),
        )
    }

    /// Every attribute reading `key`, in registry order.
    fn readers(index: &RawKeyIndex, attrs: &[AttributeDef], key: &str) -> Vec<usize> {
        let mut out = Vec::new();
        let mut next = index.first(attrs, key);
        while let Some(a) = next {
            out.push(a);
            next = index.next_same(a);
        }
        out
    }

    #[test]
    fn each_raw_key_finds_its_attributes_in_registry_order() {
        let attrs = vec![
            attr("a", "x"),
            attr("b", "y"),
            attr("c", "x"),
            attr("d", "a_rather_long_raw_key_of_more_than_16_bytes"),
            attr("e", ""),
            attr("f", "x"),
        ];
        let index = RawKeyIndex::new(&attrs);
        assert_eq!(readers(&index, &attrs, "x"), [0, 2, 5]);
        assert_eq!(readers(&index, &attrs, "y"), [1]);
        assert_eq!(
            readers(
                &index,
                &attrs,
                "a_rather_long_raw_key_of_more_than_16_bytes"
            ),
            [3]
        );
        assert_eq!(readers(&index, &attrs, ""), [4]);
        for absent in [
            "z",
            "X",
            "xx",
            "a_rather_long_raw_key_of_more_than_16_byteS",
            // The same length, first and last eight bytes: only the middle differs.
            "a_rather_long_raw_kez_of_more_than_16_bytes",
            "a",
        ] {
            assert_eq!(
                readers(&index, &attrs, absent),
                [] as [usize; 0],
                "{absent}"
            );
        }
    }

    #[test]
    fn keys_of_every_short_length_differ_in_every_byte() {
        let text = "abcdefghijklmnopqrstu";
        let attrs: Vec<AttributeDef> = (0..=text.len())
            .map(|n| attr(&format!("a{n}"), &text[..n]))
            .collect();
        let index = RawKeyIndex::new(&attrs);
        for n in 0..=text.len() {
            assert_eq!(index.first(&attrs, &text[..n]), Some(n));
            for i in 0..n {
                let mut other = text.as_bytes()[..n].to_vec();
                other[i] = b'_';
                let other = String::from_utf8(other).unwrap();
                assert_eq!(index.first(&attrs, &other), None, "{other}");
            }
        }
    }

    #[test]
    fn a_large_registry_is_found_whole_and_an_empty_one_finds_nothing() {
        let attrs: Vec<AttributeDef> = (0..300)
            .map(|i| attr(&format!("a{i}"), &format!("raw_{i}")))
            .collect();
        let index = RawKeyIndex::new(&attrs);
        for i in 0..300 {
            assert_eq!(index.first(&attrs, &format!("raw_{i}")), Some(i));
        }
        assert_eq!(index.first(&attrs, "raw_300"), None);
        assert_eq!(RawKeyIndex::new(&[]).first(&[], "raw_0"), None);
        assert_eq!(RawKeyIndex::default().first(&[], "raw_0"), None);
    }
}
