//! Local calendar time by the C library's rules, as NIXL's Python reader
//! prints it: `localtime_r`, so `TZ` (and `/etc/localtime`) mean what they
//! mean to every C program of the host, leap-second (`right/…`) zones and
//! invalid `TZ` values included.

/// A local date and time, to the second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalDateTime {
    /// The year, e.g. 2025.
    pub year: i32,
    /// 1–12.
    pub month: u32,
    /// 1–31.
    pub day: u32,
    /// 0–23.
    pub hour: u32,
    /// 0–59.
    pub minute: u32,
    /// 0–59: a leap second (60 in `right/…` zones) reads as 59, as Python's
    /// `datetime.fromtimestamp` makes it.
    pub second: u32,
}

/// `seconds` since the Unix epoch in local time, or `None` when the C
/// library cannot represent it (the year overflows).
pub fn local_date_time(seconds: u64) -> Option<LocalDateTime> {
    let t = libc::time_t::try_from(seconds).ok()?;
    // SAFETY: `tm` is plain data (integers and, on glibc, a pointer that
    // localtime_r sets); all zeroes is a valid value to be overwritten.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call; localtime_r is the
    // thread-safe form and writes only `tm`.
    let filled = unsafe { libc::localtime_r(&t, &mut tm) };
    if filled.is_null() {
        return None;
    }
    Some(LocalDateTime {
        year: tm.tm_year.checked_add(1900)?,
        month: u32::try_from(tm.tm_mon + 1).ok()?,
        day: u32::try_from(tm.tm_mday).ok()?,
        hour: u32::try_from(tm.tm_hour).ok()?,
        minute: u32::try_from(tm.tm_min).ok()?,
        second: u32::try_from(tm.tm_sec).ok()?.min(59),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_epoch_is_1970_in_utc_and_times_follow() {
        // Whatever the zone, the epoch is 1969-12-31 or 1970-01-01 locally.
        let epoch = local_date_time(0).unwrap();
        assert!(epoch.year == 1969 || epoch.year == 1970, "{epoch:?}");
        let later = local_date_time(1_749_737_007).unwrap();
        assert_eq!(later.year, 2025);
        assert!((1..=12).contains(&later.month) && (1..=31).contains(&later.day));
        assert!(later.hour < 24 && later.minute < 60 && later.second < 60);
    }

    #[test]
    fn a_year_the_c_library_cannot_hold_is_none() {
        assert_eq!(local_date_time(u64::MAX), None);
        assert_eq!(local_date_time(1 << 62), None);
    }
}
