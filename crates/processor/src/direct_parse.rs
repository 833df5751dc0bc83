//! A direct JSON parser for the common shape of records, in front of serde_json.
//!
//! Records are small objects of plain strings, integers, booleans and short arrays.
//! This parser reads exactly that subset straight into [`JsonValue`], borrowing every
//! string from the line, and gives up (returns `None`) on anything else: a float, an
//! integer outside 64 bits or `-0`, a `\u` escape, nesting deeper than
//! [`MAX_DEPTH`], and every syntax error. The caller then parses the line again with
//! serde_json, so values outside the subset and every error message are serde_json's,
//! exactly as before. Within the subset the values are those serde_json gives: strings
//! without escapes borrowed, strings with escapes owned, members and items in text
//! order, duplicates kept.
//!
//! Each object or array is one vector (strings cost no allocation), and string bodies
//! are scanned sixteen bytes to a branch.

use std::borrow::Cow;

use crate::extract::recycle;
use crate::next_keys::{After, NextKeys};
use crate::raw_keys::RawKeyIndex;
use crate::record::{JsonNumber, JsonValue};
use crate::types::AttributeDef;

/// The deepest nesting read here (serde_json refuses past 128; deeper input goes to it).
const MAX_DEPTH: u32 = 64;

/// Parses `text` if it lies within the subset, or returns `None` (see the module).
pub(crate) fn parse_direct(text: &str) -> Option<JsonValue<'_>> {
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
    };
    parser.skip_whitespace();
    let value = parser.value(0)?;
    parser.skip_whitespace();
    (parser.pos == parser.bytes.len()).then_some(value)
}

/// The members of a record and the text of its `now`, if `text` is an envelope of the
/// common shape within the subset: an object with a `record` object and optionally a
/// `now` string, each once, in either order. `None` for anything else, which the
/// caller reads as a whole line ([`parse_direct`] or serde_json) as before; whenever
/// this returns the members, that reading gives the same envelope.
///
/// The envelope's own object is not built: its two members go straight to the caller.
#[allow(clippy::type_complexity)] // the members' type is the record's
pub(crate) fn parse_envelope_direct(
    text: &str,
) -> Option<(Option<Cow<'_, str>>, Vec<(Cow<'_, str>, JsonValue<'_>)>)> {
    // Depth as in `parse_direct`: the record is an object within an object.
    read_envelope(text, |parser| match parser.object(2)? {
        JsonValue::Object(fields) => Some(fields),
        _ => None,
    })
}

/// An envelope of the common shape (see [`parse_envelope_direct`]), its record's
/// object (at `{`) read by `read_record`; `now`'s text and what that gives.
#[allow(clippy::type_complexity)] // `now`, if given, and the record as read
fn read_envelope<'t, R>(
    text: &'t str,
    mut read_record: impl FnMut(&mut Parser<'t>) -> Option<R>,
) -> Option<(Option<Cow<'t, str>>, R)> {
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
    };
    parser.skip_whitespace();
    if parser.peek()? != b'{' {
        return None;
    }
    parser.pos += 1;
    let mut now = None;
    let mut record = None;
    loop {
        parser.skip_whitespace();
        let key = parser.member_key()?;
        match (key.as_ref(), parser.peek()?) {
            ("now", b'"') if now.is_none() => now = Some(parser.string()?),
            ("record", b'{') if record.is_none() => record = Some(read_record(&mut parser)?),
            _ => return None,
        }
        parser.skip_whitespace();
        match parser.peek()? {
            b',' => parser.pos += 1,
            b'}' => break,
            _ => return None,
        }
    }
    parser.pos += 1;
    parser.skip_whitespace();
    (parser.pos == parser.bytes.len()).then_some((now, record?))
}

/// One attribute's value in a line read by [`scan_envelope_into`]: a scalar as it is,
/// or where it sits in the arena (any other value, or the elements of an array).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Found<'t> {
    /// The record has no member with the attribute's raw key.
    Missing,
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// An integer (the subset has no other numbers).
    Number(JsonNumber),
    /// A string without escapes.
    Str(&'t str),
    /// Any other value, at this position of the arena.
    At(u32),
    /// An array: its elements are the arena's values in `start..end`.
    List(u32, u32),
    /// An array of strings without escapes: the arena's strings in `start..end`.
    Strings(u32, u32),
}

/// Where [`scan_envelope_into`] keeps the values it does not hold in [`Found`]:
/// arrays of plain strings (the usual list, kept as the strings alone) and every
/// other value. Reused from line to line ([`ScanArena::recycle`]).
#[derive(Debug, Default)]
pub(crate) struct ScanArena<'t> {
    pub(crate) values: Vec<JsonValue<'t>>,
    pub(crate) strings: Vec<&'t str>,
}

impl ScanArena<'_> {
    /// The arena emptied, for text of another lifetime, its allocations kept.
    #[inline]
    pub(crate) fn recycle<'u>(self) -> ScanArena<'u> {
        ScanArena {
            values: recycle(self.values),
            strings: recycle(self.strings),
        }
    }
}

/// The text of `now` of an envelope line of the common shape (as
/// [`parse_envelope_direct`] reads one), with the value of each of the record's
/// members that an attribute of `attrs` reads put in `arena` and its place in
/// `found` (indexed by attribute; the last member of a raw key wins, as in a lookup).
/// Members no attribute reads are checked and dropped: no record is built. Keys are
/// recognised by `next_keys`' guess where it holds, looked up in `index` (and the
/// guess learnt) where not.
///
/// `None` wherever [`parse_envelope_direct`] gives `None`, and for registries of more
/// attributes than `found` holds; `arena` and `found` are then meaningless.
#[allow(clippy::type_complexity)] // `now`, if given
pub(crate) fn scan_envelope_into<'t>(
    text: &'t str,
    attrs: &[AttributeDef],
    index: &RawKeyIndex,
    next_keys: &mut NextKeys,
    arena: &mut ScanArena<'t>,
    found: &mut [Found<'t>],
) -> Option<Option<Cow<'t, str>>> {
    if attrs.len() > found.len() {
        return None;
    }
    let (now, ()) = read_envelope(text, |parser| {
        parser.record_members(attrs, (index, &mut *next_keys), arena, found)
    })?;
    Some(now)
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

/// Whether `byte` ends a plain run of string body: `"`, `\\` or a control character.
#[inline]
pub(crate) fn is_special(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

/// The position of the first of the eight bytes of `word` (little-endian) that
/// [`is_special`], if any. Each of the three tests below can also flag a byte above a
/// flagged one (a borrow), never one below it, so the lowest flag is exact.
#[inline]
pub(crate) fn first_special_byte(word: u64) -> Option<usize> {
    let flags = special_flags(word);
    (flags != 0).then(|| flags.trailing_zeros() as usize / 8)
}

/// [`first_special_byte`] of the sixteen bytes of `low` then `high`, with one branch
/// (whether any is special) instead of one a word: most strings of a record end
/// within their first sixteen bytes, so the scan's exit is predicted.
#[inline]
pub(crate) fn first_special_byte_16(low: u64, high: u64) -> Option<usize> {
    // `high`'s flags count only where `low` has none, where they are exact too.
    let flags = u128::from(special_flags(low)) | u128::from(special_flags(high)) << 64;
    (flags != 0).then(|| flags.trailing_zeros() as usize / 8)
}

/// The high bit of each byte of `word` that [`is_special`], and maybe of some bytes
/// above the lowest such byte (see [`first_special_byte`]).
#[inline]
fn special_flags(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_in = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let quote = zero_in(word ^ (ONES * u64::from(b'"')));
    let backslash = zero_in(word ^ (ONES * u64::from(b'\\')));
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    quote | backslash | control
}

impl<'a> Parser<'a> {
    /// Runs `read` on a copy of the parser and takes the copy's position back. A
    /// parser whose address is never passed on can live in registers: the scans call
    /// the functions that are not inlined (nested values, escapes) through this, so
    /// that their position is not stored to and reloaded from memory at every byte.
    #[inline(always)]
    fn detached<R>(&mut self, read: impl FnOnce(&mut Parser<'a>) -> R) -> R {
        let mut copy = Parser {
            text: self.text,
            bytes: self.bytes,
            pos: self.pos,
        };
        let result = read(&mut copy);
        self.pos = copy.pos;
        result
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    #[inline]
    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.pos += 1;
        }
    }

    /// At the `{` or `[` that opens an object or array: past it and the white space
    /// after it, and `Some(true)` (past its `close` too) if it is empty.
    #[inline(always)]
    fn open(&mut self, close: u8) -> Option<bool> {
        self.pos += 1;
        self.skip_whitespace();
        if self.peek()? == close {
            self.pos += 1;
            return Some(true);
        }
        Some(false)
    }

    /// After an item of an object or array: `Some(true)` past its `close`, `Some(false)`
    /// past a `,` and the white space after it, `None` at anything else.
    #[inline]
    fn item_end(&mut self, close: u8) -> Option<bool> {
        self.skip_whitespace();
        match self.peek()? {
            b',' => {
                self.pos += 1;
                self.skip_whitespace();
                Some(false)
            }
            b if b == close => {
                self.pos += 1;
                Some(true)
            }
            _ => None,
        }
    }

    fn value(&mut self, depth: u32) -> Option<JsonValue<'a>> {
        match self.peek()? {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => self.string().map(JsonValue::String),
            b't' => self.literal(b"true", JsonValue::Bool(true)),
            b'f' => self.literal(b"false", JsonValue::Bool(false)),
            b'n' => self.literal(b"null", JsonValue::Null),
            b'-' | b'0'..=b'9' => self.integer(),
            _ => None,
        }
    }

    #[inline]
    fn literal<T>(&mut self, word: &[u8], value: T) -> Option<T> {
        if self.bytes[self.pos..].starts_with(word) {
            self.pos += word.len();
            Some(value)
        } else {
            None
        }
    }

    /// An integer: `-?(0|[1-9][0-9]*)` that fits in 64 bits and is not `-0`, followed by
    /// neither a fraction nor an exponent.
    fn integer(&mut self) -> Option<JsonValue<'a>> {
        self.number().map(JsonValue::Number)
    }

    /// The number of [`Parser::integer`].
    #[inline(always)]
    fn number(&mut self) -> Option<JsonNumber> {
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
        }
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        let digits = &self.bytes[start..self.pos];
        if digits.is_empty() || (digits.len() > 1 && digits[0] == b'0') || digits.len() > 20 {
            return None;
        }
        if let Some(b'.' | b'e' | b'E') = self.peek() {
            return None;
        }
        // Nineteen digits never overflow 64 bits, so only a twentieth is checked (and
        // the digits are found first: the value then folds in registers).
        let (head, twentieth) = digits.split_at(digits.len().min(19));
        let mut value = head
            .iter()
            .fold(0u64, |value, &digit| value * 10 + u64::from(digit - b'0'));
        if let [digit] = twentieth {
            value = value
                .checked_mul(10)?
                .checked_add(u64::from(digit - b'0'))?;
        }
        if !negative {
            Some(JsonNumber::PosInt(value))
        } else if value == 0 || value > 1 << 63 {
            None
        } else {
            Some(JsonNumber::NegInt((value as i64).wrapping_neg()))
        }
    }

    /// An object member's key and its colon, with the white space after it;
    /// `None` unless a string key and a colon are there.
    #[inline(always)]
    fn member_key(&mut self) -> Option<Cow<'a, str>> {
        if self.peek()? != b'"' {
            return None;
        }
        let key = self.string()?;
        self.colon()?;
        Some(key)
    }

    /// The colon after a member's key, with the white space around it.
    #[inline(always)]
    fn colon(&mut self) -> Option<()> {
        self.skip_whitespace();
        if self.peek()? != b':' {
            return None;
        }
        self.pos += 1;
        self.skip_whitespace();
        Some(())
    }

    /// A string at `"`: borrowed when it has no escapes, owned when its escapes are all
    /// of the one-character kind (`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`).
    #[inline(always)]
    fn string(&mut self) -> Option<Cow<'a, str>> {
        match self.string_body()? {
            Ok(text) => Some(Cow::Borrowed(text)),
            Err(start) => self.detached(|p| p.escaped_string(start)),
        }
    }

    /// A string at `"` up to its first escape: `Ok` with its text, past its closing
    /// quote, if it has none; `Err` with where its body starts, at the escape's
    /// backslash, if it has one (for [`Parser::escaped_string`]); `None` at a control
    /// character or the end of the text.
    ///
    /// Inlined: a record has some thirty strings, most of them a word or two long, and
    /// the call cost about a fifth of reading one (escapes go to a function of their own).
    #[inline(always)]
    fn string_body(&mut self) -> Option<Result<&'a str, usize>> {
        self.pos += 1;
        let start = self.pos;
        loop {
            if let Some(chunk) = self.bytes.get(self.pos..self.pos + 16) {
                let (low, high) = chunk.split_at(8);
                let low = u64::from_le_bytes(low.try_into().expect("eight bytes"));
                let high = u64::from_le_bytes(high.try_into().expect("eight bytes"));
                match first_special_byte_16(low, high) {
                    None => {
                        self.pos += 16;
                        continue;
                    }
                    Some(offset) => self.pos += offset,
                }
            } else {
                while !is_special(*self.bytes.get(self.pos)?) {
                    self.pos += 1;
                }
            }
            return match self.bytes[self.pos] {
                b'"' => {
                    let s = &self.text[start..self.pos];
                    self.pos += 1;
                    Some(Ok(s))
                }
                b'\\' => Some(Err(start)),
                _ => None,
            };
        }
    }

    fn escaped_string(&mut self, start: usize) -> Option<Cow<'a, str>> {
        let mut owned = String::with_capacity(self.pos - start + 16);
        let mut run = start;
        loop {
            let b = *self.bytes.get(self.pos)?;
            match b {
                b'"' => {
                    owned.push_str(&self.text[run..self.pos]);
                    self.pos += 1;
                    return Some(Cow::Owned(owned));
                }
                b'\\' => {
                    owned.push_str(&self.text[run..self.pos]);
                    let unescaped = match *self.bytes.get(self.pos + 1)? {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        _ => return None,
                    };
                    owned.push(unescaped);
                    self.pos += 2;
                    run = self.pos;
                }
                0..=0x1f => return None,
                _ => self.pos += 1,
            }
        }
    }

    fn object(&mut self, depth: u32) -> Option<JsonValue<'a>> {
        if depth > MAX_DEPTH {
            return None;
        }
        if self.open(b'}')? {
            return Some(JsonValue::Object(Vec::new()));
        }
        let mut fields = Vec::with_capacity(16);
        loop {
            let key = self.member_key()?;
            let value = self.value(depth)?;
            fields.push((key, value));
            if self.item_end(b'}')? {
                return Some(JsonValue::Object(fields));
            }
        }
    }

    /// The record's object at `{`, read as [`Parser::object`] reads it at depth 2 but
    /// with its members' values put where [`scan_envelope_into`] says.
    fn record_members(
        &mut self,
        attrs: &[AttributeDef],
        (index, next_keys): (&RawKeyIndex, &mut NextKeys),
        arena: &mut ScanArena<'a>,
        found: &mut [Found<'a>],
    ) -> Option<()> {
        const DEPTH: u32 = 2;
        if self.open(b'}')? {
            return Some(());
        }
        let mut after = After::START;
        loop {
            let first = match next_keys.guess(after, self.bytes, self.pos) {
                Some((end, first)) => {
                    self.pos = end;
                    self.colon()?;
                    first
                }
                None => {
                    let key = self.member_key()?;
                    let first = index.first(attrs, &key);
                    next_keys.learn(after, &key, first);
                    first
                }
            };
            after = After::key(first);
            match first {
                None => drop(self.detached(|p| p.value(DEPTH))?),
                Some(first) => {
                    // Scalars are kept as they are, without building a value.
                    let place = match self.peek()? {
                        b'"' => match self.string()? {
                            Cow::Borrowed(text) => Found::Str(text),
                            owned => {
                                arena.values.push(JsonValue::String(owned));
                                Found::At(u32::try_from(arena.values.len() - 1).ok()?)
                            }
                        },
                        b't' => self.literal(b"true", Found::Bool(true))?,
                        b'f' => self.literal(b"false", Found::Bool(false))?,
                        b'n' => self.literal(b"null", Found::Null)?,
                        b'-' | b'0'..=b'9' => Found::Number(self.number()?),
                        b'[' => {
                            let (at, start) = (self.pos, arena.strings.len());
                            if self.strings_into(&mut arena.strings).is_some() {
                                let end = arena.strings.len();
                                Found::Strings(u32::try_from(start).ok()?, u32::try_from(end).ok()?)
                            } else {
                                // Any other array (or a syntax error), read again.
                                self.pos = at;
                                arena.strings.truncate(start);
                                let start = arena.values.len();
                                self.detached(|p| p.array_into(DEPTH + 1, &mut arena.values))?;
                                let end = arena.values.len();
                                Found::List(u32::try_from(start).ok()?, u32::try_from(end).ok()?)
                            }
                        }
                        _ => {
                            arena.values.push(self.detached(|p| p.value(DEPTH))?);
                            Found::At(u32::try_from(arena.values.len() - 1).ok()?)
                        }
                    };
                    let mut reader = Some(first);
                    while let Some(a) = reader {
                        found[a] = place;
                        reader = index.next_same(a);
                    }
                }
            }
            if self.item_end(b'}')? {
                return Some(());
            }
        }
    }

    /// An array at `[` whose elements are all strings without escapes, as
    /// [`Parser::array`] reads it, its elements pushed on `items`; `None` for any
    /// other array and at a syntax error (the position and `items` are then left
    /// where it stopped). Each string is pushed as two words straight from the scan:
    /// pushed as a [`JsonValue`], it went through the stack and its reload stalled.
    #[inline(always)]
    fn strings_into(&mut self, items: &mut Vec<&'a str>) -> Option<()> {
        if self.open(b']')? {
            return Some(());
        }
        loop {
            if self.peek()? != b'"' {
                return None;
            }
            items.push(self.string_body()?.ok()?);
            if self.item_end(b']')? {
                return Some(());
            }
        }
    }

    /// An array at `[`, as [`Parser::array`] reads it, its elements pushed on `items`.
    fn array_into(&mut self, depth: u32, items: &mut Vec<JsonValue<'a>>) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        if self.open(b']')? {
            return Some(());
        }
        loop {
            // Strings, the usual element, are read here rather than through `value`.
            if self.peek()? == b'"' {
                let text = self.string()?;
                items.push(JsonValue::String(text));
            } else {
                items.push(self.detached(|p| p.value(depth))?);
            }
            if self.item_end(b']')? {
                return Some(());
            }
        }
    }

    fn array(&mut self, depth: u32) -> Option<JsonValue<'a>> {
        let mut items = Vec::with_capacity(8);
        self.array_into(depth, &mut items)?;
        Some(JsonValue::Array(items))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What serde_json gives for `text` into our values, or `None` on its error.
    fn by_serde(text: &str) -> Option<JsonValue<'_>> {
        serde_json::from_str(text).ok()
    }

    #[allow(clippy::ptr_arg)] // the variant is what is compared
    fn same_cow(a: &Cow<'_, str>, b: &Cow<'_, str>) -> bool {
        matches!(a, Cow::Borrowed(_)) == matches!(b, Cow::Borrowed(_))
    }

    fn same_borrowing(a: &JsonValue<'_>, b: &JsonValue<'_>) -> bool {
        match (a, b) {
            (JsonValue::String(x), JsonValue::String(y)) => same_cow(x, y),
            (JsonValue::Array(x), JsonValue::Array(y)) => {
                x.iter().zip(y).all(|(x, y)| same_borrowing(x, y))
            }
            (JsonValue::Object(x), JsonValue::Object(y)) => x
                .iter()
                .zip(y)
                .all(|(x, y)| same_cow(&x.0, &y.0) && same_borrowing(&x.1, &y.1)),
            _ => true,
        }
    }

    /// Every value read here is the one serde_json reads, string borrowing included.
    fn check(text: &str) {
        if let Some(direct) = parse_direct(text) {
            let serde = by_serde(text);
            assert_eq!(Some(&direct), serde.as_ref(), "{text:?}");
            assert!(
                same_borrowing(&direct, &serde.unwrap()),
                "borrowing differs: {text:?}"
            );
        }
    }

    #[test]
    fn the_subset_is_read_as_serde_json_reads_it() {
        for text in [
            r#"{"a": 1, "b": -2, "c": [true, false, null], "d": {"e": "f"}}"#,
            r#" {"k":1,"k":2} "#,
            r#"{"s": "a\"b\\c\/d\b\f\n\r\t"}"#,
            r#"{"u": "é ☃ 😀"}"#,
            r#"{"n": 18446744073709551615, "m": -9223372036854775808}"#,
            r#"{"n": 9999999999999999999, "m": 10000000000000000000, "k": -1}"#,
            "{}",
            "[]",
            r#"[{}, [], "", 0]"#,
            "\t\r\n{\"a\"\t:\n[ 1 , 2 ]\r}\n",
        ] {
            assert!(parse_direct(text).is_some(), "{text:?}");
            check(text);
        }
    }

    #[test]
    fn anything_else_is_left_to_serde_json() {
        for text in [
            "",
            " ",
            "{",
            "}",
            r#"{"a": 1,}"#,
            r#"[1,]"#,
            r#"{"a" 1}"#,
            r#"{a: 1}"#,
            r#"{"a": 1} x"#,
            r#"{"a": 1}{}"#,
            r#"{"a": 01}"#,
            r#"{"a": -}"#,
            r#"{"a": -0}"#,
            r#"{"a": 1.5}"#,
            r#"{"a": 1e3}"#,
            r#"{"a": 18446744073709551616}"#,
            r#"{"a": 99999999999999999999}"#,
            r#"{"a": 100000000000000000000}"#,
            r#"{"a": 00}"#,
            r#"{"a": -9223372036854775809}"#,
            r#"{"a": "\u0041"}"#,
            r#"{"a": "\x"}"#,
            "{\"a\": \"tab\there\"}",
            r#"{"a": tru}"#,
            r#"{"a": nul}"#,
            r#"{"a": "open}"#,
            "{\"a\": 1}\u{a0}",
        ] {
            assert!(parse_direct(text).is_none(), "{text:?}");
        }
        let deep = format!("{}{}", "[".repeat(65), "]".repeat(65));
        assert!(parse_direct(&deep).is_none());
        let shallow = format!("{}{}", "[".repeat(64), "]".repeat(64));
        check(&shallow);
        assert!(parse_direct(&shallow).is_some());
    }

    #[test]
    fn the_first_special_byte_is_found_in_every_position() {
        let alphabet = [
            b'a', b' ', 0x7f, 0x80, 0xc3, 0xff, b'"', b'\\', 0x00, 0x1f, 0x20, b'!',
        ];
        for byte in 0..=255u8 {
            for second in alphabet {
                for position in 0..8 {
                    for later in position..8 {
                        let mut word = [b'a'; 8];
                        word[later] = second;
                        word[position] = byte;
                        let expected = word.iter().position(|&b| is_special(b));
                        assert_eq!(
                            first_special_byte(u64::from_le_bytes(word)),
                            expected,
                            "{word:x?}"
                        );
                    }
                }
            }
        }
    }

    /// The corpus, and every line of it cut short, with one byte removed, or with one of
    /// a few bytes written over one of its bytes: wherever this parser reads a value,
    /// it is serde_json's.
    #[test]
    fn damaged_corpus_lines_agree_with_serde_json() {
        let corpus = include_str!("../../../tests/data/tao_processor/corpus.jsonl");
        let mut read = 0;
        for line in corpus.lines() {
            assert!(
                parse_direct(line).is_some() || line.contains("\\u"),
                "{line}"
            );
            check(line);
            let bytes = line.as_bytes();
            for cut in (0..bytes.len()).step_by(7) {
                let Ok(text) = std::str::from_utf8(&bytes[..cut]) else {
                    continue;
                };
                check(text);
                let mut removed = bytes[..cut].to_vec();
                removed.extend_from_slice(&bytes[cut + 1..]);
                if let Ok(text) = std::str::from_utf8(&removed) {
                    check(text);
                }
                for b in [b'"', b'\\', b',', b'0', b'-', b'.', b'}', b']', b' ', 0x01] {
                    let mut changed = bytes.to_vec();
                    changed[cut] = b;
                    if let Ok(text) = std::str::from_utf8(&changed) {
                        read += usize::from(parse_direct(text).is_some());
                        check(text);
                    }
                }
            }
        }
        assert!(read > 1000, "only {read} damaged lines were read here");
    }

    /// Wherever the envelope reader gives members, reading the whole line gives an
    /// object of exactly `now` (if given) and `record`, with the same values.
    fn check_envelope(text: &str) -> bool {
        let Some((now, fields)) = parse_envelope_direct(text) else {
            return false;
        };
        let Some(JsonValue::Object(whole)) = parse_direct(text) else {
            panic!("the whole line is not read: {text:?}");
        };
        let mut expected = vec![(Cow::Borrowed("record"), JsonValue::Object(fields))];
        if let Some(now) = now {
            expected.push((Cow::Borrowed("now"), JsonValue::String(now)));
        }
        let mut whole = whole;
        whole.sort_by(|a, b| b.0.cmp(&a.0));
        assert_eq!(whole, expected, "{text:?}");
        true
    }

    #[test]
    fn envelopes_are_read_as_the_whole_line_reads_them() {
        for text in [
            r#"{"now": "2025-01-13T00:00:05", "record": {"a": 1}}"#,
            r#"{"record": {"a": [1, "x"]}, "now": "t"}"#,
            r#" {"record":{}} "#,
            r#"{"now": "a\"b", "record": {"k": "v\n"}}"#,
        ] {
            assert!(check_envelope(text), "{text:?}");
        }
        for text in [
            r#"{"now": null, "record": {"a": 1}}"#,
            r#"{"now": 5, "record": {}}"#,
            r#"{"now": "t"}"#,
            r#"{"record": {}, "record": {}}"#,
            r#"{"now": "t", "now": "t", "record": {}}"#,
            r#"{"record": {}, "other": 1}"#,
            r#"{"record": []}"#,
            r#"{"record": {}} x"#,
            r#"{"record": {},}"#,
            r#"{"record": {"a": 1.5}}"#,
            "{}",
            "[]",
        ] {
            assert!(parse_envelope_direct(text).is_none(), "{text:?}");
        }
        let corpus = include_str!("../../../tests/data/tao_processor/corpus.jsonl");
        let mut read = 0;
        for line in corpus.lines() {
            let bytes = line.as_bytes();
            for cut in (0..bytes.len()).step_by(5) {
                for b in [b'"', b',', b'{', b'}', b' ', b'0', b'x'] {
                    let mut changed = bytes.to_vec();
                    changed[cut] = b;
                    if let Ok(text) = std::str::from_utf8(&changed) {
                        read += usize::from(check_envelope(text));
                    }
                }
            }
        }
        assert!(read > 1000, "only {read} damaged envelopes were read here");
    }
}
