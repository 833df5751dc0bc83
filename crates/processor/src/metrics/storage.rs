//! Storage: the metrics map (integer values by key, plus the processor's
//! `last_updated` timestamp), its JSON form, and the undo log that lets a record be
//! applied wholly or not at all. Memory grows with the number of distinct keys only.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde_json::Value;

use crate::direct_parse::{first_special_byte, is_special};
use crate::error::{BuildError, StateError};
use crate::hash::KeyHashState;
use crate::time::Timestamp;

/// The key under which the processor's timestamp is serialised.
pub const LAST_UPDATED: &str = "last_updated";

static NEXT_GENERATION: AtomicU64 = AtomicU64::new(1);

fn next_generation() -> u64 {
    NEXT_GENERATION.fetch_add(1, Ordering::Relaxed)
}

/// Integer metrics by key, and the time of the last applied record.
///
/// Serialised as one flat JSON object whose keys are sorted by code point, every value
/// an integer except `last_updated`, a string (see [`Metrics::write_json`]).
///
/// Each key gets a dense slot number when first written; values live in one vector, so
/// builders that remember slots ([`crate::MetricsUpdate::slot`]) update them without hashing
/// their keys again.
#[derive(Debug)]
#[must_use]
pub struct Metrics {
    index: HashMap<Box<str>, u32, KeyHashState>,
    values: Vec<i64>,
    /// Changes whenever slot numbers may have been reused (new map, clone, roll-back).
    generation: u64,
    last_updated: Option<Stamp>,
    /// The slot numbers in key order and the keys escaped, as far as the last sort
    /// or write saw them.
    order: Mutex<KeyOrder>,
}

/// Slot numbers sorted by key: those below `ids.len()` of the map of `generation`.
/// Slots are only appended while the generation stays, so the next sort needs to
/// sort only the keys added since and merge them in.
///
/// From a map's second write of its file on, also each slot's key as the file
/// writes it, so that a write copies each key instead of escaping it again (a
/// labeled key has some nine quotes to escape). A map written once (a service's
/// read) keeps no second copy of its keys.
#[derive(Debug, Default)]
struct KeyOrder {
    generation: u64,
    ids: Vec<u32>,
    /// How many of the keys sort before [`LAST_UPDATED`] (a reserved key, which no
    /// metric has), whose member the file writes after them.
    before_last_updated: usize,
    /// Whether the file was written since the generation began.
    written: bool,
    /// The keys' JSON string bodies, slot after slot; slot `i`'s ends at `ends[i]`
    /// (slots from `ends.len()` on are not escaped yet).
    escaped: String,
    ends: Vec<usize>,
}

impl KeyOrder {
    /// Forgets every slot (their numbers may have been reused).
    fn reset(&mut self, generation: u64) {
        self.generation = generation;
        self.ids.clear();
        self.before_last_updated = 0;
        self.written = false;
        self.escaped.clear();
        self.ends.clear();
    }

    /// Adds the slots from `ids.len()` to the end of `keys` (the keys by slot).
    fn add(&mut self, keys: &[&str]) {
        let known = self.ids.len();
        let mut added: Vec<u32> = (known as u32..keys.len() as u32).collect();
        added.sort_unstable_by_key(|&id| keys[id as usize]);
        let mut merged = Vec::with_capacity(keys.len());
        let (mut old, mut new) = (self.ids.iter().peekable(), added.iter().peekable());
        while let (Some(&&a), Some(&&b)) = (old.peek(), new.peek()) {
            if keys[a as usize] <= keys[b as usize] {
                merged.push(a);
                old.next();
            } else {
                merged.push(b);
                new.next();
            }
        }
        merged.extend(old.chain(new));
        self.ids = merged;
        self.before_last_updated += keys[known..]
            .iter()
            .filter(|key| **key < LAST_UPDATED)
            .count();
    }

    /// Escapes the keys of the slots from `ends.len()` to the end of `keys`.
    fn escape_new(&mut self, keys: &[&str]) {
        for key in &keys[self.ends.len()..] {
            write_json_str(&mut self.escaped, key);
            self.ends.push(self.escaped.len());
        }
    }

    /// Slot `id`'s key as a JSON string body (escaped already).
    fn escaped(&self, id: u32) -> &str {
        let id = id as usize;
        let start = if id == 0 { 0 } else { self.ends[id - 1] };
        &self.escaped[start..self.ends[id]]
    }
}

/// `last_updated`: text as loaded (parsed only when needed, like the reference does),
/// or the timestamp of the last applied record (formatted only when shown).
#[derive(Debug, Clone)]
pub(crate) enum Stamp {
    Text(String),
    Time(Timestamp),
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            index: HashMap::default(),
            values: Vec::new(),
            generation: next_generation(),
            last_updated: None,
            order: Mutex::default(),
        }
    }
}

impl Clone for Metrics {
    fn clone(&self) -> Self {
        Metrics {
            index: self.index.clone(),
            values: self.values.clone(),
            generation: next_generation(),
            last_updated: self.last_updated.clone(),
            order: Mutex::default(),
        }
    }
}

impl PartialEq for Metrics {
    fn eq(&self, other: &Self) -> bool {
        self.last_updated() == other.last_updated()
            && self.len() == other.len()
            && self.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}

impl Eq for Metrics {}

impl Metrics {
    /// An empty map.
    pub fn new() -> Metrics {
        Metrics::default()
    }

    /// Number of integer metrics (`last_updated` not counted).
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are no integer metrics.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The value of a metric.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<i64> {
        self.index.get(key).map(|&id| self.values[id as usize])
    }

    /// Sets a metric. `last_updated` is reserved and refused.
    pub fn insert(&mut self, key: &str, value: i64) -> Result<(), BuildError> {
        if key == LAST_UPDATED {
            return Err(BuildError::ReservedKey);
        }
        match self.index.get(key) {
            Some(&id) => self.values[id as usize] = value,
            None => {
                self.push_new(key, value);
            }
        }
        Ok(())
    }

    /// The dense number of a key, if present.
    #[inline]
    pub(super) fn id_of(&self, key: &str) -> Option<u32> {
        self.index.get(key).copied()
    }

    /// The value under a dense number.
    #[inline]
    pub(super) fn value_at(&self, id: u32) -> i64 {
        self.values[id as usize]
    }

    /// Changes whenever dense numbers may have been reused (new map, clone, roll-back).
    #[inline]
    pub(super) fn generation(&self) -> u64 {
        self.generation
    }

    /// The key of a dense number (only for error messages: a scan of the index).
    pub(super) fn key_of(&self, id: u32) -> String {
        self.index
            .iter()
            .find(|(_, &i)| i == id)
            .map(|(k, _)| k.to_string())
            .unwrap_or_default()
    }

    fn push_new(&mut self, key: &str, value: i64) -> u32 {
        let id = self.values.len() as u32;
        self.values.push(value);
        self.index.insert(key.into(), id);
        id
    }

    /// The metrics in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, i64)> {
        self.index
            .iter()
            .map(|(k, &id)| (k.as_ref(), self.values[id as usize]))
    }

    /// The values by dense slot number: slot `i` holds the `i`-th key first written.
    /// A caller that mirrors the map elsewhere (the Python binding) compares this with
    /// an earlier copy to find what changed, without hashing any key. Numbers stay
    /// valid while the map only grows: a failed record's roll-back may remove the
    /// keys it created, and a clone numbers nothing alike.
    pub fn values_by_slot(&self) -> &[i64] {
        &self.values
    }

    /// The keys of slots `first` and above, with their slot numbers, in no particular
    /// order (a scan of the whole index: meant for the few keys a batch created).
    pub fn keys_from_slot(&self, first: usize) -> impl Iterator<Item = (usize, &str)> {
        self.index
            .iter()
            .filter(move |(_, &id)| id as usize >= first)
            .map(|(k, &id)| (id as usize, k.as_ref()))
    }

    /// The metrics sorted by key (code-point order).
    #[must_use]
    pub fn sorted(&self) -> Vec<(&str, i64)> {
        let keys = self.keys_by_slot();
        let mut order = self.key_order();
        if order.ids.len() < keys.len() {
            order.add(&keys);
        }
        order
            .ids
            .iter()
            .map(|&id| (keys[id as usize], self.values[id as usize]))
            .collect()
    }

    /// Every key, by slot number.
    fn keys_by_slot(&self) -> Vec<&str> {
        let mut keys = vec![""; self.values.len()];
        for (key, &id) in &self.index {
            keys[id as usize] = key;
        }
        keys
    }

    /// The key order kept from the last sort or write, reset if the slots may have
    /// been renumbered since; the caller adds the keys added since.
    fn key_order(&self) -> MutexGuard<'_, KeyOrder> {
        let mut order = self.order.lock().unwrap_or_else(PoisonError::into_inner);
        if order.generation != self.generation || order.ids.len() > self.values.len() {
            order.reset(self.generation);
        }
        order
    }

    /// The ISO time of the last applied record in the reference's form
    /// (`2025-01-13T22:18:25.626509`, no fraction when the microsecond is 0), or the
    /// text loaded with the metrics if no record has been applied since.
    pub fn last_updated(&self) -> Option<Cow<'_, str>> {
        match self.last_updated.as_ref()? {
            Stamp::Text(s) => Some(Cow::Borrowed(s)),
            Stamp::Time(t) => Some(Cow::Owned(t.to_string())),
        }
    }

    /// Replaces the `last_updated` text (the processor parses it as the previous `now`).
    pub fn set_last_updated(&mut self, value: Option<String>) {
        self.last_updated = value.map(Stamp::Text);
    }

    pub(crate) fn stamp(&self) -> Option<&Stamp> {
        self.last_updated.as_ref()
    }

    pub(crate) fn set_stamp(&mut self, now: Timestamp) {
        self.last_updated = Some(Stamp::Time(now));
    }

    /// Reads a metrics document: a JSON object of integers, plus an optional
    /// `last_updated` string (or `null`).
    pub fn from_json_str(text: &str) -> Result<Metrics, StateError> {
        let value: Value = serde_json::from_str(text).map_err(StateError::Json)?;
        Metrics::from_json_value(&value)
    }

    /// Reads a parsed metrics document (see [`Metrics::from_json_str`]).
    pub fn from_json_value(value: &Value) -> Result<Metrics, StateError> {
        let map = value.as_object().ok_or(StateError::NotAnObject {
            found: json_kind(value),
        })?;
        let mut metrics = Metrics::new();
        metrics.values.reserve(map.len());
        metrics.index.reserve(map.len());
        for (key, v) in map {
            if key == LAST_UPDATED {
                metrics.last_updated = match v {
                    Value::String(s) => Some(Stamp::Text(s.clone())),
                    Value::Null => None,
                    other => {
                        return Err(StateError::BadValue {
                            key: key.clone(),
                            expected: "a string",
                            found: json_kind(other),
                        })
                    }
                };
                continue;
            }
            let n = v.as_i64().ok_or_else(|| StateError::BadValue {
                key: key.clone(),
                expected: "a 64-bit integer",
                found: json_kind(v),
            })?;
            metrics.push_new(key, n);
        }
        Ok(metrics)
    }

    /// Writes the metrics as JSON the way the reference's state files are written:
    /// keys sorted by code point, one member per line indented by one space, `": "`
    /// between key and value, non-ASCII text as is, and a trailing newline.
    pub fn write_json<W: io::Write>(&self, mut out: W) -> io::Result<()> {
        out.write_all(self.to_json_string().as_bytes())
    }

    /// The text [`Metrics::write_json`] writes.
    #[must_use]
    pub fn to_json_string(&self) -> String {
        let mut order = self.key_order();
        let slots = self.values.len();
        // The first write escapes each key as it goes; later ones keep them escaped.
        let copy_escaped = std::mem::replace(&mut order.written, true);
        let keys = (order.ids.len() < slots || !copy_escaped || order.ends.len() < slots)
            .then(|| self.keys_by_slot());
        if let Some(keys) = &keys {
            if order.ids.len() < slots {
                order.add(keys);
            }
            if copy_escaped {
                order.escape_new(keys);
            }
        }
        let key_bytes = match &keys {
            Some(keys) if !copy_escaped => keys.iter().map(|key| key.len()).sum(),
            _ => order.escaped.len(),
        };
        let mut s = String::with_capacity(key_bytes + 32 * order.ids.len() + 64);
        // A member's opening: the object's own first (nothing is written before it).
        let open = |s: &mut String| s.push_str(if s.is_empty() { "{\n \"" } else { ",\n \"" });
        let member = |s: &mut String, id: u32| {
            open(s);
            match &keys {
                Some(keys) if !copy_escaped => write_json_str(s, keys[id as usize]),
                _ => s.push_str(order.escaped(id)),
            }
            s.push_str("\": ");
            push_integer(s, self.values[id as usize]);
        };
        let (before, after) = order.ids.split_at(order.before_last_updated);
        before.iter().for_each(|&id| member(&mut s, id));
        if let Some(last) = self.last_updated() {
            open(&mut s);
            s.push_str(LAST_UPDATED);
            s.push_str("\": \"");
            write_json_str(&mut s, &last);
            s.push('"');
        }
        after.iter().for_each(|&id| member(&mut s, id));
        if s.is_empty() {
            s.push_str("{}\n");
        } else {
            s.push_str("\n}\n");
        }
        s
    }
}

/// Appends the decimal form of `value` (what `write!(out, "{value}")` writes, without
/// the formatting machinery: the metrics file holds one integer per key).
fn push_integer(out: &mut String, value: i64) {
    let mut digits = [0u8; 20];
    let mut rest = value.unsigned_abs();
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if value < 0 {
        out.push('-');
    }
    out.push_str(std::str::from_utf8(&digits[start..]).expect("ASCII digits"));
}

/// Appends a JSON string body (without quotes), escaping `"`, `\` and control characters
/// (`\b \f \n \r \t` by name, others as `\u00xx`) and leaving all other text as is.
pub(crate) fn write_json_str(out: &mut String, text: &str) {
    // Runs of bytes that need no escape are copied whole, found eight bytes at a time
    // as the direct parser finds the ends of string bodies (the same bytes end both);
    // the escaped bytes are ASCII, so every run ends on a character boundary.
    let bytes = text.as_bytes();
    let mut run = 0;
    let mut i = 0;
    loop {
        if let Some(chunk) = bytes.get(i..i + 8) {
            let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
            match first_special_byte(word) {
                None => {
                    i += 8;
                    continue;
                }
                Some(offset) => i += offset,
            }
        } else {
            while i < bytes.len() && !is_special(bytes[i]) {
                i += 1;
            }
            if i == bytes.len() {
                break;
            }
        }
        let b = bytes[i];
        if b == b'"' || b == b'\\' {
            // A backslash before the byte, and the byte itself starts the next run:
            // the labeled keys' many quotes cost one push each, not two copies.
            out.push_str(&text[run..i]);
            out.push('\\');
            run = i;
            i += 1;
            continue;
        }
        let escape = match b {
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            _ => "",
        };
        out.push_str(&text[run..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{:04x}", b);
        } else {
            out.push_str(escape);
        }
        i += 1;
        run = i;
    }
    out.push_str(&text[run..]);
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a floating-point number",
        Value::Number(n) if n.is_i64() => "an integer",
        Value::Number(_) => "an integer out of the 64-bit range",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// One write to undo.
#[derive(Debug, Clone, Copy)]
enum Undo {
    /// The slot held this value before.
    Value(u32, i64),
    /// The slot was created by this record; its key is the next one in `new_keys`
    /// counting from the end.
    Created(u32, u32),
}

/// Undo information for the record being applied, kept in buffers reused across
/// records: previous values of written slots, and the keys this record created.
#[derive(Debug, Default)]
pub(crate) struct UndoLog {
    entries: Vec<Undo>,
    new_keys: String,
}

impl UndoLog {
    /// Sets the value under `id`, remembering the old one.
    #[inline]
    pub(super) fn write(&mut self, metrics: &mut Metrics, id: u32, value: i64) {
        let slot = &mut metrics.values[id as usize];
        self.entries.push(Undo::Value(id, *slot));
        *slot = value;
    }

    /// Creates `key` (absent from `metrics`) with `value`, remembering to remove it,
    /// and returns its dense number. `last_updated` is refused.
    pub(super) fn create(
        &mut self,
        metrics: &mut Metrics,
        key: &str,
        value: i64,
    ) -> Result<u32, BuildError> {
        if key == LAST_UPDATED {
            return Err(BuildError::ReservedKey);
        }
        let start = self.new_keys.len() as u32;
        self.new_keys.push_str(key);
        let id = metrics.push_new(key, value);
        self.entries.push(Undo::Created(id, start));
        Ok(id)
    }

    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.new_keys.clear();
    }

    /// Puts back every value written since the last [`UndoLog::clear`], newest first,
    /// and removes the keys created since then.
    pub(crate) fn roll_back(&mut self, metrics: &mut Metrics) {
        let mut end = self.new_keys.len();
        let mut removed = false;
        for &entry in self.entries.iter().rev() {
            match entry {
                Undo::Value(id, previous) => metrics.values[id as usize] = previous,
                Undo::Created(id, start) => {
                    let key = &self.new_keys[start as usize..end];
                    end = start as usize;
                    debug_assert_eq!(id as usize + 1, metrics.values.len());
                    metrics.values.pop();
                    metrics.index.remove(key);
                    removed = true;
                }
            }
        }
        if removed {
            metrics.generation = next_generation();
        }
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Escapes one character at a time: the specification `write_json_str` must match.
    fn escaped_by_char(text: &str) -> String {
        let mut out = String::new();
        for c in text.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                c if (c as u32) < 0x20 => {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                }
                c => out.push(c),
            }
        }
        out
    }

    #[test]
    fn json_strings_are_escaped_as_one_character_at_a_time() {
        let fills = ["", "a", "é", "gpu{name=", "☃ NVIDIA A100-SXM4-80GB 😀"];
        for c in (0u32..0x80)
            .filter_map(char::from_u32)
            .chain(['é', '☃', '😀'])
        {
            for before in fills {
                for after in fills {
                    for text in [
                        format!("{before}{c}{after}"),
                        format!("{before}{c}{c}{after}{c}"),
                        format!("{after}{before}{c}{before}{after}"),
                    ] {
                        let mut out = String::from("x");
                        write_json_str(&mut out, &text);
                        assert_eq!(out[1..], escaped_by_char(&text), "{text:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn integers_are_written_as_format_writes_them() {
        let mut values = vec![
            0,
            1,
            -1,
            9,
            10,
            -10,
            99,
            100,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
        ];
        let mut power = 1i64;
        while let Some(next) = power.checked_mul(10) {
            values.extend([power - 1, power, power + 1, -power, -(power - 1), next - 7]);
            power = next;
        }
        for value in values {
            let mut out = String::from("x");
            push_integer(&mut out, value);
            assert_eq!(out, format!("x{value}"));
        }
    }

    use crate::metrics::MetricsUpdate;

    #[test]
    fn json_is_sorted_with_last_updated_in_place() {
        let mut m = Metrics::new();
        m.insert("zeta", 1).unwrap();
        m.insert("alpha", 5_000_000_000).unwrap();
        m.insert("tab\there \"q\" é", -3).unwrap();
        m.set_last_updated(Some("2025-01-13T00:00:00".into()));
        let text = m.to_json_string();
        assert_eq!(
            text,
            "{\n \"alpha\": 5000000000,\n \"last_updated\": \"2025-01-13T00:00:00\",\n \"tab\\there \\\"q\\\" é\": -3,\n \"zeta\": 1\n}\n"
        );
        assert_eq!(Metrics::from_json_str(&text).unwrap(), m);
        assert_eq!(Metrics::new().to_json_string(), "{}\n");
    }

    /// The order kept from sort to sort is the order a full sort gives, as keys are
    /// added between sorts, removed by a roll-back and re-added, and in a clone.
    #[test]
    fn the_kept_key_order_is_a_full_sort_through_growth_and_roll_back() {
        // The order, and the file written from the kept order and escapes, are
        // those of a full sort and every key escaped afresh.
        fn check(m: &Metrics) {
            let mut full: Vec<(&str, i64)> = m.iter().collect();
            full.sort_unstable();
            assert_eq!(m.sorted(), full);
            let mut members: Vec<(String, String)> = full
                .iter()
                .map(|(key, value)| (key.to_string(), value.to_string()))
                .collect();
            if let Some(last) = m.last_updated() {
                // After the keys that sort before it.
                let at = full.partition_point(|(key, _)| *key < LAST_UPDATED);
                let mut text = String::from('"');
                write_json_str(&mut text, &last);
                text.push('"');
                members.insert(at, (LAST_UPDATED.to_string(), text));
            }
            let mut expected = String::from("{");
            for (n, (key, value)) in members.iter().enumerate() {
                expected.push_str(if n == 0 { "\n \"" } else { ",\n \"" });
                write_json_str(&mut expected, key);
                expected.push_str("\": ");
                expected.push_str(value);
            }
            expected.push_str(if members.is_empty() { "}\n" } else { "\n}\n" });
            assert_eq!(m.to_json_string(), expected);
        }
        let mut m = Metrics::new();
        check(&m);
        for round in 0..6u32 {
            for i in 0..37u32 {
                let key = format!("k{}", (i * 7919 + round * 37) % 1000);
                m.insert(&key, i64::from(i)).unwrap();
            }
            // Keys to escape, and keys next to `last_updated` in order.
            for key in [
                "q\"uote{round}",
                "back\\slash",
                "tab\there",
                "last",
                "last_updated_x",
            ] {
                m.insert(&key.replace("{round}", &round.to_string()), 2)
                    .unwrap();
            }
            if round == 2 {
                m.set_stamp(Timestamp::parse_iso("2025-01-13T00:00:05.5").unwrap());
            }
            check(&m);
            let mut undo = UndoLog::default();
            {
                let mut up = MetricsUpdate::new(&mut m, &mut undo);
                up.add("a_new_key", 1).unwrap();
                up.add(&format!("z{round}"), 1).unwrap();
            }
            check(&m);
            undo.roll_back(&mut m);
            check(&m);
            m.insert(&format!("m{round}"), 3).unwrap();
            check(&m);
            check(&m.clone());
        }
        assert!(m.len() > 150, "{}", m.len());
    }

    #[test]
    fn undo_restores_everything() {
        let mut m = Metrics::new();
        m.insert("a", 1).unwrap();
        let before = m.clone();
        let mut undo = UndoLog::default();
        {
            let mut up = MetricsUpdate::new(&mut m, &mut undo);
            up.add("a", 2).unwrap();
            up.add("b", 7).unwrap();
            up.set("a", 40).unwrap();
            let slot = up.slot("c").unwrap();
            up.add_at(slot, 9).unwrap();
            assert_eq!(up.get("c"), Some(9));
            assert!(matches!(
                up.add("a", i64::MAX),
                Err(BuildError::Overflow { .. })
            ));
            assert!(matches!(
                up.set(LAST_UPDATED, 1),
                Err(BuildError::ReservedKey)
            ));
        }
        assert_eq!(m.get("a"), Some(40));
        let generation = m.generation;
        undo.roll_back(&mut m);
        assert_eq!(m, before);
        assert_ne!(m.generation, generation, "removed keys invalidate slots");
        assert_eq!(m.len(), 1);
    }

    #[test]
    fn keys_are_kept_escaped_from_the_second_write_on() {
        let kept = |m: &Metrics| m.order.lock().unwrap().escaped.clone();
        let mut m = Metrics::new();
        m.insert("a\"b", 1).unwrap();
        let first = m.to_json_string();
        assert_eq!(kept(&m), "", "a map written once keeps no copy of its keys");
        assert_eq!(m.to_json_string(), first);
        assert_eq!(kept(&m), "a\\\"b");
        m.insert("c\\", 2).unwrap();
        assert_eq!(m.to_json_string(), "{\n \"a\\\"b\": 1,\n \"c\\\\\": 2\n}\n");
        assert_eq!(kept(&m), "a\\\"bc\\\\");
        // A clone starts over.
        let clone = m.clone();
        assert_eq!(clone.to_json_string(), m.to_json_string());
        assert_eq!(kept(&clone), "");
    }

    #[test]
    fn slots_number_keys_in_first_write_order() {
        let mut m = Metrics::new();
        m.insert("b", 2).unwrap();
        m.insert("a", 1).unwrap();
        m.insert("b", 5).unwrap();
        m.insert("c", -1).unwrap();
        assert_eq!(m.values_by_slot(), &[5, 1, -1]);
        let mut tail: Vec<(usize, &str)> = m.keys_from_slot(1).collect();
        tail.sort_unstable();
        assert_eq!(tail, vec![(1, "a"), (2, "c")]);
        assert_eq!(m.keys_from_slot(3).count(), 0);
    }

    #[test]
    fn bad_state_values_are_named() {
        let err = Metrics::from_json_str(r#"{"a": 1, "b": 1.5}"#).unwrap_err();
        assert!(err.to_string().contains("`b`"), "{err}");
        let err = Metrics::from_json_str(r#"{"last_updated": 3}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "metrics key `last_updated`: expected a string, found an integer"
        );
        let err = Metrics::from_json_str(r#"{"last_updated": 2.5}"#).unwrap_err();
        assert!(
            err.to_string().ends_with("found a floating-point number"),
            "{err}"
        );
        let err = Metrics::from_json_str(r#"{"a": 18446744073709551615}"#).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("found an integer out of the 64-bit range"),
            "{err}"
        );
        assert!(Metrics::from_json_str("[]").is_err());
    }
}
