//! Label-value escaping of the Prometheus text format and OpenMetrics, the one
//! rule every part that writes a label value follows (the Prometheus plug-in,
//! the metric processor).

/// Escapes `value` for a label value between double quotes: `\` as `\\`, `"` as
/// `\"`, a line feed as `\n`; every other byte stays as it is.
///
/// The escaped text is handed to `push` in pieces, in order (one piece, `value`
/// itself, when nothing needs escaping), so a caller appends it to whatever
/// buffer it writes: `escape_label_value(v, |piece| out.push_str(piece))`.
#[inline]
pub fn escape_label_value(value: &str, mut push: impl FnMut(&str)) {
    let bytes = value.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escaped = match b {
            b'\\' => "\\\\",
            b'"' => "\\\"",
            b'\n' => "\\n",
            _ => continue,
        };
        if start < i {
            // `i` is at an ASCII byte, hence a character boundary.
            push(&value[start..i]);
        }
        push(escaped);
        start = i + 1;
    }
    if start < bytes.len() {
        push(&value[start..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(value: &str) -> String {
        let mut out = String::new();
        escape_label_value(value, |piece| out.push_str(piece));
        out
    }

    #[test]
    fn backslash_quote_and_line_feed_are_escaped() {
        assert_eq!(escaped("a\"b\\c\nd é"), "a\\\"b\\\\c\\nd é");
        assert_eq!(escaped("\\\\"), "\\\\\\\\");
        assert_eq!(escaped("\n"), "\\n");
        assert_eq!(escaped("tab\tand\rcr"), "tab\tand\rcr");
        assert_eq!(escaped(""), "");
    }

    #[test]
    fn a_value_without_escapes_is_one_piece() {
        let mut pieces = Vec::new();
        escape_label_value("gpu-0 ÄÖ", |p| pieces.push(p.to_owned()));
        assert_eq!(pieces, ["gpu-0 ÄÖ"]);
    }
}
