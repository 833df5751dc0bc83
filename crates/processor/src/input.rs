//! Input lines of the `process` command: a raw record, or `{"now": …, "record": {…}}`.

use crate::error::{RecordError, TimestampError};
use crate::record::{JsonValue, Record};
use crate::time::Timestamp;

/// Why an input line was rejected before processing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LineError {
    /// Not a JSON object.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The envelope's `now` is not a string.
    #[error("key `now`: expected an ISO 8601 string, found {found}")]
    NowType {
        /// What was found.
        found: &'static str,
    },
    /// The envelope's `now` is not an ISO 8601 date-time.
    #[error("key `now`: {0}")]
    Now(#[source] TimestampError),
}

/// One parsed input line.
#[derive(Debug, Clone, PartialEq)]
pub struct InputLine<'a> {
    /// The envelope's `now`, if the line is an envelope that gives one.
    pub now: Option<Timestamp>,
    /// The record.
    pub record: Record<'a>,
}

/// Parses an input line. An object whose only keys are `record` (an object) and
/// optionally `now` (an ISO 8601 string or `null`) is an envelope; any other object is
/// a raw record.
pub fn parse_input_line(text: &str) -> Result<InputLine<'_>, LineError> {
    if let Some((now, fields)) = crate::direct_parse::parse_envelope_direct(text) {
        let now = match now {
            Some(now) => Some(Timestamp::parse_iso(&now).map_err(LineError::Now)?),
            None => None,
        };
        return Ok(InputLine {
            now,
            record: Record::from_fields(fields),
        });
    }
    let record = Record::parse(text)?;
    // One pass over the members: the last `record` and `now` (as lookups take the
    // last of duplicates), and whether any other key is there.
    let mut record_at = None;
    let mut now_at = None;
    for (i, (key, _)) in record.fields().iter().enumerate() {
        match key.as_ref() {
            "record" => record_at = Some(i),
            "now" => now_at = Some(i),
            _ => return Ok(InputLine { now: None, record }),
        }
    }
    let fields = record.fields();
    let Some(record_at) = record_at.filter(|&i| matches!(fields[i].1, JsonValue::Object(_))) else {
        return Ok(InputLine { now: None, record });
    };
    let now = match now_at.map(|i| &fields[i].1) {
        None | Some(JsonValue::Null) => None,
        Some(JsonValue::String(s)) => Some(Timestamp::parse_iso(s).map_err(LineError::Now)?),
        Some(other) => {
            return Err(LineError::NowType {
                found: other.kind(),
            })
        }
    };
    let inner = record.into_fields().swap_remove(record_at).1;
    Ok(InputLine {
        now,
        record: Record::from_json(inner)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_and_raw_records() {
        let line =
            parse_input_line(r#"{"now": "2025-01-13T00:00:05", "record": {"a": 1}}"#).unwrap();
        assert_eq!(line.now.unwrap().to_string(), "2025-01-13T00:00:05");
        assert!(line.record.get("a").is_some());
        let raw = parse_input_line(r#"{"record": {"a": 1}, "action": "train"}"#).unwrap();
        assert!(raw.now.is_none() && raw.record.get("action").is_some());
        let raw = parse_input_line(r#"{"record": "x"}"#).unwrap();
        assert!(raw.record.get("record").is_some());
        assert!(matches!(
            parse_input_line(r#"{"now": 5, "record": {}}"#),
            Err(LineError::NowType { .. })
        ));
        assert!(matches!(
            parse_input_line(r#"{"now": "yesterday", "record": {}}"#),
            Err(LineError::Now(_))
        ));
        assert!(parse_input_line("[]").is_err());
        // Duplicates: the last `record` and the last `now` are the envelope's.
        let line = parse_input_line(
            r#"{"record": {"a": 1}, "now": 5, "now": "2025-01-13T00:00:05", "record": {"b": 2}}"#,
        )
        .unwrap();
        assert_eq!(line.now.unwrap().to_string(), "2025-01-13T00:00:05");
        assert!(line.record.get("b").is_some() && line.record.get("a").is_none());
        let raw = parse_input_line(r#"{"record": {"a": 1}, "record": 3}"#).unwrap();
        assert!(raw.now.is_none() && raw.record.fields().len() == 2);
        let raw = parse_input_line(r#"{"now": "x"}"#).unwrap();
        assert!(raw.now.is_none() && raw.record.get("now").is_some());
    }
}
