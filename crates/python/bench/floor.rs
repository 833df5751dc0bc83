//! A cost floor for the benchmark (`bench_python.py`): what merely reading
//! every field of a batch of records costs through PyO3, with nothing
//! converted, kept or processed. Built only into the benchmark's wheel
//! (`--features bench-floor`), never into the shipped one.
//!
//! Any implementation of `process_many` must at least look at each record's
//! fields: walk the dict, read each key's text, check each value's type and
//! read its content (an int's value, a str's text, a list's elements). This
//! does exactly that and counts what it saw so the work cannot be skipped.
//! It does not read the contexts' datetimes.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// Reads one value without keeping anything; returns the number of scalars read.
fn visit_value(value: &Bound<'_, PyAny>) -> PyResult<u64> {
    if value.is_none() || value.is_instance_of::<PyBool>() {
        return Ok(1);
    }
    if let Ok(text) = value.cast::<PyString>() {
        std::hint::black_box(text.to_str()?.len());
        return Ok(1);
    }
    if value.is_instance_of::<PyInt>() {
        std::hint::black_box(value.extract::<i64>().ok());
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

/// Reads every field of every record of `items` (record dicts, or
/// `(record, context)` pairs whose context is not read) and returns the
/// number of scalars read, keys included.
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
            for (key, value) in dict.iter() {
                if let Ok(key) = key.cast::<PyString>() {
                    std::hint::black_box(key.to_str()?.len());
                    seen += 1;
                }
                seen += visit_value(&value)?;
            }
        }
    }
    Ok(seen)
}
