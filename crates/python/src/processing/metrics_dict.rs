//! The caller's metrics dict: read into the processor's map, and the
//! processor's changes written back, all or none.
//!
//! Keys are looked up and written as the reference's `metrics[key]` does: by
//! the metric's text as a plain `str`. A key of another type, or a `str`
//! subclass that hashes or compares unlike a `str` (a lookup by the text does
//! not find it), is not a metric and is left alone; values that are not ints
//! (something a Python builder keeps there) are left alone too, and a
//! built-in builder writing one of those keys is an error.

use std::collections::HashSet;

use nixl_telemetry_processor::{Metrics, LAST_UPDATED};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyString};

use super::convert::{entries, error_in, processing_error, type_name};

/// The dict as the processor's map.
pub struct Loaded {
    /// The int values of the metrics read, and `last_updated`.
    pub metrics: Metrics,
    /// Keys read whose value is not an int.
    pub foreign: HashSet<String>,
    /// The key of each of the map's slots ([`Metrics::values_by_slot`]) as
    /// a `str` to write it with: the dict's own key where it is a plain
    /// `str`, else one made from the text (found as a lookup finds it).
    keys: Vec<Py<PyString>>,
}

impl Loaded {
    fn new() -> Loaded {
        Loaded {
            metrics: Metrics::new(),
            foreign: HashSet::new(),
            keys: Vec::new(),
        }
    }

    /// Takes the value of `key` (a plain `str`; not yet taken).
    fn take(&mut self, key: &Bound<'_, PyString>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let text = key.to_str()?;
        if text == LAST_UPDATED {
            let stamp = last_updated_text(value)?;
            self.metrics.set_last_updated(stamp);
        } else if value.is_instance_of::<PyInt>() {
            let n = value.extract::<i64>().map_err(|_| {
                processing_error(format!(
                    "metrics key `{text}`: expected an int in the signed 64-bit range, found {}",
                    value
                        .repr()
                        .map(|r| r.to_string())
                        .unwrap_or_else(|_| type_name(value))
                ))
            })?;
            self.metrics
                .insert(text, n)
                .map_err(|e| processing_error(format!("metrics key `{text}`: {e}")))?;
            // A key not taken before: the insert made the next slot.
            self.keys.push(key.clone().unbind());
        } else {
            self.foreign.insert(text.to_owned());
        }
        Ok(())
    }

    fn has(&self, key: &str) -> bool {
        self.metrics.get(key).is_some() || self.foreign.contains(key)
    }
}

/// `last_updated`'s value: None, or an ISO 8601 text.
pub fn last_updated_text(value: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    if value.is_none() {
        return Ok(None);
    }
    match value.cast::<PyString>().map(|s| s.to_str()) {
        Ok(Ok(text)) => Ok(Some(text.to_owned())),
        _ => Err(processing_error(format!(
            "metrics key `last_updated`: expected a str (an ISO 8601 date-time), found {}",
            type_name(value)
        ))),
    }
}

/// The value under `key` as the reference finds it (`metrics.get(key)`).
fn lookup<'py>(
    dict: &Bound<'py, PyDict>,
    key: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    dict.get_item(key)
        .map_err(|e| error_in(dict.py(), &format!("metrics key `{key}`: looking it up"), e))
}

/// The whole dict.
pub fn load_all(dict: &Bound<'_, PyDict>) -> PyResult<Loaded> {
    let mut loaded = Loaded::new();
    let mut subclass_keys = Vec::new();
    for (k, v) in entries(dict) {
        let Ok(key) = k.cast_into::<PyString>() else {
            continue;
        };
        if key.to_str().is_err() {
            continue;
        }
        if key.is_exact_instance_of::<PyString>() {
            loaded.take(&key, &v)?;
        } else {
            subclass_keys.push(key);
        }
    }
    // A subclass key is the metric's key only if a lookup by the text finds it
    // (and no plain key of that text is there: that one is found first).
    for key in subclass_keys {
        let text = PyString::new(dict.py(), key.to_str()?);
        if loaded.has(text.to_str()?) {
            continue;
        }
        if let Some(value) = lookup(dict, &text)? {
            loaded.take(&text, &value)?;
        }
    }
    Ok(loaded)
}

/// The values of `keys` (those the dict has).
pub fn load_keys<'k>(
    dict: &Bound<'_, PyDict>,
    keys: impl IntoIterator<Item = &'k str>,
) -> PyResult<Loaded> {
    let mut loaded = Loaded::new();
    for key in keys {
        let key = PyString::new(dict.py(), key);
        if let Some(value) = lookup(dict, &key)? {
            loaded.take(&key, &value)?;
        }
    }
    Ok(loaded)
}

/// `last_updated`'s text in the dict, if any.
pub fn last_updated_of(dict: &Bound<'_, PyDict>) -> PyResult<Option<String>> {
    match lookup(dict, &PyString::new(dict.py(), LAST_UPDATED))? {
        Some(value) => last_updated_text(&value),
        None => Ok(None),
    }
}

/// Writes into the dict the metrics whose value differs from `before` (the
/// values by slot when the records were applied) and, with `stamp`,
/// `last_updated`; all or none: when a write fails (Python code a key's
/// comparison runs can raise), the values already written are put back and
/// the keys created removed, and the error names the key.
pub fn write_back(
    dict: &Bound<'_, PyDict>,
    before: &[i64],
    loaded: &mut Loaded,
    stamp: bool,
) -> PyResult<()> {
    let py = dict.py();
    let after = loaded.metrics.values_by_slot();
    // The slots the records created, in the order they were (their keys named).
    if after.len() > loaded.keys.len() {
        let mut created: Vec<(usize, &str)> =
            loaded.metrics.keys_from_slot(loaded.keys.len()).collect();
        created.sort_unstable_by_key(|&(slot, _)| slot);
        if let Some((_, key)) = created.iter().find(|(_, k)| loaded.foreign.contains(*k)) {
            return Err(processing_error(format!(
                "metrics key `{key}`: a built-in builder writes it, but the dict holds a \
                 non-int value there; expected an int"
            )));
        }
        loaded.keys.extend(
            created
                .into_iter()
                .map(|(_, key)| PyString::new(py, key).unbind()),
        );
    }
    let mut writes: Vec<(Bound<'_, PyString>, Bound<'_, PyAny>)> = Vec::new();
    for (slot, (&value, key)) in after.iter().zip(&loaded.keys).enumerate() {
        if before.get(slot) != Some(&value) {
            writes.push((key.bind(py).clone(), value.into_pyobject(py)?.into_any()));
        }
    }
    if stamp {
        if let Some(text) = loaded.metrics.last_updated() {
            writes.push((
                PyString::new(py, LAST_UPDATED),
                PyString::new(py, &text).into_any(),
            ));
        }
    }
    // (key, the value it had) for each write done, to undo them.
    let mut done = Vec::with_capacity(writes.len());
    for (key, value) in writes {
        let written = dict
            .get_item(&key)
            .and_then(|old| dict.set_item(&key, value).map(|()| old));
        match written {
            Ok(old) => done.push((key, old)),
            Err(err) => {
                let restored = undo(dict, done);
                let what = format!(
                    "metrics key `{key}`: writing it into the dict failed ({})",
                    if restored {
                        "the dict is left as it was"
                    } else {
                        "and the dict could not be fully restored"
                    }
                );
                return Err(error_in(py, &what, err));
            }
        }
    }
    Ok(())
}

/// Puts back what `done` changed, last first; whether it all went back.
fn undo<'py>(
    dict: &Bound<'py, PyDict>,
    done: Vec<(Bound<'py, PyString>, Option<Bound<'py, PyAny>>)>,
) -> bool {
    let mut restored = true;
    for (key, old) in done.into_iter().rev() {
        let result = match old {
            Some(value) => dict.set_item(&key, value),
            None => dict.del_item(&key),
        };
        if let Err(err) = result {
            tracing::warn!(key = %key, error = %err, "could not restore a metrics key");
            restored = false;
        }
    }
    restored
}
