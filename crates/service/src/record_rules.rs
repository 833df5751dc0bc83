//! What a record and the metric keys it builds must be for the service to take
//! them, the same for every store: each record is judged on itself, so that
//! nothing stored can make a later valid record fail.
//!
//! * An integer attribute (`time_lapsed`) is at most [`MAX_INTEGER_VALUE`] in size
//!   (2^33, about 272 years of seconds; TAO's own test records reach 2^32): a sum
//!   reaches the 64-bit limit only after 2^30 (a billion) records at the bound, so
//!   one huge record can no longer make every later record fail.
//! * A metric key holds no NUL character (PostgreSQL cannot store one, so an SQLite
//!   export holding one could not be imported there) and is at most
//!   [`MAX_KEY_BYTES`] bytes long (far above any key of a real record, far below
//!   what a PostgreSQL index row holds).

use std::fmt;

/// The largest size of an integer attribute's value: 2^33 (about 272 years of
/// seconds).
pub const MAX_INTEGER_VALUE: i64 = 1 << 33;

/// The longest metric key, in bytes.
pub const MAX_KEY_BYTES: usize = 1024;

/// Why a metric key is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyFault {
    /// The key holds a NUL character.
    Nul,
    /// The key is longer than [`MAX_KEY_BYTES`].
    TooLong {
        /// Its length in bytes.
        bytes: usize,
    },
}

impl fmt::Display for KeyFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyFault::Nul => write!(f, "holds a NUL character (no store keeps one)"),
            KeyFault::TooLong { bytes } => write!(
                f,
                "is {bytes} bytes long; a metric key is at most {MAX_KEY_BYTES} bytes"
            ),
        }
    }
}

/// Checks a metric key against the rules every store shares.
pub fn check_key(key: &str) -> Result<(), KeyFault> {
    if key.contains('\0') {
        return Err(KeyFault::Nul);
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(KeyFault::TooLong { bytes: key.len() });
    }
    Ok(())
}

/// A key for a message: control characters escaped, at most 80 characters shown.
pub fn shown_key(key: &str) -> String {
    let mut shown: String = key
        .chars()
        .take(80)
        .flat_map(char::escape_default)
        .collect();
    if key.chars().count() > 80 {
        shown.push_str(&format!("… ({} bytes)", key.len()));
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_with_nul_or_too_long_are_refused_and_named() {
        assert_eq!(check_key("total_action_train_pass"), Ok(()));
        assert_eq!(check_key(&"k".repeat(MAX_KEY_BYTES)), Ok(()));
        assert_eq!(check_key("gpu_\0"), Err(KeyFault::Nul));
        assert_eq!(
            check_key(&"k".repeat(MAX_KEY_BYTES + 1)),
            Err(KeyFault::TooLong {
                bytes: MAX_KEY_BYTES + 1
            })
        );
        assert_eq!(shown_key("a\0b"), "a\\u{0}b");
        assert!(shown_key(&"k".repeat(2000)).ends_with("… (2000 bytes)"));
    }
}
