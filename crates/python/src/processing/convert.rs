//! Python objects read as the processor's input: records, contexts, datetimes.
//!
//! A dict's entries are taken first, all at once ([`entries`]), so Python
//! code that runs while a record is read (a subclass's conversion) cannot
//! change what is being iterated; every error, one raised by such code
//! included, becomes a `ProcessingError` naming the key (the original
//! exception is its cause).

use std::borrow::Cow;

use nixl_telemetry_processor::{Context, JsonNumber, JsonValue, Record, Timestamp};
use pyo3::exceptions::PyOverflowError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};

use crate::errors::ProcessingError;

/// How deeply lists and dicts may nest in a record value (as deep as the
/// processor's JSON-lines input allows): deeper values, a list or dict that
/// contains itself among them, are refused instead of exhausting the stack.
pub const MAX_NESTING: usize = 128;

/// A `ProcessingError` with `message`.
pub fn processing_error(message: impl Into<String>) -> PyErr {
    ProcessingError::new_err(message.into())
}

/// The name of `value`'s type, for messages.
pub fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".to_owned())
}

/// `err` as a `ProcessingError` whose message starts with `what`: one that is
/// already a `ProcessingError` gets the prefix, any other exception (raised
/// by Python code the reading ran) is named and becomes the cause.
pub fn error_in(py: Python<'_>, what: &str, err: PyErr) -> PyErr {
    if err.is_instance_of::<ProcessingError>(py) {
        return processing_error(format!("{what}: {}", err.value(py)));
    }
    let kind = err
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "an exception".to_owned());
    let wrapped = processing_error(format!("{what}: {kind}: {}", err.value(py)));
    wrapped.set_cause(py, Some(err));
    wrapped
}

/// A dict's entries (a subclass's stored ones, whatever its methods say), taken
/// while no Python code runs: reading them afterwards may run some (a value's
/// conversion), which may change the dict but not this list.
pub fn entries<'py>(dict: &Bound<'py, PyDict>) -> Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    dict.iter().collect()
}

/// The text of a `str` (a subclass's too, without calling its methods).
pub fn text_of(value: &Bound<'_, PyString>, key: &str) -> PyResult<String> {
    value.to_str().map(str::to_owned).map_err(|_| {
        processing_error(format!(
            "key `{key}`: a str that is not valid Unicode (a lone surrogate); accepted: text \
             that can be encoded as UTF-8"
        ))
    })
}

/// How many more levels of lists and dicts a value may open, and the record
/// key it is under (for the error).
#[derive(Clone, Copy)]
struct Nesting<'k> {
    levels: usize,
    outer_key: &'k str,
}

impl Nesting<'_> {
    /// The nesting inside one more list or dict, or the error when no level is left.
    fn one_level_in(self) -> PyResult<Self> {
        match self.levels.checked_sub(1) {
            Some(levels) => Ok(Nesting { levels, ..self }),
            None => Err(processing_error(format!(
                "key `{}`: lists and dicts nested more than {MAX_NESTING} levels deep \
                 (a list or dict that contains itself?); accepted: at most {MAX_NESTING} levels",
                self.outer_key
            ))),
        }
    }
}

/// A value read from Python: its structure, and references to its strings,
/// whose text the processor's records then borrow ([`PyValue::json`]): the
/// references keep the strings (and the UTF-8 form a `str` caches) alive
/// whatever Python code does meanwhile.
pub enum PyValue<'py> {
    /// None, a bool or a number.
    Scalar(JsonValue<'static>),
    /// A string (its text checked to be valid Unicode).
    Text(Bound<'py, PyString>),
    /// A list or tuple.
    Array(Vec<PyValue<'py>>),
    /// A dict with str keys.
    Object(Vec<(Bound<'py, PyString>, PyValue<'py>)>),
}

impl PyValue<'_> {
    /// The value as the processor reads it, borrowing the strings' text.
    pub fn json(&self) -> PyResult<JsonValue<'_>> {
        Ok(match self {
            PyValue::Scalar(value) => value.clone(),
            PyValue::Text(text) => JsonValue::String(Cow::Borrowed(text.to_str()?)),
            PyValue::Array(items) => {
                JsonValue::Array(items.iter().map(PyValue::json).collect::<PyResult<_>>()?)
            }
            PyValue::Object(fields) => JsonValue::Object(
                fields
                    .iter()
                    .map(|(k, v)| Ok((Cow::Borrowed(k.to_str()?), v.json()?)))
                    .collect::<PyResult<_>>()?,
            ),
        })
    }
}

/// Reads a Python value the processor can take: None, bool, int, float, str,
/// list/tuple and dict (str keys), nested at most [`MAX_NESTING`] levels.
pub fn read_value<'py>(value: &Bound<'py, PyAny>, key: &str) -> PyResult<PyValue<'py>> {
    let nesting = Nesting {
        levels: MAX_NESTING,
        outer_key: key,
    };
    read_within(value, key, nesting).map_err(|e| {
        let py = value.py();
        if e.is_instance_of::<ProcessingError>(py) {
            e
        } else {
            error_in(py, &format!("key `{key}`"), e)
        }
    })
}

/// A `str` whose text is valid Unicode (it has a UTF-8 form).
fn checked_text<'py>(text: &Bound<'py, PyString>, key: &str) -> PyResult<Bound<'py, PyString>> {
    text_of(text, key)?;
    Ok(text.clone())
}

fn read_within<'py>(
    value: &Bound<'py, PyAny>,
    key: &str,
    nesting: Nesting<'_>,
) -> PyResult<PyValue<'py>> {
    if value.is_none() {
        return Ok(PyValue::Scalar(JsonValue::Null));
    }
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(PyValue::Text(checked_text(text, key)?));
    }
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(PyValue::Scalar(JsonValue::Bool(b.is_true())));
    }
    if value.is_instance_of::<PyInt>() {
        return Ok(PyValue::Scalar(int_value(value, key)?));
    }
    if value.is_instance_of::<PyFloat>() {
        let f: f64 = value.extract()?;
        if !f.is_finite() {
            return Err(processing_error(format!(
                "key `{key}`: {f} is not a JSON number; accepted: a finite float"
            )));
        }
        return Ok(PyValue::Scalar(JsonValue::Number(JsonNumber::Float(f))));
    }
    if let Ok(list) = value.cast::<PyList>() {
        return read_array(list.iter(), key, nesting);
    }
    if let Ok(tuple) = value.cast::<PyTuple>() {
        return read_array(tuple.iter(), key, nesting);
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        let nesting = nesting.one_level_in()?;
        let entries = entries(dict);
        let mut fields = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            let Ok(k) = k.cast::<PyString>() else {
                return Err(processing_error(format!(
                    "key `{key}`: an object key is {}; accepted: str keys",
                    type_name(&k)
                )));
            };
            let k = checked_text(k, key)?;
            let v = read_within(&v, k.to_str()?, nesting)?;
            fields.push((k, v));
        }
        return Ok(PyValue::Object(fields));
    }
    Err(processing_error(format!(
        "key `{key}`: expected a JSON value (None, bool, int, float, str, list or dict), found {}",
        type_name(value)
    )))
}

/// A list's or tuple's items.
fn read_array<'py>(
    items: impl ExactSizeIterator<Item = Bound<'py, PyAny>>,
    key: &str,
    nesting: Nesting<'_>,
) -> PyResult<PyValue<'py>> {
    let nesting = nesting.one_level_in()?;
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        out.push(read_within(&item, key, nesting)?);
    }
    Ok(PyValue::Array(out))
}

/// An int: a 64-bit one as it is, a larger one as the nearest float (as a
/// JSON reader reads it), one beyond a float's range refused.
fn int_value(value: &Bound<'_, PyAny>, key: &str) -> PyResult<JsonValue<'static>> {
    if let Ok(u) = value.extract::<u64>() {
        return Ok(JsonValue::Number(JsonNumber::PosInt(u)));
    }
    if let Ok(i) = value.extract::<i64>() {
        return Ok(JsonValue::Number(JsonNumber::NegInt(i)));
    }
    match value.extract::<f64>() {
        Ok(f) => Ok(JsonValue::Number(JsonNumber::Float(f))),
        Err(e) if e.is_instance_of::<PyOverflowError>(value.py()) => {
            Err(processing_error(format!(
                "key `{key}`: an int of {} bits is out of range; accepted: an int a float can \
                 hold (a JSON number)",
                value
                    .call_method0(intern!(value.py(), "bit_length"))
                    .and_then(|n| n.extract::<u64>())
                    .unwrap_or(0)
            )))
        }
        Err(e) => Err(e),
    }
}

/// A record read from Python: its str keys (other keys cannot name an
/// attribute and are ignored, as the reference ignores them) and values.
pub struct RawRecord<'py>(Vec<(Bound<'py, PyString>, PyValue<'py>)>);

impl RawRecord<'_> {
    /// The record as the processor reads it, borrowing the strings' text.
    pub fn record(&self) -> PyResult<Record<'_>> {
        let fields = self
            .0
            .iter()
            .map(|(k, v)| Ok((Cow::Borrowed(k.to_str()?), v.json()?)))
            .collect::<PyResult<_>>()?;
        Ok(Record::from_fields(fields))
    }
}

/// Reads a record: a dict.
pub fn read_record<'py>(value: &Bound<'py, PyAny>) -> PyResult<RawRecord<'py>> {
    let Ok(dict) = value.cast::<PyDict>() else {
        return Err(processing_error(format!(
            "the record must be a dict, found {}",
            type_name(value)
        )));
    };
    let entries = entries(dict);
    let mut fields = Vec::with_capacity(entries.len());
    for (k, v) in entries {
        // A key that is not text (or not valid Unicode) names no attribute.
        let Ok(k) = k.cast_into::<PyString>() else {
            continue;
        };
        let Ok(text) = k.to_str() else {
            continue;
        };
        let v = read_value(&v, text)?;
        fields.push((k, v));
    }
    Ok(RawRecord(fields))
}

static DATETIME_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// The type `datetime.datetime`.
fn datetime_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    DATETIME_TYPE
        .get_or_try_init(py, || {
            py.import("datetime")?
                .getattr("datetime")?
                .cast_into::<PyType>()
                .map(Bound::unbind)
                .map_err(PyErr::from)
        })
        .map(|t| t.bind(py))
}

/// A `datetime.datetime` as a processor timestamp: a naive one through its
/// fields, an aware one through `isoformat()` (which carries its offset).
pub fn timestamp_of(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Timestamp> {
    let py = value.py();
    if !value.is_instance(datetime_type(py)?)? {
        return Err(processing_error(format!(
            "{what} must be a datetime.datetime, found {}",
            type_name(value)
        )));
    }
    read_timestamp(value, what).map_err(|e| error_in(py, what, e))
}

fn read_timestamp(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Timestamp> {
    let py = value.py();
    if value.getattr(intern!(py, "tzinfo"))?.is_none() {
        let field =
            |name: &Bound<'_, PyString>| -> PyResult<u32> { value.getattr(name)?.extract() };
        let date = chrono::NaiveDate::from_ymd_opt(
            value.getattr(intern!(py, "year"))?.extract()?,
            field(intern!(py, "month"))?,
            field(intern!(py, "day"))?,
        );
        let time = chrono::NaiveTime::from_hms_micro_opt(
            field(intern!(py, "hour"))?,
            field(intern!(py, "minute"))?,
            field(intern!(py, "second"))?,
            field(intern!(py, "microsecond"))?,
        );
        return match (date, time) {
            (Some(date), Some(time)) => Ok(Timestamp::from_naive(date.and_time(time))),
            _ => Err(processing_error(format!(
                "{what}: its fields name no valid date and time"
            ))),
        };
    }
    let text: String = value.call_method0(intern!(py, "isoformat"))?.extract()?;
    Timestamp::parse_iso(&text).map_err(|e| processing_error(format!("{what}: {e}")))
}

/// The context dict (or None): `now` and `old_now`, both optional datetimes.
pub fn context_of(value: Option<&Bound<'_, PyAny>>) -> PyResult<Context> {
    let mut context = Context::default();
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(context);
    };
    let Ok(dict) = value.cast::<PyDict>() else {
        return Err(processing_error(format!(
            "context must be a dict (with optional `now` and `old_now` datetimes) or None, found {}",
            type_name(value)
        )));
    };
    let py = value.py();
    let get = |key: &str| dict.get_item(key).map_err(|e| error_in(py, "context", e));
    if let Some(now) = get("now")? {
        context.now = Some(timestamp_of(&now, "context['now']")?);
    }
    if let Some(old) = get("old_now")? {
        context.old_now = Some(timestamp_of(&old, "context['old_now']")?);
    }
    Ok(context)
}

/// One item of a `process_many` batch: a record dict (taking `shared`), or a
/// pair `(record, context)` whose context is a dict, None or a `datetime`.
pub fn batch_item<'py>(
    item: &Bound<'py, PyAny>,
    shared: Context,
) -> PyResult<(RawRecord<'py>, Context)> {
    let Ok(pair) = item.cast::<PyTuple>() else {
        return Ok((read_record(item)?, shared));
    };
    if pair.len() != 2 {
        return Err(processing_error(format!(
            "expected a dict or a (record, context) pair, found a tuple of {}",
            pair.len()
        )));
    }
    let record = read_record(&pair.get_item(0)?)?;
    let context = pair.get_item(1)?;
    let context = if context.is_none() || context.is_instance_of::<PyDict>() {
        context_of(Some(&context))?
    } else {
        Context {
            now: Some(timestamp_of(&context, "context")?),
            old_now: None,
        }
    };
    Ok((record, context))
}
