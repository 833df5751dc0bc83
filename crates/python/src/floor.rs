//! A cost floor for the benchmark (`crates/python/bench/bench_python.py`):
//! what merely reading every field of a batch of records costs, with nothing
//! converted, kept or processed.
//!
//! Any implementation of `process_many` must at least look at each record's
//! fields: walk the dict, read each key's text, check each value's type and
//! read its content (an int's value, a str's text, a list's elements). This
//! does exactly that through the C API, with borrowed references and no
//! allocation, and counts what it saw so the work cannot be skipped. It does
//! not read the contexts' datetimes (reading a `datetime` through the stable
//! ABI costs attribute look-ups that are this package's choice, not a floor).

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::text::cached_utf8;

/// Reads a `str`'s text (CPython's cached UTF-8 form on 3.10+) without keeping it.
fn read_text(text: &Bound<'_, PyString>) -> PyResult<u64> {
    let len = match cached_utf8(text) {
        Some(utf8) => utf8?.len(),
        None => text.to_cow()?.len(),
    };
    std::hint::black_box(len);
    Ok(1)
}

/// Reads one value as the processor's conversion would, without keeping
/// anything; returns the number of scalars read.
fn visit_value(value: &Bound<'_, PyAny>) -> PyResult<u64> {
    if value.is_none() || value.is_instance_of::<PyBool>() {
        return Ok(1);
    }
    if let Ok(text) = value.cast_exact::<PyString>() {
        return read_text(text);
    }
    if value.is_instance_of::<PyInt>() {
        // SAFETY: `value` is a live int (checked above) and the GIL is held.
        let n = unsafe { ffi::PyLong_AsLongLong(value.as_ptr()) };
        if n == -1 && PyErr::occurred(value.py()) {
            // Out of the 64-bit range: still one scalar read.
            drop(PyErr::fetch(value.py()));
        }
        return Ok(1);
    }
    if value.is_instance_of::<PyFloat>() {
        std::hint::black_box(value.extract::<f64>()?);
        return Ok(1);
    }
    let mut seen = 0;
    if let Ok(list) = value.cast::<PyList>() {
        for item in list.iter() {
            seen += visit_value(&item)?;
        }
    } else if let Ok(tuple) = value.cast::<PyTuple>() {
        for item in tuple.iter() {
            seen += visit_value(&item)?;
        }
    }
    Ok(seen + 1)
}

/// Walks one record dict with `PyDict_Next` (borrowed references, no
/// allocation); returns the number of scalars read, keys included.
fn visit_record(dict: &Bound<'_, PyDict>) -> PyResult<u64> {
    let py = dict.py();
    let mut seen = 0;
    let mut position: ffi::Py_ssize_t = 0;
    let mut key: *mut ffi::PyObject = std::ptr::null_mut();
    let mut value: *mut ffi::PyObject = std::ptr::null_mut();
    // SAFETY: `dict` is a live dict and the GIL is held; `PyDict_Next` hands out
    // borrowed references valid while the dict is not changed, and nothing this
    // loop calls runs Python code (type checks, cached UTF-8, int and float
    // reads of exact or built-in subtypes without Python-level overrides).
    while unsafe { ffi::PyDict_Next(dict.as_ptr(), &mut position, &mut key, &mut value) } != 0 {
        // SAFETY: `key` and `value` are borrowed references from the live dict.
        let (key, value) = unsafe {
            (
                Bound::from_borrowed_ptr(py, key),
                Bound::from_borrowed_ptr(py, value),
            )
        };
        if let Ok(key) = key.cast::<PyString>() {
            seen += read_text(key)?;
        }
        seen += visit_value(&value)?;
    }
    Ok(seen)
}

/// For the benchmark's floor: reads every field of every record of `items`
/// (record dicts, or `(record, context)` pairs whose context is not read) and
/// returns the number of scalars read. Converts, keeps and processes nothing.
#[pyfunction]
pub fn _visit_records(items: &Bound<'_, PyAny>) -> PyResult<u64> {
    let mut seen = 0;
    for item in items.try_iter()? {
        let item = item?;
        let record = match item.cast::<PyTuple>() {
            Ok(pair) if pair.len() == 2 => pair.get_item(0)?,
            _ => item,
        };
        if let Ok(dict) = record.cast::<PyDict>() {
            seen += visit_record(dict)?;
        }
    }
    Ok(seen)
}
