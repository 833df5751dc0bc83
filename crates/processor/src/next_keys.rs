//! The key that followed each key in the last record, so that a record's members are
//! mostly recognised by comparing the text at the member with the key expected there,
//! instead of reading the key and looking it up.
//!
//! A producer writes its records with the same code, so their members come in one
//! order with optional members left out: in the fixture corpus the key after a given
//! key is the one that followed it last time for 92 % of members. A guess is taken
//! only when the text is exactly `"key"`, the key read before it; it gives what the
//! lookup in [`RawKeyIndex`](crate::raw_keys::RawKeyIndex) gave for that key, and the
//! registry (so the lookup) never changes for a processor. A wrong guess costs one
//! comparison, then the key is read and looked up as before and remembered.

use std::borrow::Cow;

use crate::hash::tail_words;

/// The longest key remembered: its text is compared as two words ([`tail_words`]).
const LONGEST: usize = 16;

/// For each key read (by the first attribute reading it, or "no attribute"), and for
/// the start of a record, the key read after it last time.
#[derive(Debug, Clone, Default)]
pub(crate) struct NextKeys {
    /// Indexed by [`NextKeys::after`]'s place: 0 for the start of a record, 1 for a key
    /// no attribute reads, 2 + the attribute for one that some attribute reads.
    guesses: Vec<Guess>,
}

/// A remembered key: its length ([`Guess::NONE`] where none), its words, and the
/// first attribute reading it (position + 1; 0 for none).
#[derive(Debug, Clone, Copy)]
struct Guess {
    len: usize,
    words: (u64, u64),
    attr: u32,
}

impl Guess {
    /// No key is remembered here.
    const NONE: usize = usize::MAX;
}

impl Default for Guess {
    fn default() -> Self {
        Guess {
            len: Guess::NONE,
            words: (0, 0),
            attr: 0,
        }
    }
}

/// Where the key read before a member is remembered (see [`NextKeys::guesses`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct After(usize);

impl After {
    /// Before the first member of a record.
    pub(crate) const START: After = After(0);

    /// After a key whose first reading attribute is `attr` (`None`: no attribute).
    #[inline]
    pub(crate) fn key(attr: Option<usize>) -> After {
        After(attr.map_or(1, |a| a + 2))
    }
}

impl NextKeys {
    /// An empty memory for a registry of `attributes` attributes.
    pub(crate) fn new(attributes: usize) -> NextKeys {
        NextKeys {
            guesses: vec![Guess::default(); attributes + 2],
        }
    }

    /// If `text` holds, at `pos`, the key remembered after `after` in quotes: the
    /// position past its closing quote and the key's first attribute.
    #[inline]
    pub(crate) fn guess(
        &self,
        after: After,
        text: &[u8],
        pos: usize,
    ) -> Option<(usize, Option<usize>)> {
        let guess = self.guesses.get(after.0)?;
        let end = pos.checked_add(guess.len)?.checked_add(2)?;
        match text.get(pos..end)? {
            [b'"', body @ .., b'"'] if tail_words(body) == guess.words => {
                Some((end, (guess.attr as usize).checked_sub(1)))
            }
            _ => None,
        }
    }

    /// Remembers `key`, as read, after `after`, with its first attribute. Only a key
    /// read without escapes (borrowed: its text is exactly what stood between the
    /// quotes) of at most [`LONGEST`] bytes is remembered; otherwise the old guess
    /// stays.
    #[inline]
    #[allow(clippy::ptr_arg)] // the variant tells a key read without escapes
    pub(crate) fn learn(&mut self, after: After, key: &Cow<'_, str>, attr: Option<usize>) {
        let Cow::Borrowed(key) = key else {
            return;
        };
        if key.len() > LONGEST {
            return;
        }
        if let Some(slot) = self.guesses.get_mut(after.0) {
            *slot = Guess {
                len: key.len(),
                words: tail_words(key.as_bytes()),
                attr: attr.map_or(0, |a| a as u32 + 1),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_guessed_only_where_its_quoted_text_is() {
        let mut next = NextKeys::new(3);
        assert_eq!(next.guess(After::START, br#""a": 1"#, 0), None);
        next.learn(After::START, &"action".into(), Some(2));
        next.learn(After::key(Some(2)), &"gpu".into(), None);
        next.learn(After::key(None), &"".into(), Some(0));
        // A key read with escapes is not remembered.
        next.learn(After::key(Some(1)), &Cow::Owned("a".into()), None);
        assert_eq!(
            next.guess(After::START, br#"{"action": 1}"#, 1),
            Some((9, Some(2)))
        );
        assert_eq!(
            next.guess(After::key(Some(2)), br#""gpu":"#, 0),
            Some((5, None))
        );
        assert_eq!(
            next.guess(After::key(None), br#""":"#, 0),
            Some((2, Some(0)))
        );
        for miss in [
            &br#""actions": 1"#[..],
            br#""Action": 1"#,
            br#""actio""#,
            br#""action"#,
            br#"action": 1"#,
            br#""act\"on": 1"#,
            b"",
        ] {
            assert_eq!(next.guess(After::START, miss, 0), None, "{miss:?}");
        }
        // Nothing is remembered after the other keys, and a position past the end
        // or a place out of range guesses nothing.
        assert_eq!(next.guess(After::key(Some(0)), br#""gpu""#, 0), None);
        assert_eq!(next.guess(After::key(Some(1)), br#""a""#, 0), None);
        assert_eq!(next.guess(After::START, br#""action""#, usize::MAX), None);
        assert_eq!(next.guess(After::key(Some(9)), br#""action""#, 0), None);
    }

    #[test]
    fn keys_of_every_remembered_length_differ_in_every_byte() {
        let text = "abcdefghijklmnopq";
        let mut next = NextKeys::new(0);
        for n in 0..=LONGEST {
            let key = &text[..n];
            next.learn(After::START, &key.into(), None);
            let quoted = format!("\"{key}\"");
            assert_eq!(
                next.guess(After::START, quoted.as_bytes(), 0),
                Some((n + 2, None))
            );
            for i in 1..=n {
                let mut other = quoted.clone().into_bytes();
                other[i] = b'_';
                assert_eq!(next.guess(After::START, &other, 0), None, "{n} {i}");
            }
        }
        // A longer key is not remembered: the last guess stays.
        next.learn(After::START, &text[..LONGEST + 1].into(), Some(0));
        assert_eq!(
            next.guess(
                After::START,
                format!("\"{}\"", &text[..LONGEST]).as_bytes(),
                0
            ),
            Some((LONGEST + 2, None))
        );
    }
}
