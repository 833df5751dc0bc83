//! Timestamps as the processor reads and writes them: ISO 8601 in, the reference's
//! `isoformat` out (no fraction when the microsecond is 0).

use std::fmt::{self, Write as _};

use chrono::{Datelike, NaiveDate, NaiveDateTime, NaiveTime, Timelike};

use crate::error::TimestampError;

/// A date-time with microsecond precision, naive (local wall time) or with a fixed
/// UTC offset. The processor compares calendar dates of its wall time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timestamp {
    local: NaiveDateTime,
    offset_seconds: Option<i32>,
}

impl Timestamp {
    /// A naive timestamp. Sub-microsecond precision is dropped.
    pub fn from_naive(local: NaiveDateTime) -> Timestamp {
        let nanos = local.nanosecond() / 1000 * 1000;
        let local = local.with_nanosecond(nanos).unwrap_or(local);
        Timestamp {
            local,
            offset_seconds: None,
        }
    }

    /// The current local wall time, naive (what the processor uses when no `now` is given).
    pub fn now_local() -> Timestamp {
        Timestamp::from_naive(chrono::Local::now().naive_local())
    }

    /// The wall time (local to the offset, if any).
    pub fn naive(&self) -> NaiveDateTime {
        self.local
    }

    /// The calendar date of the wall time.
    pub fn date(&self) -> NaiveDate {
        self.local.date()
    }

    /// The UTC offset in seconds, if the timestamp has one.
    pub fn offset_seconds(&self) -> Option<i32> {
        self.offset_seconds
    }

    /// Parses ISO 8601: `YYYY-MM-DD` or `YYYYMMDD`, optionally followed by one separator
    /// character and a time `HH`, `HH:MM`, `HH:MM:SS`, `HHMM` or `HHMMSS` with an optional
    /// fraction (`.` or `,`, digits beyond the sixth dropped), then optionally `Z` or an
    /// offset `±HH`, `±HH:MM`, `±HH:MM:SS`, `±HHMM`. Week and ordinal dates are not accepted.
    pub fn parse_iso(text: &str) -> Result<Timestamp, TimestampError> {
        parse(text).map_err(|reason| TimestampError {
            text: text.to_owned(),
            reason,
        })
    }

    /// Appends the reference's ISO form: `YYYY-MM-DDTHH:MM:SS`, then `.ffffff` only when
    /// the microsecond is not 0, then `+HH:MM` (and `:SS` when needed) for an offset.
    pub fn write_iso(&self, out: &mut String) {
        let d = self.local.date();
        let t = self.local.time();
        let mut buf = *b"0000-00-00T00:00:00.000000";
        put_digits(&mut buf[0..4], d.year().unsigned_abs());
        put_digits(&mut buf[5..7], d.month());
        put_digits(&mut buf[8..10], d.day());
        put_digits(&mut buf[11..13], t.hour());
        put_digits(&mut buf[14..16], t.minute());
        put_digits(&mut buf[17..19], t.second());
        let micros = t.nanosecond() / 1000;
        let len = if micros != 0 {
            put_digits(&mut buf[20..26], micros);
            26
        } else {
            19
        };
        out.push_str(std::str::from_utf8(&buf[..len]).unwrap_or_default());
        if let Some(off) = self.offset_seconds {
            let sign = if off < 0 { '-' } else { '+' };
            let abs = off.unsigned_abs();
            let _ = write!(out, "{sign}{:02}:{:02}", abs / 3600, abs / 60 % 60);
            if abs % 60 != 0 {
                let _ = write!(out, ":{:02}", abs % 60);
            }
        }
    }
}

/// Writes `n` as zero-padded decimal filling `dst`.
fn put_digits(dst: &mut [u8], mut n: u32) {
    for d in dst.iter_mut().rev() {
        *d = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::with_capacity(32);
        self.write_iso(&mut s);
        f.write_str(&s)
    }
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn digits(&mut self, n: usize) -> Option<u32> {
        let value = digits(self.b.get(self.i..self.i + n)?)?;
        self.i += n;
        Some(value)
    }
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }
    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn done(&self) -> bool {
        self.i == self.b.len()
    }
}

/// The common form, `YYYY-MM-DDTHH:MM:SS` with an optional `.ffffff` (what the
/// reference's `isoformat` writes), read at fixed places; `None` for anything else,
/// valid or not, which [`parse_any`] reads.
fn parse_common(text: &str) -> Option<Timestamp> {
    let b: &[u8; 19] = text.as_bytes().get(..19)?.try_into().ok()?;
    let micros = match text.len() {
        19 => 0,
        26 if text.as_bytes()[19] == b'.' => digits(&text.as_bytes()[20..26])?,
        _ => return None,
    };
    if [b[4], b[7], b[10], b[13], b[16]] != *b"--T::" {
        return None;
    }
    let year = digits(&b[0..4]).filter(|&y| y > 0)?;
    let date = NaiveDate::from_ymd_opt(year as i32, digits(&b[5..7])?, digits(&b[8..10])?)?;
    let time = NaiveTime::from_hms_micro_opt(
        digits(&b[11..13])?,
        digits(&b[14..16])?,
        digits(&b[17..19])?,
        micros,
    )?;
    Some(Timestamp {
        local: NaiveDateTime::new(date, time),
        offset_seconds: None,
    })
}

/// The decimal value of a run of ASCII digits, `None` if any byte is not one.
#[inline]
fn digits(b: &[u8]) -> Option<u32> {
    let mut value = 0;
    for &d in b {
        let digit = d.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        value = value * 10 + u32::from(digit);
    }
    Some(value)
}

fn parse(text: &str) -> Result<Timestamp, &'static str> {
    parse_common(text).map_or_else(|| parse_any(text), Ok)
}

/// Every accepted form (see [`Timestamp::parse_iso`]).
fn parse_any(text: &str) -> Result<Timestamp, &'static str> {
    let mut c = Cursor {
        b: text.as_bytes(),
        i: 0,
    };
    let year = c.digits(4).ok_or("expected a four-digit year")?;
    let extended = c.eat(b'-');
    let month = c.digits(2).ok_or("expected a two-digit month")?;
    if extended && !c.eat(b'-') {
        return Err("expected `-` after the month");
    }
    let day = c.digits(2).ok_or("expected a two-digit day")?;
    if year == 0 {
        return Err("year must be 1 or later");
    }
    let date = NaiveDate::from_ymd_opt(year as i32, month, day).ok_or("no such date")?;
    let mut time = (0, 0, 0, 0);
    let mut offset = None;
    if !c.done() {
        // One separator character of any kind.
        let sep_len = text[c.i..].chars().next().map_or(1, char::len_utf8);
        c.i += sep_len;
        let hour = c.digits(2).ok_or("expected a two-digit hour")?;
        let (mut minute, mut second, mut micros) = (0, 0, 0);
        let colon = c.eat(b':');
        if colon || c.peek().is_some_and(|b| b.is_ascii_digit()) {
            minute = c.digits(2).ok_or("expected two-digit minutes")?;
            let has_seconds = if colon {
                c.eat(b':')
            } else {
                c.peek().is_some_and(|b| b.is_ascii_digit())
            };
            if has_seconds {
                second = c.digits(2).ok_or("expected two-digit seconds")?;
                if c.eat(b'.') || c.eat(b',') {
                    let start = c.i;
                    while c.peek().is_some_and(|b| b.is_ascii_digit()) {
                        if c.i - start < 6 {
                            micros = micros * 10 + u32::from(c.b[c.i] - b'0');
                        }
                        c.i += 1;
                    }
                    let n = c.i - start;
                    if n == 0 {
                        return Err("expected digits after the decimal mark");
                    }
                    for _ in n..6 {
                        micros *= 10;
                    }
                }
            }
        }
        if hour > 23 || minute > 59 || second > 59 {
            return Err("time out of range");
        }
        time = (hour, minute, second, micros);
        if c.eat(b'Z') {
            offset = Some(0);
        } else if let Some(sign) = c.peek().filter(|b| *b == b'+' || *b == b'-') {
            c.i += 1;
            let oh = c.digits(2).ok_or("expected a two-digit offset hour")?;
            let mut om = 0;
            let mut os = 0;
            let colon = c.eat(b':');
            if colon || c.peek().is_some_and(|b| b.is_ascii_digit()) {
                om = c.digits(2).ok_or("expected two-digit offset minutes")?;
                if (colon && c.eat(b':'))
                    || (!colon && c.peek().is_some_and(|b| b.is_ascii_digit()))
                {
                    os = c.digits(2).ok_or("expected two-digit offset seconds")?;
                }
            }
            if om > 59 || os > 59 || oh > 23 {
                return Err("offset out of range");
            }
            let secs = (oh * 3600 + om * 60 + os) as i32;
            offset = Some(if sign == b'-' { -secs } else { secs });
        }
        if !c.done() {
            return Err("unexpected text after the time");
        }
    }
    let (h, m, s, us) = time;
    let t = NaiveTime::from_hms_micro_opt(h, m, s, us).ok_or("time out of range")?;
    Ok(Timestamp {
        local: NaiveDateTime::new(date, t),
        offset_seconds: offset,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iso(text: &str) -> String {
        Timestamp::parse_iso(text).unwrap().to_string()
    }

    #[test]
    fn the_common_form_reads_as_the_full_reader_reads_it() {
        let mut texts = Vec::new();
        for base in [
            "2025-01-13T00:00:05.275648",
            "2024-02-29T23:59:59",
            "0001-01-01T00:00:00",
        ] {
            texts.push(base.to_owned());
            for i in 0..base.len() {
                for c in [
                    '0', '1', '2', '3', '6', '9', '-', ':', 'T', '.', ' ', 'x', 'é',
                ] {
                    let mut t: Vec<char> = base.chars().collect();
                    t[i] = c;
                    texts.push(t.into_iter().collect());
                }
            }
            texts.push(format!("{base}0"));
            texts.push(base[..base.len() - 1].to_owned());
        }
        let mut common = 0;
        for text in &texts {
            assert_eq!(parse(text), parse_any(text), "{text}");
            if let Some(fast) = parse_common(text) {
                assert_eq!(Ok(fast), parse_any(text), "{text}");
                common += 1;
            }
        }
        assert!(common > texts.len() / 4, "{common} of {}", texts.len());
    }

    #[test]
    fn accepted_forms_round_trip_like_the_reference() {
        let cases = [
            ("2025-01-13T00:00:05.2756", "2025-01-13T00:00:05.275600"),
            (
                "2025-01-13T00:00:05.123456789",
                "2025-01-13T00:00:05.123456",
            ),
            ("2025-01-13 00:00", "2025-01-13T00:00:00"),
            ("2025-01-13", "2025-01-13T00:00:00"),
            ("2025-01-13T01", "2025-01-13T01:00:00"),
            ("2025-01-13T01:02:03Z", "2025-01-13T01:02:03+00:00"),
            ("2025-01-13T01:02:03+05:30", "2025-01-13T01:02:03+05:30"),
            ("2025-01-13T01:02:03,5", "2025-01-13T01:02:03.500000"),
            ("20250113T010203", "2025-01-13T01:02:03"),
            ("2025-01-13x01:02", "2025-01-13T01:02:00"),
            (
                "2025-01-13T01:02:03.5+0530",
                "2025-01-13T01:02:03.500000+05:30",
            ),
            (
                "2025-01-13T01:02:03-01:00:30",
                "2025-01-13T01:02:03-01:00:30",
            ),
            ("2025-01-13T01:02:03.000000", "2025-01-13T01:02:03"),
        ];
        for (text, want) in cases {
            assert_eq!(iso(text), want, "{text}");
        }
    }

    #[test]
    fn bad_forms_are_rejected() {
        for text in [
            "",
            "2025-01-13T24:00:00",
            "2025-02-30",
            "2025-1-13",
            "2025-01-13T",
            "2025-01-13T01:02:03.",
            "2025-01-13T01:02:03 extra",
            "0000-01-01",
            "2025-W03-1",
        ] {
            assert!(Timestamp::parse_iso(text).is_err(), "{text:?}");
        }
    }
}
