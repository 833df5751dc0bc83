//! Numbers for people: `1.23 GB`, `4.5 k`, `512 MiB` — as `top` and
//! `report` show them.

/// `value` with a decimal (SI) prefix and `unit`, three significant digits:
/// `si(1_234_567.0, "B/s")` is `1.23 MB/s`; below 1000 no prefix and no
/// decimals for whole numbers (`999 B/s`, `0.5 B/s`).
pub fn si(value: f64, unit: &str) -> String {
    const PREFIXES: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    if !value.is_finite() {
        return format!("{value} {unit}").trim_end().to_owned();
    }
    let mut v = value.abs();
    let mut at = 0;
    while v >= 999.5 && at + 1 < PREFIXES.len() {
        v /= 1000.0;
        at += 1;
    }
    let sign = if value < 0.0 { "-" } else { "" };
    let digits = if (at == 0 && v.fract() == 0.0) || v >= 99.95 {
        format!("{v:.0}")
    } else if v >= 9.995 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    format!("{sign}{digits} {}{unit}", PREFIXES[at])
        .trim_end()
        .to_owned()
}

/// A byte count with a binary prefix, as memory sizes are usually given:
/// `512 MiB`, `1.5 GiB`, `4096` bytes as `4 KiB`.
pub fn binary_bytes(value: i128) -> String {
    const PREFIXES: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let sign = if value < 0 { "-" } else { "" };
    let mut v = value.unsigned_abs() as f64;
    let mut at = 0;
    while v >= 1024.0 && at + 1 < PREFIXES.len() {
        v /= 1024.0;
        at += 1;
    }
    if at == 0 || v.fract() == 0.0 {
        format!("{sign}{v:.0} {}", PREFIXES[at])
    } else {
        format!("{sign}{v:.1} {}", PREFIXES[at])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_prefixes() {
        assert_eq!(si(0.0, "B/s"), "0 B/s");
        assert_eq!(si(999.0, "B/s"), "999 B/s");
        assert_eq!(si(0.5, "B/s"), "0.50 B/s");
        assert_eq!(si(1000.0, "B/s"), "1.00 kB/s");
        assert_eq!(si(1_234_567.0, "B/s"), "1.23 MB/s");
        assert_eq!(si(45_600.0, ""), "45.6 k");
        assert_eq!(si(5_383_800_000.0, "B/s"), "5.38 GB/s");
        assert_eq!(si(-2500.0, "B"), "-2.50 kB");
        assert_eq!(si(999_999.0, "B"), "1.00 MB");
    }

    #[test]
    fn binary_prefixes() {
        assert_eq!(binary_bytes(0), "0 B");
        assert_eq!(binary_bytes(4096), "4 KiB");
        assert_eq!(binary_bytes(32 << 20), "32 MiB");
        assert_eq!(binary_bytes(1536 << 20), "1.5 GiB");
        assert_eq!(binary_bytes(-(64 << 10)), "-64 KiB");
        assert_eq!(binary_bytes(1000), "1000 B");
    }
}
