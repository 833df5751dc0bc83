//! The reader's output format, all of it: the text block and the JSON line
//! of an event (framing, field order, the lines a ring version lacks), names,
//! dates and integers.
//!
//! Text block (NIXL's Python readers' order; a line whose field the ring
//! version does not carry is left out, as the release's own reader does):
//!
//! ```text
//! (blank line)
//! === NIXL Telemetry Event ===
//! Agent: <agent>                    directory mode only
//! Timestamp: <local date>.<micros>  version 1 only
//! Category: <category>              versions 1 and 2
//! Event: <name>
//! Value: <value>
//! ===========================
//! ```
//!
//! JSON line: `timestamp_us`, `category`, `category_id`, `name`, `value`
//! (then `agent` in directory mode); `null` for a field the version lacks.
//!
//! In text output (blocks and the summary table) names and agents are shown
//! with every control character (U+0000–U+001F, U+007F–U+009F) written as
//! `\xHH`, so a name cannot break the block's lines or drive the terminal;
//! JSON stays exact.
//!
//! Everything here writes into a caller's `Vec<u8>` without allocating per
//! event: names are decoded once per distinct 32-byte field (a direct-mapped
//! cache), dates once per distinct second, integers with `itoa`.

use std::collections::HashMap;

use nixl_telemetry::filter::glob_match;
use nixl_telemetry::ring::RingRecord;
use nixl_telemetry_abi::{Category, Event, EVENT_NAME_CAPACITY};

use crate::local_date::DateCache;
use crate::printable::escape_control;

/// The line that opens every text block, blank line before it included.
const EVENT_HEAD: &str = "\n=== NIXL Telemetry Event ===\n";
/// What starts the agent line (directory mode).
const AGENT_PREFIX: &str = "Agent: ";
/// What starts the timestamp line.
const TIMESTAMP_PREFIX: &str = "Timestamp: ";
/// What starts the category line.
const CATEGORY_PREFIX: &str = "Category: ";
/// What starts the name line.
const EVENT_PREFIX: &str = "Event: ";
/// What starts the value line (after the name line's end).
const VALUE_PREFIX: &str = "\nValue: ";
/// The end of the value line and the line that closes every text block.
const EVENT_TAIL: &str = "\n===========================\n";

/// An event as the output needs it: a version-1 [`Event`] (copied straight
/// from its slot) or a [`RingRecord`] of any version.
pub trait SlotView {
    /// µs since the epoch, when the version has timestamps.
    fn timestamp_us(&self) -> Option<u64>;
    /// The category number, when the version has categories.
    fn category(&self) -> Option<i32>;
    /// The 32-byte name field (NUL-terminated when well-formed).
    fn name_field(&self) -> &[u8; EVENT_NAME_CAPACITY];
    /// The value.
    fn value(&self) -> u64;
}

impl SlotView for Event {
    #[inline]
    fn timestamp_us(&self) -> Option<u64> {
        Some(self.timestamp_us)
    }
    #[inline]
    fn category(&self) -> Option<i32> {
        Some(self.category)
    }
    #[inline]
    fn name_field(&self) -> &[u8; EVENT_NAME_CAPACITY] {
        &self.event_name
    }
    #[inline]
    fn value(&self) -> u64 {
        self.value
    }
}

impl SlotView for RingRecord {
    #[inline]
    fn timestamp_us(&self) -> Option<u64> {
        self.timestamp_us
    }
    #[inline]
    fn category(&self) -> Option<i32> {
        self.category
    }
    #[inline]
    fn name_field(&self) -> &[u8; EVENT_NAME_CAPACITY] {
        &self.name
    }
    #[inline]
    fn value(&self) -> u64 {
        self.value
    }
}

/// The bytes around each event of one ring, built once per ring.
#[derive(Debug, Clone)]
pub struct Framing {
    /// Text mode: the bytes before the first field of each event, up to and
    /// including that field's prefix, for an event whose first field is the
    /// timestamp, the category or the name.
    text_heads: [Vec<u8>; 3],
    /// JSON mode: the bytes that close each object.
    json_tail: Vec<u8>,
}

impl Framing {
    /// The framing of a ring's events; `agent` is `Some` in directory mode,
    /// where every event names its agent.
    pub fn new(agent: Option<&str>) -> Framing {
        let mut text_head = EVENT_HEAD.as_bytes().to_vec();
        let mut json_tail = Vec::new();
        if let Some(agent) = agent {
            text_head.extend_from_slice(AGENT_PREFIX.as_bytes());
            text_head.extend_from_slice(escape_control(agent).as_bytes());
            text_head.push(b'\n');
            json_tail.extend_from_slice(b",\"agent\":");
            push_json_string(&mut json_tail, agent);
        }
        json_tail.extend_from_slice(b"}\n");
        let head = |prefix: &str| [text_head.as_slice(), prefix.as_bytes()].concat();
        Framing {
            text_heads: [
                head(TIMESTAMP_PREFIX),
                head(CATEGORY_PREFIX),
                head(EVENT_PREFIX),
            ],
            json_tail,
        }
    }
}

/// Appends the text block of `record`, whose name as shown in text output
/// (control characters escaped) is `name`.
#[inline]
pub fn push_text_event(
    buf: &mut Vec<u8>,
    framing: &Framing,
    dates: &mut DateCache,
    record: &impl SlotView,
    name: &str,
) {
    let (timestamp_us, category) = (record.timestamp_us(), record.category());
    // The head ends with the first line's prefix; each line's end is pushed
    // together with the next line's prefix.
    let first = match (timestamp_us, category) {
        (Some(_), _) => 0,
        (None, Some(_)) => 1,
        (None, None) => 2,
    };
    buf.extend_from_slice(&framing.text_heads[first]);
    if let Some(ts) = timestamp_us {
        buf.extend_from_slice(dates.get(ts / 1_000_000).as_bytes());
        buf.push(b'.');
        push_micros(buf, (ts % 1_000_000) as u32);
        // Two calls with literals (not one with a chosen slice): a literal's
        // fixed length compiles to a few stores instead of a memcpy call.
        if category.is_some() {
            buf.extend_from_slice(b"\nCategory: ");
        } else {
            buf.extend_from_slice(b"\nEvent: ");
        }
    }
    if let Some(category) = category {
        push_category(buf, category);
        buf.extend_from_slice(b"\nEvent: ");
    }
    buf.extend_from_slice(name.as_bytes());
    buf.extend_from_slice(VALUE_PREFIX.as_bytes());
    push_u64(buf, record.value());
    buf.extend_from_slice(EVENT_TAIL.as_bytes());
}

/// Appends the JSON line of `record`, whose name as a JSON string is `name_json`.
#[inline]
pub fn push_json_event(
    buf: &mut Vec<u8>,
    framing: &Framing,
    record: &impl SlotView,
    name_json: &[u8],
) {
    buf.extend_from_slice(b"{\"timestamp_us\":");
    match record.timestamp_us() {
        Some(ts) => push_u64(buf, ts),
        None => buf.extend_from_slice(b"null"),
    }
    match record.category() {
        Some(category) => {
            buf.extend_from_slice(b",\"category\":\"");
            push_category(buf, category);
            buf.extend_from_slice(b"\",\"category_id\":");
            push_i32(buf, category);
        }
        None => buf.extend_from_slice(b",\"category\":null,\"category_id\":null"),
    }
    buf.extend_from_slice(b",\"name\":");
    buf.extend_from_slice(name_json);
    buf.extend_from_slice(b",\"value\":");
    push_u64(buf, record.value());
    buf.extend_from_slice(&framing.json_tail);
}

/// Appends `text` as a JSON string (quotes included) the way Python's
/// `json.dumps(text, ensure_ascii=False)` writes it: `"` and `\` escaped,
/// `\b \f \n \r \t` short forms, other control characters as `\u00xx`
/// (lower-case hex), everything else as UTF-8.
pub fn push_json_string(out: &mut Vec<u8>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = text.as_bytes();
    let mut from = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let short: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[from..i]);
        if short.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        } else {
            out.extend_from_slice(short);
        }
        from = i + 1;
    }
    out.extend_from_slice(&bytes[from..]);
    out.push(b'"');
}

/// Appends the unsigned decimal `value`.
#[inline]
pub fn push_u64(out: &mut Vec<u8>, value: u64) {
    let mut buf = itoa::Buffer::new();
    out.extend_from_slice(buf.format(value).as_bytes());
}

/// Appends the signed decimal `value`.
#[inline]
pub fn push_i32(out: &mut Vec<u8>, value: i32) {
    let mut buf = itoa::Buffer::new();
    out.extend_from_slice(buf.format(value).as_bytes());
}

/// Appends `value` (< 1 000 000) as exactly six digits.
#[inline]
pub fn push_micros(out: &mut Vec<u8>, value: u32) {
    let mut digits = [b'0'; 6];
    let mut v = value;
    for d in digits.iter_mut().rev() {
        *d = b'0' + (v % 10) as u8;
        v /= 10;
    }
    out.extend_from_slice(&digits);
}

/// What the reader knows about one distinct 32-byte name field.
#[derive(Debug)]
pub struct NameInfo {
    raw: [u8; EVENT_NAME_CAPACITY],
    /// `None` for a field without NUL (a malformed slot).
    pub decoded: Option<DecodedName>,
}

/// A well-formed name, decoded.
#[derive(Debug)]
pub struct DecodedName {
    /// The name (invalid UTF-8 replaced by U+FFFD) as text output shows it
    /// ([`escape_control`]).
    pub shown: Box<str>,
    /// The name as a JSON string, quotes included.
    pub json: Box<[u8]>,
    /// Whether it passes the `--name` globs.
    pub passes: bool,
    /// A number that is the same for every field decoding to the same text.
    pub id: u32,
}

const NAME_CACHE_BITS: u32 = 12;

/// A direct-mapped cache of decoded names, plus the table of distinct texts.
pub struct NameCache {
    slots: Vec<Option<Box<NameInfo>>>,
    globs: Option<Vec<String>>,
    ids: HashMap<Box<str>, u32>,
    /// Text output's form of each distinct name, by id.
    shown: Vec<Box<str>>,
}

impl NameCache {
    /// A cache applying the `--name` globs (`None`: every name passes).
    pub fn new(globs: Option<Vec<String>>) -> NameCache {
        NameCache {
            slots: (0..1usize << NAME_CACHE_BITS).map(|_| None).collect(),
            globs,
            ids: HashMap::new(),
            shown: Vec::new(),
        }
    }

    #[inline]
    fn index(raw: &[u8; EVENT_NAME_CAPACITY]) -> usize {
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&raw[i * 8..i * 8 + 8]);
            u64::from_le_bytes(w)
        };
        let mixed =
            word(0) ^ word(1).rotate_left(17) ^ word(2).rotate_left(31) ^ word(3).rotate_left(47);
        (mixed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - NAME_CACHE_BITS)) as usize
    }

    /// The information about `raw`, decoding it on a miss.
    #[inline]
    pub fn get(&mut self, raw: &[u8; EVENT_NAME_CAPACITY]) -> &NameInfo {
        let index = Self::index(raw);
        let hit = matches!(&self.slots[index], Some(info) if info.raw == *raw);
        if !hit {
            let info = self.decode(raw);
            self.slots[index] = Some(Box::new(info));
        }
        self.slots[index].as_deref().expect("slot was just filled")
    }

    fn decode(&mut self, raw: &[u8; EVENT_NAME_CAPACITY]) -> NameInfo {
        let Some(end) = raw.iter().position(|&b| b == 0) else {
            return NameInfo {
                raw: *raw,
                decoded: None,
            };
        };
        let text: Box<str> = String::from_utf8_lossy(&raw[..end]).into();
        let mut json = Vec::with_capacity(text.len() + 2);
        push_json_string(&mut json, &text);
        let passes = self
            .globs
            .as_ref()
            .is_none_or(|globs| globs.iter().any(|g| glob_match(g, &text)));
        let shown: Box<str> = escape_control(&text).into();
        let id = match self.ids.get(&text) {
            Some(&id) => id,
            None => {
                let id = self.shown.len() as u32;
                self.ids.insert(text.clone(), id);
                self.shown.push(shown.clone());
                id
            }
        };
        NameInfo {
            raw: *raw,
            decoded: Some(DecodedName {
                shown,
                json: json.into(),
                passes,
                id,
            }),
        }
    }

    /// The name of an id handed out by [`NameCache::get`], as text output
    /// shows it.
    pub fn shown(&self, id: u32) -> &str {
        &self.shown[id as usize]
    }
}

/// Category names as bytes, with a fallback for unknown numbers.
#[inline]
pub fn push_category(out: &mut Vec<u8>, category: i32) {
    match Category(category).known_name() {
        Some(name) => out.extend_from_slice(name.as_bytes()),
        None => {
            out.extend_from_slice(b"UNKNOWN_CATEGORY_");
            push_i32(out, category);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local_date::local_date_time;

    fn json(text: &str) -> String {
        let mut out = Vec::new();
        push_json_string(&mut out, text);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn json_strings_match_python() {
        assert_eq!(json("agent_tx_bytes"), r#""agent_tx_bytes""#);
        assert_eq!(json("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(json("\n\r\t\u{8}\u{c}"), r#""\n\r\t\b\f""#);
        assert_eq!(json("\u{1}\u{1f}\u{7f}"), "\"\\u0001\\u001f\u{7f}\"");
        assert_eq!(json("é\u{fffd}"), "\"é\u{fffd}\"");
    }

    #[test]
    fn digits() {
        let mut out = Vec::new();
        push_micros(&mut out, 7);
        push_micros(&mut out, 999_999);
        push_u64(&mut out, u64::MAX);
        push_i32(&mut out, -3);
        assert_eq!(out, b"00000799999918446744073709551615-3".to_vec());
        let mut out = Vec::new();
        push_category(&mut out, 5);
        push_category(&mut out, -7);
        assert_eq!(out, b"PERFORMANCEUNKNOWN_CATEGORY_-7".to_vec());
    }

    fn render(record: &RingRecord, agent: Option<&str>) -> (String, String) {
        let framing = Framing::new(agent);
        let mut text = Vec::new();
        let name = record.name();
        push_text_event(
            &mut text,
            &framing,
            &mut DateCache::default(),
            record,
            &name,
        );
        let mut json = Vec::new();
        let mut name_json = Vec::new();
        push_json_string(&mut name_json, &name);
        push_json_event(&mut json, &framing, record, &name_json);
        (
            String::from_utf8(text).unwrap(),
            String::from_utf8(json).unwrap(),
        )
    }

    #[test]
    fn lines_a_version_lacks_are_left_out() {
        let mut record = RingRecord::from_event(&nixl_telemetry_abi::Event::new(
            0,
            Category::TRANSFER,
            "agent_tx_bytes",
            42,
        ));
        let (text, json) = render(&record, Some("a\"b"));
        assert_eq!(
            text,
            "\n=== NIXL Telemetry Event ===\nAgent: a\"b\nTimestamp: 1970-01-01 00:00:00.000000\n\
             Category: TRANSFER\nEvent: agent_tx_bytes\nValue: 42\n===========================\n"
                .replace("1970-01-01 00:00:00", &local_date_time(0))
        );
        assert_eq!(
            json,
            "{\"timestamp_us\":0,\"category\":\"TRANSFER\",\"category_id\":1,\
             \"name\":\"agent_tx_bytes\",\"value\":42,\"agent\":\"a\\\"b\"}\n"
        );
        record.timestamp_us = None;
        let (text, json) = render(&record, None);
        assert_eq!(
            text,
            "\n=== NIXL Telemetry Event ===\nCategory: TRANSFER\nEvent: agent_tx_bytes\n\
             Value: 42\n===========================\n"
        );
        assert!(
            json.starts_with("{\"timestamp_us\":null,\"category\":\"TRANSFER\""),
            "{json}"
        );
        record.category = None;
        let (text, json) = render(&record, None);
        assert_eq!(
            text,
            "\n=== NIXL Telemetry Event ===\nEvent: agent_tx_bytes\nValue: 42\n\
             ===========================\n"
        );
        assert_eq!(
            json,
            "{\"timestamp_us\":null,\"category\":null,\"category_id\":null,\
             \"name\":\"agent_tx_bytes\",\"value\":42}\n"
        );
    }

    #[test]
    fn names_decode_once_and_share_ids() {
        let mut cache = NameCache::new(Some(vec!["agent_*".to_owned()]));
        let mut raw = [0u8; 32];
        raw[..14].copy_from_slice(b"agent_tx_bytes");
        let a = cache.get(&raw).decoded.as_ref().unwrap();
        assert_eq!(&*a.shown, "agent_tx_bytes");
        assert!(a.passes);
        let id = a.id;
        // Garbage after the NUL: another field, the same name.
        raw[20] = 0x41;
        assert_eq!(cache.get(&raw).decoded.as_ref().unwrap().id, id);
        assert_eq!(cache.shown(id), "agent_tx_bytes");
        let mut bad = [b'x'; 32];
        assert!(cache.get(&bad).decoded.is_none());
        bad[31] = 0;
        let x = cache.get(&bad).decoded.as_ref().unwrap();
        assert!(!x.passes);
        let mut invalid = [0u8; 32];
        invalid[..3].copy_from_slice(b"a\xffb");
        assert_eq!(
            &*cache.get(&invalid).decoded.as_ref().unwrap().shown,
            "a\u{fffd}b"
        );
    }
    #[test]
    fn agents_are_escaped_in_text_blocks_not_in_json() {
        let framing = Framing::new(Some("evil\nAgent: x"));
        assert_eq!(
            framing.text_heads[2],
            b"\n=== NIXL Telemetry Event ===\nAgent: evil\\x0aAgent: x\nEvent: ".to_vec()
        );
        assert!(String::from_utf8(framing.json_tail)
            .unwrap()
            .contains("evil\\nAgent"));
    }
}
