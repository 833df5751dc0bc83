//! Text helpers shared by the builders: sanitising values for metric names, rendering
//! JSON scalars as text, the GPU identifier, and label-value escaping.

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::record::{JsonNumber, JsonValue};

/// Whether sanitising (lower-case variant) leaves `text` unchanged.
#[inline]
pub(crate) fn is_sanitized_lower(text: &str) -> bool {
    text.bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Byte maps of sanitising ASCII text: letters and digits kept (lower- or upper-cased),
/// everything else `_`.
const fn ascii_map(uppercase: bool) -> [u8; 128] {
    let mut map = [b'_'; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        if c.is_ascii_digit() {
            map[b] = c;
        } else if c.is_ascii_alphabetic() {
            map[b] = if uppercase {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            };
        }
        b += 1;
    }
    map
}

const LOWER_MAP: [u8; 128] = ascii_map(false);
const UPPER_MAP: [u8; 128] = ascii_map(true);

/// Appends `text` sanitised to `out`: every code point that is not an ASCII letter or
/// digit becomes one `_`, and letters are lower-cased (or upper-cased when `uppercase`).
pub fn sanitize_into(out: &mut String, text: &str, uppercase: bool) {
    if text.is_ascii() {
        // Byte by byte through a table into a stack buffer, appended in one piece
        // (pushing `char`s one at a time costs a capacity check and a UTF-8 encode each).
        let map = if uppercase { &UPPER_MAP } else { &LOWER_MAP };
        let mut buf = [0u8; 64];
        for chunk in text.as_bytes().chunks(buf.len()) {
            let dst = &mut buf[..chunk.len()];
            for (d, &b) in dst.iter_mut().zip(chunk) {
                *d = map[usize::from(b & 0x7f)];
            }
            // Only ASCII letters, digits and `_`: always valid UTF-8.
            out.push_str(std::str::from_utf8(dst).unwrap_or_default());
        }
        return;
    }
    out.reserve(text.len());
    for c in text.chars() {
        let mapped = if c.is_ascii_alphanumeric() {
            if uppercase {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            }
        } else {
            '_'
        };
        out.push(mapped);
    }
}

/// Appends an unsigned integer in decimal.
pub fn push_uint(out: &mut String, n: u64) {
    if n < 10 {
        out.push(char::from(b'0' + n as u8));
        return;
    }
    push_uint(out, n / 10);
    out.push(char::from(b'0' + (n % 10) as u8));
}

/// Sanitises text for use in a metric name: each code point that is not an ASCII letter
/// or digit becomes one `_` (so `é` gives one `_`, an emoji one `_`), then the result is
/// lower-cased, or upper-cased when `uppercase` is set. Borrows when nothing changes.
#[must_use]
pub fn sanitize_str(text: &str, uppercase: bool) -> Cow<'_, str> {
    let clean = if uppercase {
        text.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    } else {
        is_sanitized_lower(text)
    };
    if clean {
        Cow::Borrowed(text)
    } else {
        let mut out = String::with_capacity(text.len());
        sanitize_into(&mut out, text, uppercase);
        Cow::Owned(out)
    }
}

/// Sanitises any JSON scalar, lower-case variant: the scalar is first rendered as text
/// the way [`render_scalar`] does (`true` → `True`, `null` → `None`), then sanitised.
/// Returns `None` for arrays and objects, which have no metric-name form.
#[must_use]
pub fn sanitize_field_value(value: &JsonValue<'_>) -> Option<String> {
    sanitize_value(value, false)
}

/// The upper-case variant of [`sanitize_field_value`].
#[must_use]
pub fn sanitize_field_value_upper(value: &JsonValue<'_>) -> Option<String> {
    sanitize_value(value, true)
}

fn sanitize_value(value: &JsonValue<'_>, uppercase: bool) -> Option<String> {
    let mut text = String::new();
    render_scalar(value, &mut text)?;
    Some(sanitize_str(&text, uppercase).into_owned())
}

/// Renders a JSON scalar as the reference renders a value as text: `null` → `None`,
/// booleans → `True` / `False`, integers in decimal, floats in the shortest form that
/// reads back to the same double (`1.0`, `0.0001`, `1e-05`, `1e+16`), strings as they are. Returns `None` for arrays and objects.
pub fn render_scalar(value: &JsonValue<'_>, out: &mut String) -> Option<()> {
    match value {
        JsonValue::Null => out.push_str("None"),
        JsonValue::Bool(true) => out.push_str("True"),
        JsonValue::Bool(false) => out.push_str("False"),
        JsonValue::Number(n) => write_number(*n, out),
        JsonValue::String(s) => out.push_str(s),
        JsonValue::Array(_) | JsonValue::Object(_) => return None,
    }
    Some(())
}

/// Appends a number: integers in decimal, floats in the shortest form that reads back
/// to the same double, as [`render_scalar`] renders them.
pub fn write_number(n: JsonNumber, out: &mut String) {
    match n {
        JsonNumber::PosInt(u) => {
            let _ = write!(out, "{u}");
        }
        JsonNumber::NegInt(i) => {
            let _ = write!(out, "{i}");
        }
        JsonNumber::Float(f) => write_float(f, out),
    }
}

/// Appends a double in the reference's `repr` form: the shortest digits that read back
/// to the same value; positional notation with at least one fractional digit when the
/// decimal exponent is in −5 < e < 16 (`1.0`, `0.0001`, `1000000000000000.0`),
/// otherwise scientific with a signed two-digit-minimum exponent (`1e-05`, `1.5e+16`).
pub(crate) fn write_float(f: f64, out: &mut String) {
    if f.is_nan() {
        out.push_str("nan");
        return;
    }
    if f.is_infinite() {
        out.push_str(if f > 0.0 { "inf" } else { "-inf" });
        return;
    }
    // `{:e}` gives the shortest round-trip digits as `d[.ddd]e<exp>`.
    let mut sci = format!("{:e}", f);
    // When two strings of those digits are equally near the double (its exact value
    // ends in 5 just past them), `{:e}` takes the upper one, while `repr` takes the
    // one the exact value rounds to (ties to even): 562949953421312.25 is
    // `562949953421312.2` there, not `.3`. The correctly rounded string of as many
    // digits, when it also reads back to the double, is that one.
    let digit_count = sci
        .split('e')
        .next()
        .map_or(0, |m| m.bytes().filter(u8::is_ascii_digit).count());
    if digit_count > 0 {
        let rounded = format!("{:.*e}", digit_count - 1, f);
        if rounded != sci && rounded.parse::<f64>() == Ok(f) {
            sci = rounded;
        }
    }
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (negative, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if negative {
        out.push('-');
    }
    if (-5 < exp) && (exp < 16) {
        let point = exp + 1; // digits before the decimal point
        if point <= 0 {
            out.push_str("0.");
            for _ in 0..(-point) {
                out.push('0');
            }
            out.push_str(&digits);
        } else if point as usize >= digits.len() {
            out.push_str(&digits);
            for _ in 0..(point as usize - digits.len()) {
                out.push('0');
            }
            out.push_str(".0");
        } else {
            out.push_str(&digits[..point as usize]);
            out.push('.');
            out.push_str(&digits[point as usize..]);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(
            out,
            "e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.unsigned_abs()
        );
    }
}

/// Reusable buffers for [`write_gpu_identifier`], so that building identifiers
/// allocates nothing once the buffers have grown.
#[derive(Debug, Default)]
pub(crate) struct GpuIdScratch {
    names: String,
    entries: Vec<(u32, u32, u32)>,
}

/// Appends the GPU identifier of a list to `out`, the list given as `(name, count)`
/// pairs (as [`crate::ListValue::groups`] yields them; a plain list is pairs with
/// count 1): the number of GPUs, then for each distinct upper-case sanitised name in
/// code-point order `_<NAME>_<count>` (`3_NVIDIA_A100_2_NVIDIA_V100_1`; an empty list
/// gives `0_`).
pub(crate) fn write_gpu_identifier<'s, I>(gpus: I, out: &mut String, scratch: &mut GpuIdScratch)
where
    I: IntoIterator<Item = (&'s str, u32)>,
{
    scratch.names.clear();
    scratch.entries.clear();
    let mut total = 0u64;
    for (gpu, count) in gpus {
        total += u64::from(count);
        let start = scratch.names.len();
        sanitize_into(&mut scratch.names, gpu, true);
        scratch
            .entries
            .push((start as u32, scratch.names.len() as u32, count));
    }
    // Sorted by name, then equal names (distinct raw names can sanitise alike) merged:
    // n log n in the number of names, where a search per name would be quadratic.
    let names = &scratch.names;
    let name = |(s, e, _): &(u32, u32, u32)| &names[*s as usize..*e as usize];
    scratch
        .entries
        .sort_unstable_by(|a, b| name(a).cmp(name(b)));
    scratch.entries.dedup_by(|later, kept| {
        let equal = name(later) == name(kept);
        if equal {
            kept.2 += later.2;
        }
        equal
    });
    push_uint(out, total);
    out.push('_');
    for (i, (s, e, count)) in scratch.entries.iter().enumerate() {
        if i > 0 {
            out.push('_');
        }
        out.push_str(&names[*s as usize..*e as usize]);
        out.push('_');
        push_uint(out, u64::from(*count));
    }
}

/// The GPU identifier of a list: the number of GPUs, then for each distinct upper-case
/// sanitised name in code-point order `_<NAME>_<count>` (`3_NVIDIA_A100_2_NVIDIA_V100_1`;
/// an empty list gives `0_`).
#[must_use]
pub fn create_gpu_identifier<S: AsRef<str>>(gpus: &[S]) -> String {
    let mut out = String::new();
    write_gpu_identifier(
        gpus.iter().map(|g| (g.as_ref(), 1)),
        &mut out,
        &mut GpuIdScratch::default(),
    );
    out
}

/// Appends a label value escaped as the Prometheus text format requires
/// (the one rule of [`nixl_telemetry_abi::text::escape_label_value`]):
/// backslash → `\\`, double quote → `\"`, newline → `\n`.
#[inline]
pub fn escape_label_value_into(out: &mut String, value: &str) {
    nixl_telemetry_abi::text::escape_label_value(value, |piece| out.push_str(piece));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn float(f: f64) -> String {
        let mut s = String::new();
        write_float(f, &mut s);
        s
    }

    #[test]
    fn floats_render_like_the_reference() {
        let cases = [
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1.5e-7, "1.5e-07"),
            (0.0001, "0.0001"),
            (1e-5, "1e-05"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (1e22, "1e+22"),
            (5e-324, "5e-324"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (12.5, "12.5"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            // Two shortest strings equally near: the one the exact value rounds to
            // (…312.25 → …312.2, ties to even), as `repr` prints.
            (2f64.powi(49) + 0.25, "562949953421312.2"),
            (2f64.powi(49) + 0.75, "562949953421312.8"),
            (-(2f64.powi(49) + 0.25), "-562949953421312.2"),
        ];
        for (f, want) in cases {
            assert_eq!(float(f), want, "{f:e}");
        }
    }

    #[test]
    fn sanitize_borrows_clean_text() {
        assert!(matches!(sanitize_str("resnet_50", false), Cow::Borrowed(_)));
        assert!(matches!(sanitize_str("A_1", true), Cow::Borrowed(_)));
        assert_eq!(sanitize_str("ResNet-50", false), "resnet_50");
    }

    #[test]
    fn integers_and_ascii_fast_path() {
        let mut s = String::new();
        for n in [0u64, 7, 10, 4294967296, u64::MAX] {
            s.clear();
            push_uint(&mut s, n);
            assert_eq!(s, n.to_string());
        }
        let long = "Ab-".repeat(50);
        s.clear();
        sanitize_into(&mut s, &long, true);
        assert_eq!(s, "AB_".repeat(50));
    }

    #[test]
    fn label_values_are_escaped() {
        let mut s = String::new();
        escape_label_value_into(&mut s, "a\\b\"c\nd");
        assert_eq!(s, r#"a\\b\"c\nd"#);
    }
}
