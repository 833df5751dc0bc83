//! Text from a ring made safe for a terminal. Names and agents come from
//! files any local process may write: printed as they are, a newline would
//! break a block's lines and an escape sequence would drive the terminal.
//! Every view that prints ring text as text (the reader's blocks and
//! summary, `top`, `report`'s page) passes it through [`escape_control`];
//! JSON output stays exact.

use std::borrow::Cow;

/// `text` with every control character (U+0000–U+001F, U+007F–U+009F)
/// written as `\xHH` (lower-case hex), for text output.
pub fn escape_control(text: &str) -> Cow<'_, str> {
    let is_control = |c: char| matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}');
    if !text.contains(is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_control(c) {
            out.push_str(&format!("\\x{:02x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_for_text() {
        assert_eq!(escape_control("agent_tx_bytes"), "agent_tx_bytes");
        assert!(matches!(escape_control("é ü"), Cow::Borrowed(_)));
        assert_eq!(
            escape_control("a\nb\u{1b}[2J\t\u{7f}\u{9b}\u{a0}\\"),
            "a\\x0ab\\x1b[2J\\x09\\x7f\\x9b\u{a0}\\"
        );
    }
}
