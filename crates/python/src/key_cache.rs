//! What the events of one ring share, by the key their slots store (the name
//! field, or the event type): built once per distinct key and looked up for
//! every event straight from the slot bytes (no record is copied out).
//!
//! A ring's events cycle through a handful of keys, so the lookup is one hash
//! of the key into a small direct-mapped table and one comparison; a key whose
//! place holds another falls back to a map.

use std::collections::HashMap;

use nixl_telemetry::ring::{event_type_name_field, layout::RingLayout, SlotKey};
use nixl_telemetry_abi::EVENT_NAME_CAPACITY;
use pyo3::prelude::*;
use pyo3::types::PyString;

/// A slot's key, owned.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum OwnedKey {
    Name([u8; EVENT_NAME_CAPACITY]),
    Type(u32),
}

impl OwnedKey {
    fn of(key: SlotKey<'_>) -> OwnedKey {
        match key {
            SlotKey::Name(name) => OwnedKey::Name(*name),
            SlotKey::Type(t) => OwnedKey::Type(t),
        }
    }

    #[inline]
    fn is(&self, key: SlotKey<'_>) -> bool {
        match (self, key) {
            (OwnedKey::Name(a), SlotKey::Name(b)) => a == b,
            (OwnedKey::Type(a), SlotKey::Type(b)) => *a == b,
            _ => false,
        }
    }
}

/// The place of `key` in the direct-mapped table (a multiplicative hash of
/// every byte of a name).
#[inline]
fn place(key: SlotKey<'_>) -> usize {
    const MIX: u64 = 0x9E37_79B9_7F4A_7C15;
    let h = match key {
        SlotKey::Name(name) => {
            let word =
                |i: usize| u64::from_le_bytes(name[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
            word(0) ^ word(1).rotate_left(17) ^ word(2).rotate_left(31) ^ word(3).rotate_left(47)
        }
        SlotKey::Type(t) => u64::from(t),
    };
    (h.wrapping_mul(MIX) >> (64 - DIRECT_BITS)) as usize
}

const DIRECT_BITS: u32 = 6;
const EMPTY: u32 = u32::MAX;

/// Values by slot key for one ring; a value is `None` for a malformed slot
/// (a name field without its NUL).
pub struct KeyCache<V> {
    /// (key, index into `values`), `EMPTY` where no key was placed yet.
    direct: Vec<(OwnedKey, u32)>,
    all: HashMap<OwnedKey, u32>,
    values: Vec<Option<V>>,
}

impl<V> Default for KeyCache<V> {
    fn default() -> Self {
        KeyCache {
            direct: vec![(OwnedKey::Type(0), EMPTY); 1 << DIRECT_BITS],
            all: HashMap::new(),
            values: Vec::new(),
        }
    }
}

impl<V> KeyCache<V> {
    /// The value for `key` (`None`: a malformed slot), made by `make` from the
    /// slot's name field (`None` when it has no NUL) the first time.
    #[inline(always)]
    pub fn get(
        &mut self,
        layout: &RingLayout,
        key: SlotKey<'_>,
        make: impl FnOnce(&[u8; EVENT_NAME_CAPACITY]) -> PyResult<V>,
    ) -> PyResult<Option<&V>> {
        let at = place(key);
        let (placed, index) = &self.direct[at];
        if *index != EMPTY && placed.is(key) {
            return Ok(self.values[*index as usize].as_ref());
        }
        self.get_slow(layout, key, at, make)
    }

    #[cold]
    fn get_slow(
        &mut self,
        layout: &RingLayout,
        key: SlotKey<'_>,
        at: usize,
        make: impl FnOnce(&[u8; EVENT_NAME_CAPACITY]) -> PyResult<V>,
    ) -> PyResult<Option<&V>> {
        let owned = OwnedKey::of(key);
        let index = match self.all.get(&owned) {
            Some(&index) => index,
            None => {
                let value = match owned {
                    OwnedKey::Name(field) => {
                        if name_is_terminated(&field) {
                            Some(make(&field)?)
                        } else {
                            None
                        }
                    }
                    OwnedKey::Type(t) => Some(make(&event_type_name_field(layout, t))?),
                };
                let index = u32::try_from(self.values.len())
                    .ok()
                    .filter(|&i| i != EMPTY)
                    .expect("fewer distinct keys than slots of a ring");
                self.values.push(value);
                self.all.insert(owned, index);
                index
            }
        };
        self.direct[at] = (owned, index);
        Ok(self.values[index as usize].as_ref())
    }
}

/// Whether a name field holds its NUL terminator (a malformed slot has none).
fn name_is_terminated(name: &[u8; EVENT_NAME_CAPACITY]) -> bool {
    name.contains(&0)
}

/// Names as Python strings by name field, shared by every ring of a read (one
/// `str` per distinct name); invalid UTF-8 is replaced by U+FFFD.
#[derive(Default)]
pub struct NameStrings {
    all: HashMap<[u8; EVENT_NAME_CAPACITY], Py<PyString>>,
}

impl NameStrings {
    /// The name of a (terminated) name field.
    pub fn get(&mut self, py: Python<'_>, field: &[u8; EVENT_NAME_CAPACITY]) -> Py<PyString> {
        self.all
            .entry(*field)
            .or_insert_with(|| {
                let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
                PyString::new(py, &String::from_utf8_lossy(&field[..end])).unbind()
            })
            .clone_ref(py)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nixl_telemetry_abi::ring::{V1, V4};

    fn field(text: &str) -> [u8; EVENT_NAME_CAPACITY] {
        let mut f = [0u8; EVENT_NAME_CAPACITY];
        f[..text.len()].copy_from_slice(text.as_bytes());
        f
    }

    #[test]
    fn each_key_is_made_once_and_found_again() {
        let mut cache = KeyCache::<String>::default();
        let mut made = 0;
        // More keys than places: collisions fall back to the map.
        let names: Vec<_> = (0..200).map(|i| field(&format!("event_{i}"))).collect();
        for _ in 0..3 {
            for name in &names {
                let got = cache
                    .get(&V1, SlotKey::Name(name), |f| {
                        made += 1;
                        Ok(String::from_utf8_lossy(f).into_owned())
                    })
                    .unwrap()
                    .cloned();
                assert_eq!(got.as_deref().map(str::as_bytes), Some(&name[..]));
            }
        }
        assert_eq!(made, 200, "one value per distinct key");
    }

    #[test]
    fn a_name_without_nul_is_malformed_and_types_are_named() {
        let mut cache = KeyCache::<[u8; EVENT_NAME_CAPACITY]>::default();
        let unterminated = [b'x'; EVENT_NAME_CAPACITY];
        for _ in 0..2 {
            let got = cache.get(&V1, SlotKey::Name(&unterminated), |f| Ok(*f));
            assert_eq!(got.unwrap(), None);
        }
        let got = cache
            .get(&V4, SlotKey::Type(0), |f| Ok(*f))
            .unwrap()
            .copied();
        assert_eq!(got, Some(field("agent_tx_bytes")));
        let got = cache
            .get(&V4, SlotKey::Type(9999), |f| Ok(*f))
            .unwrap()
            .copied();
        assert_eq!(got, Some(field("unknown_event_9999")));
        // A type and a name field with the same first bytes are different keys.
        let mut looks_like_type = [0u8; EVENT_NAME_CAPACITY];
        looks_like_type[0] = 0;
        let got = cache
            .get(&V1, SlotKey::Name(&looks_like_type), |f| Ok(*f))
            .unwrap()
            .copied();
        assert_eq!(got, Some(looks_like_type));
    }
}
