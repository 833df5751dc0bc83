//! Reading a plain `datetime.datetime` without calling into Python.
//!
//! The stable ABI has no accessor for a datetime's fields: reading them costs
//! eight attribute look-ups (or one `__reduce__` call, which builds a bytes
//! object and two tuples). CPython keeps them in the object as ten bytes,
//! `data`, in exactly the form of the pickle state `__reduce__` returns (year
//! high and low byte, month, day, hour, minute, second, microsecond in three
//! bytes), after the object header, the cached hash and a `hastzinfo` byte:
//! a layout unchanged since Python 2.3. It is used only after checking it, once
//! per process, against `__reduce__` on probe datetimes (and the type's size
//! against the bytes read); if the check fails, or for subclasses and aware
//! datetimes, the caller reads the attributes instead.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyTuple, PyType};

/// Offset of `hastzinfo`: after the object header and the cached hash.
const HASTZINFO: usize = std::mem::size_of::<pyo3::ffi::PyObject>() + std::mem::size_of::<isize>();
/// Offset and length of `data`.
const DATA: usize = HASTZINFO + 1;
const DATA_LEN: usize = 10;

static LAYOUT_CHECKED: PyOnceLock<bool> = PyOnceLock::new();

/// Whether the layout was confirmed (checking it now, once per process, if it
/// was not yet: the check makes datetimes and calls `__reduce__`, so a caller
/// that must run no Python code meanwhile calls this first).
pub fn layout_confirmed(datetime_type: &Bound<'_, PyType>) -> bool {
    *LAYOUT_CHECKED.get_or_init(datetime_type.py(), || {
        layout_matches(datetime_type).unwrap_or(false)
    })
}

/// The ten state bytes of `value` if it is a naive `datetime.datetime` of
/// exactly that type (`datetime_type`) and the layout was confirmed; `None`
/// otherwise (read it another way).
pub fn naive_state(
    value: &Bound<'_, PyAny>,
    datetime_type: &Bound<'_, PyType>,
) -> Option<[u8; DATA_LEN]> {
    if !value.get_type().is(datetime_type) {
        return None;
    }
    if !layout_confirmed(datetime_type) {
        return None;
    }
    let (aware, state) = raw_fields(value);
    (aware == 0).then_some(state)
}

/// The `hastzinfo` byte and the `data` bytes of `value`.
fn raw_fields(value: &Bound<'_, PyAny>) -> (u8, [u8; DATA_LEN]) {
    let base = value.as_ptr().cast::<u8>();
    let mut state = [0u8; DATA_LEN];
    // SAFETY: `value`'s exact type is `datetime.datetime` (checked by every
    // caller), whose instances are at least its basic size, which
    // `layout_matches` checked to cover `DATA + DATA_LEN` bytes before any read
    // from a datetime in use; the bytes are plain integers, read while the GIL
    // keeps the (immutable) object alive.
    unsafe {
        std::ptr::copy_nonoverlapping(base.add(DATA), state.as_mut_ptr(), DATA_LEN);
        (base.add(HASTZINFO).read(), state)
    }
}

/// Whether `datetime.datetime` stores its fields where this module reads them:
/// its basic size covers them, and probe datetimes (naive and aware, with
/// every byte of the state in use) read the same as their pickle state.
fn layout_matches(datetime_type: &Bound<'_, PyType>) -> PyResult<bool> {
    let py = datetime_type.py();
    let basic_size: usize = datetime_type.getattr("__basicsize__")?.extract()?;
    if basic_size < DATA + DATA_LEN {
        return Ok(false);
    }
    let timezone = py.import("datetime")?.getattr("timezone")?.getattr("utc")?;
    let probes = [
        datetime_type.call1((2025, 12, 31, 23, 59, 58, 987_654))?,
        datetime_type.call1((1, 2, 3, 4, 5, 6, 7))?,
        datetime_type.call1((9999, 1, 28, 13, 14, 15, 0x0A_0B_0C, timezone))?,
    ];
    for (index, probe) in probes.iter().enumerate() {
        let reduced = probe.call_method0("__reduce__")?;
        let args = reduced.cast::<PyTuple>()?.get_item(1)?;
        let expected = args.cast::<PyTuple>()?.get_item(0)?;
        let expected = expected.cast::<PyBytes>()?.as_bytes().to_vec();
        let (aware, state) = raw_fields(probe);
        if expected != state || aware != u8::from(index == 2) {
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_is_confirmed_and_read() {
        Python::initialize();
        Python::attach(|py| {
            let module = py.import("datetime").unwrap();
            let kind = module.getattr("datetime").unwrap();
            let kind = kind.cast::<PyType>().unwrap();
            assert!(layout_matches(kind).unwrap(), "this interpreter's layout");
            let value = kind.call1((2024, 2, 29, 1, 2, 3, 456_789)).unwrap();
            let state = naive_state(&value, kind).unwrap();
            assert_eq!(state, [0x07, 0xE8, 2, 29, 1, 2, 3, 0x06, 0xF8, 0x55]);
            let utc = module.getattr("timezone").unwrap().getattr("utc").unwrap();
            let aware = kind.call1((2024, 2, 29, 1, 2, 3, 0, utc)).unwrap();
            assert_eq!(naive_state(&aware, kind), None);
            let date = module
                .getattr("date")
                .unwrap()
                .call1((2024, 2, 29))
                .unwrap();
            assert_eq!(naive_state(&date, kind), None);
        });
    }
}
