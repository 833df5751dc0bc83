//! Seconds since the epoch as a local date and time, `%Y-%m-%d %H:%M:%S`,
//! the way the views show them (the reader's `Timestamp:` lines, `top`'s and
//! `report`'s headers), from the library's time zone rules
//! ([`nixl_telemetry::local_time`]).

/// `seconds` since the epoch as local `%Y-%m-%d %H:%M:%S` (the C library's
/// time zone rules, so `TZ` applies), or `@<seconds>` when the local date does
/// not fit a four-digit year.
pub fn local_date_time(seconds: u64) -> String {
    let mut out = String::with_capacity(19);
    push_local_date_time(&mut out, seconds);
    out
}

fn push_local_date_time(out: &mut String, seconds: u64) {
    let local = nixl_telemetry::local_time::local_date_time(seconds)
        .filter(|dt| (0..=9999).contains(&dt.year));
    let Some(dt) = local else {
        out.push('@');
        out.push_str(itoa::Buffer::new().format(seconds));
        return;
    };
    // Formatted by hand: once per distinct second (see DateCache).
    let mut digits = [0u8; 19];
    let mut put = |at: usize, value: u32, width: usize| {
        let mut v = value;
        for i in (at..at + width).rev() {
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, dt.year as u32, 4);
    put(5, dt.month, 2);
    put(8, dt.day, 2);
    put(11, dt.hour, 2);
    put(14, dt.minute, 2);
    put(17, dt.second, 2);
    digits[4] = b'-';
    digits[7] = b'-';
    digits[10] = b' ';
    digits[13] = b':';
    digits[16] = b':';
    out.push_str(std::str::from_utf8(&digits).expect("ASCII digits"));
}

/// Remembers the formatted date of the last second seen.
#[derive(Debug, Default)]
pub struct DateCache {
    second: Option<u64>,
    text: String,
}

impl DateCache {
    /// The local date-time text of `seconds`.
    #[inline]
    pub fn get(&mut self, seconds: u64) -> &str {
        if self.second != Some(seconds) {
            self.text.clear();
            push_local_date_time(&mut self.text, seconds);
            self.second = Some(seconds);
        }
        &self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_out_of_range_print_seconds() {
        assert_eq!(local_date_time(u64::MAX / 1_000_000), "@18446744073709");
        assert!(local_date_time(1_749_737_007).starts_with("2025-06-1"));
        // The same as chrono's own formatting (an independent implementation
        // of the zone rules; they agree for every zone but `right/…` ones).
        for s in [
            0u64,
            86_399,
            951_782_400,
            1_749_737_007,
            4_102_444_800,
            253_402_214_400,
        ] {
            use chrono::TimeZone;
            let want = chrono::Local
                .timestamp_opt(s as i64, 0)
                .unwrap()
                .format("%Y-%m-%d %H:%M:%S")
                .to_string();
            assert_eq!(local_date_time(s), want);
        }
    }
}
