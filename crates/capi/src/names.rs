//! Checks of the names and numbers a C caller passes, and the cutting of
//! messages into the caller's buffer. Everything here works on bytes already
//! read from C; nothing touches a pointer.

use nixl_telemetry::Category;

use crate::status::CapiError;
use crate::{DIRECTION_READ, DIRECTION_WRITE};

const EVENT_NAME_ACCEPTED: &str =
    "a non-empty NUL-terminated UTF-8 string (cut to 31 bytes at a character boundary)";
const AGENT_NAME_ACCEPTED: &str = "a non-empty NUL-terminated UTF-8 string of at most 255 bytes without '/', other than '.' and '..'";
const STATUS_ACCEPTED: &str =
    "a non-empty NUL-terminated UTF-8 status string such as \"NIXL_ERR_BACKEND\"";

/// How much of a bad name an error message shows.
const SHOWN_BYTES: usize = 64;

fn shown(bytes: &[u8]) -> String {
    let cut = &bytes[..bytes.len().min(SHOWN_BYTES)];
    let text = format!("{:?}", String::from_utf8_lossy(cut));
    if bytes.len() > SHOWN_BYTES {
        format!("{text}… ({} bytes)", bytes.len())
    } else {
        text
    }
}

fn checked<'a>(
    what: &'static str,
    accepted: &'static str,
    bytes: Option<&'a [u8]>,
) -> Result<&'a str, CapiError> {
    let Some(bytes) = bytes else {
        return Err(CapiError::Null { what, accepted });
    };
    if bytes.is_empty() {
        return Err(CapiError::InvalidName {
            what,
            shown: shown(bytes),
            reason: "it is empty",
            accepted,
        });
    }
    std::str::from_utf8(bytes).map_err(|e| CapiError::InvalidName {
        what,
        shown: shown(bytes),
        reason: if e.error_len().is_none() {
            "it ends inside a UTF-8 character"
        } else {
            "it is not valid UTF-8"
        },
        accepted,
    })
}

/// An event name (the bytes before its NUL): non-empty UTF-8. Longer than 31
/// bytes is accepted: the event keeps the first 31 bytes at a character boundary.
pub fn event_name(bytes: Option<&[u8]>) -> Result<&str, CapiError> {
    checked("event name", EVENT_NAME_ACCEPTED, bytes)
}

/// An agent name: non-empty UTF-8 here; the collector checks the rest (no `/`,
/// at most 255 bytes…) and names what is wrong.
pub fn agent_name(bytes: Option<&[u8]>) -> Result<&str, CapiError> {
    checked("agent name", AGENT_NAME_ACCEPTED, bytes)
}

/// An error's status string: non-empty UTF-8.
pub fn status_name(bytes: Option<&[u8]>) -> Result<&str, CapiError> {
    checked("status string", STATUS_ACCEPTED, bytes)
}

/// A settings field holding text: NULL or empty is unset, otherwise UTF-8.
pub fn setting_text<'a>(
    field: &'static str,
    bytes: Option<&'a [u8]>,
) -> Result<Option<&'a str>, CapiError> {
    match bytes {
        None | Some([]) => Ok(None),
        Some(bytes) => {
            std::str::from_utf8(bytes)
                .map(Some)
                .map_err(|_| CapiError::InvalidArgument {
                    what: field,
                    value: shown(bytes),
                    accepted: "NULL, or a NUL-terminated UTF-8 string".to_owned(),
                })
        }
    }
}

/// A category number: one of the eight known ones.
#[inline]
pub fn category(number: i32) -> Result<Category, CapiError> {
    let category = Category(number);
    if category.is_known() {
        Ok(category)
    } else {
        Err(CapiError::InvalidCategory(number))
    }
}

/// A transfer direction number.
#[inline]
pub fn direction(number: i32) -> Result<nixl_telemetry::Direction, CapiError> {
    match number {
        DIRECTION_READ => Ok(nixl_telemetry::Direction::Read),
        DIRECTION_WRITE => Ok(nixl_telemetry::Direction::Write),
        _ => Err(CapiError::InvalidArgument {
            what: "direction",
            value: number.to_string(),
            accepted: format!(
                "NIXL_TELEMETRY_DIRECTION_READ ({DIRECTION_READ}) or NIXL_TELEMETRY_DIRECTION_WRITE ({DIRECTION_WRITE})"
            ),
        }),
    }
}

/// The longest prefix of `message` that fits a buffer of `capacity` bytes
/// together with its NUL terminator, cut at a character boundary; `None` when
/// the buffer cannot even hold the terminator.
pub fn fit_message(message: &str, capacity: usize) -> Option<&[u8]> {
    let room = capacity.checked_sub(1)?;
    let mut end = message.len().min(room);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    Some(&message.as_bytes()[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status;

    #[test]
    fn event_names() {
        assert_eq!(
            event_name(Some(b"agent_tx_bytes")).unwrap(),
            "agent_tx_bytes"
        );
        let long = "x".repeat(300);
        assert_eq!(event_name(Some(long.as_bytes())).unwrap(), long);
        for (bad, code, why) in [
            (None, status::ERR_NULL, "NULL"),
            (Some(&b""[..]), status::ERR_INVALID_NAME, "empty"),
            (
                Some(&b"ab\xffcd"[..]),
                status::ERR_INVALID_NAME,
                "not valid UTF-8",
            ),
            (
                Some(&b"ab\xc3"[..]),
                status::ERR_INVALID_NAME,
                "inside a UTF-8 character",
            ),
        ] {
            let err = event_name(bad).unwrap_err();
            assert_eq!(err.status(), code);
            let msg = err.to_string();
            assert!(
                msg.contains("event name") && msg.contains(why) && msg.contains("accepted"),
                "{msg}"
            );
        }
    }

    #[test]
    fn long_bad_names_are_shown_cut() {
        let mut bytes = vec![b'a'; 1000];
        bytes[999] = 0xff;
        let msg = agent_name(Some(&bytes)).unwrap_err().to_string();
        assert!(msg.contains("(1000 bytes)") && msg.len() < 400, "{msg}");
    }

    #[test]
    fn categories_and_directions() {
        for n in 0..8 {
            assert_eq!(category(n).unwrap().0, n);
        }
        for n in [-1, 8, i32::MIN, i32::MAX] {
            assert_eq!(
                category(n).unwrap_err().status(),
                status::ERR_INVALID_CATEGORY
            );
        }
        assert_eq!(direction(0).unwrap(), nixl_telemetry::Direction::Read);
        assert_eq!(direction(1).unwrap(), nixl_telemetry::Direction::Write);
        let err = direction(2).unwrap_err();
        assert_eq!(err.status(), status::ERR_INVALID_ARGUMENT);
        assert!(err.to_string().contains("direction=2"), "{err}");
    }

    #[test]
    fn settings_text() {
        assert_eq!(setting_text("f", None).unwrap(), None);
        assert_eq!(setting_text("f", Some(b"")).unwrap(), None);
        assert_eq!(setting_text("f", Some(b"/tmp")).unwrap(), Some("/tmp"));
        let err = setting_text("settings.ring_directory", Some(b"/tmp/\xfe")).unwrap_err();
        assert!(err.to_string().contains("settings.ring_directory"), "{err}");
    }

    #[test]
    fn messages_fit_their_buffer_at_a_character_boundary() {
        assert_eq!(fit_message("hello", 0), None);
        assert_eq!(fit_message("hello", 1), Some(&b""[..]));
        assert_eq!(fit_message("hello", 4), Some(&b"hel"[..]));
        assert_eq!(fit_message("hello", 100), Some(&b"hello"[..]));
        // "é" is two bytes: a 3-byte buffer holds "a" and the NUL, not half of it.
        assert_eq!(fit_message("aé", 3), Some(&b"a"[..]));
    }
}
