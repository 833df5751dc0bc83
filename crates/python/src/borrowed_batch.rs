//! A `process_many` batch read with borrowed references, for the input that
//! runs no Python code while it is read.
//!
//! The general conversion (`processing::record_from`) takes a reference to every
//! object it reads and keeps one to each `str` whose text a record borrows
//! ([`crate::text::TextArena`]), because reading an arbitrary input may run
//! Python code (a generator, a datetime subclass's properties, a context dict's
//! odd keys) that could free what was read earlier. Through the stable ABI
//! each of those references is a function call, about 60 a record.
//!
//! This reader takes none. It accepts only input that cannot run Python code
//! while it is read: an exact `list` whose items are exact `dict` records, or
//! exact `(record, context)` tuples whose context is `None` or a plain naive
//! `datetime`; record values of the exact types `None`, `bool`, `int` (64-bit),
//! finite `float`, `str`, and `list`s of those scalars; keys that are exact
//! `str`s (other non-`str` keys are skipped, as the general conversion skips
//! them). Anything else — including every input the general path would reject
//! with an error — makes it give up ([`GiveUp`]) before anything is used, and
//! the caller reads the batch again the general way. Both ways give the same
//! records.
//!
//! The records borrow the objects' text for as long as the list is not
//! changed and no Python code runs: the caller ([`read_batch`]'s contract)
//! runs only Rust over them and drops them before calling back into Python.
//! No other thread can run Python code meanwhile either: the GIL is held
//! throughout (the abi3 wheel loads only on interpreters with a GIL), and none
//! of the C functions called here releases it.

use std::borrow::Cow;

use nixl_telemetry_processor::{Context, JsonNumber, JsonValue, Record};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyType};

use crate::datetime_state::{layout_confirmed, naive_state};
use crate::text::cached_utf8;

/// The input is not one this reader takes: read it the general way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GiveUp;

type Read<T> = Result<T, GiveUp>;

type Fields<'a> = Vec<(Cow<'a, str>, JsonValue<'a>)>;

/// Empty vectors kept from batch to batch, their allocations reused: a batch
/// otherwise allocates and frees a member vector per record and an element
/// vector per list value (hundreds of blocks of one size, more than the
/// allocator's per-thread cache holds).
#[derive(Default)]
pub(crate) struct Spare {
    batch: Vec<(Record<'static>, Context)>,
    fields: Vec<Fields<'static>>,
    arrays: Vec<Vec<JsonValue<'static>>>,
}

impl Spare {
    /// Vectors kept at most, of each kind.
    const MAX_KEPT: usize = 4096;
    /// Members or list elements a kept vector has room for at most (a batch with
    /// a huge record leaves no huge allocation behind).
    const MAX_ROOM: usize = 256;
    /// Items the kept batch vector has room for at most.
    const MAX_BATCH_ROOM: usize = 1 << 16;

    /// Takes the batch's vectors back, emptied.
    pub(crate) fn recycle(&mut self, mut batch: Vec<(Record<'_>, Context)>) {
        for (record, _) in batch.drain(..) {
            let mut fields = record.into_fields();
            for (_, value) in fields.drain(..) {
                if let JsonValue::Array(items) = value {
                    if self.arrays.len() < Self::MAX_KEPT && items.capacity() <= Self::MAX_ROOM {
                        self.arrays.push(emptied(items));
                    }
                }
            }
            if self.fields.len() < Self::MAX_KEPT && fields.capacity() <= Self::MAX_ROOM {
                self.fields.push(emptied(fields));
            }
        }
        if batch.capacity() <= Self::MAX_BATCH_ROOM {
            self.batch = emptied(batch);
        }
    }
}

/// An empty vector of another lifetime, keeping the allocation (an in-place
/// collect: same layout).
fn emptied<T, U>(mut items: Vec<T>) -> Vec<U> {
    items.clear();
    items.into_iter().map(|_| unreachable!("empty")).collect()
}

/// A spare vector (or a new one) with room for `len` items.
fn take<T, U>(spare: &mut Vec<Vec<T>>, len: usize) -> Vec<U> {
    let mut items: Vec<U> = spare.pop().map(emptied).unwrap_or_default();
    items.reserve(len);
    items
}

/// Reads every item of `records` as `(record, context)`, items that are a bare
/// record taking `shared`.
///
/// # Safety
///
/// The records borrow text from objects that `records` holds (through its
/// items) without taking references: until the returned records are dropped,
/// the caller must run no Python code and must not release the GIL (either
/// could change the list or its records and free that text). Running Rust code
/// over them, the processor's included, is fine.
pub(crate) unsafe fn read_batch<'a>(
    records: &'a Bound<'_, PyList>,
    shared: Context,
    datetime_type: &Bound<'_, PyType>,
    spare: &mut Spare,
) -> Read<Vec<(Record<'a>, Context)>> {
    let py = records.py();
    // Confirming the datetime layout (once per process) runs Python code: now,
    // before anything is borrowed. Reading a datetime then runs none.
    layout_confirmed(datetime_type);
    let list = records.as_ptr();
    // SAFETY: `list` is a live list (the GIL is held through `records`).
    let len = unsafe { ffi::PyList_Size(list) };
    let mut batch: Vec<(Record<'a>, Context)> = emptied(std::mem::take(&mut spare.batch));
    batch.reserve(usize::try_from(len).unwrap_or(0));
    for index in 0..len {
        // SAFETY: `index` is in range of the live list; the item is a borrowed
        // reference the list holds while it is not changed (the caller's
        // contract).
        let item = unsafe { ffi::PyList_GetItem(list, index) };
        if item.is_null() {
            return Err(GiveUp);
        }
        // SAFETY: `item` is live (held by the list), the GIL is held.
        let entry = unsafe {
            if ffi::PyDict_CheckExact(item) != 0 {
                (read_record(py, item, spare)?, shared)
            } else if ffi::PyTuple_CheckExact(item) != 0 && ffi::PyTuple_Size(item) == 2 {
                let record = ffi::PyTuple_GetItem(item, 0);
                let context = ffi::PyTuple_GetItem(item, 1);
                if record.is_null() || context.is_null() || ffi::PyDict_CheckExact(record) == 0 {
                    return Err(GiveUp);
                }
                (
                    read_record(py, record, spare)?,
                    read_context(py, context, datetime_type)?,
                )
            } else {
                return Err(GiveUp);
            }
        };
        batch.push(entry);
    }
    Ok(batch)
}

/// A pair's context: `None` (no times) or a plain naive `datetime` (its `now`).
///
/// # Safety
///
/// `value` is a live object, the GIL is held.
unsafe fn read_context(
    py: Python<'_>,
    value: *mut ffi::PyObject,
    datetime_type: &Bound<'_, PyType>,
) -> Read<Context> {
    // SAFETY: `value` is a live object (the caller's contract) and stays so
    // while this borrowed handle is used.
    let value = unsafe { pyo3::Borrowed::from_ptr(py, value) };
    if value.is_none() {
        return Ok(Context::default());
    }
    // Exactly `datetime.datetime`, read in place: no Python code runs.
    let now = naive_state(&value, datetime_type)
        .and_then(crate::processing::timestamp_from_state)
        .ok_or(GiveUp)?;
    Ok(Context {
        now: Some(now),
        old_now: None,
    })
}

/// A record dict's `str`-keyed members, in dict order.
///
/// # Safety
///
/// `dict` is a live exact dict, the GIL is held, and the caller keeps the
/// contract of [`read_batch`] for the lifetime `'a`.
unsafe fn read_record<'a>(
    py: Python<'_>,
    dict: *mut ffi::PyObject,
    spare: &mut Spare,
) -> Read<Record<'a>> {
    // SAFETY: `dict` is a live dict.
    let len = unsafe { ffi::PyDict_Size(dict) };
    let mut fields: Fields<'a> = take(&mut spare.fields, usize::try_from(len).unwrap_or(0));
    let mut position: ffi::Py_ssize_t = 0;
    let mut key: *mut ffi::PyObject = std::ptr::null_mut();
    let mut value: *mut ffi::PyObject = std::ptr::null_mut();
    // SAFETY: `dict` is a live dict; `PyDict_Next` hands out borrowed
    // references valid while the dict is not changed, and nothing this loop
    // calls runs Python code.
    while unsafe { ffi::PyDict_Next(dict, &mut position, &mut key, &mut value) } != 0 {
        // SAFETY: `key` is a live object held by the dict.
        let key = unsafe {
            if ffi::PyUnicode_CheckExact(key) == 0 {
                if ffi::PyUnicode_Check(key) != 0 {
                    // A `str` subclass: the general way.
                    return Err(GiveUp);
                }
                // Not a `str`: it cannot name an attribute (skipped, as the
                // general conversion skips it).
                continue;
            }
            text(py, key)?
        };
        // SAFETY: `value` is a live object held by the dict.
        let value = unsafe { read_value(py, value, spare)? };
        fields.push((key, value));
    }
    Ok(Record::from_fields(fields))
}

/// The text of an exact `str`, borrowed from the object.
///
/// # Safety
///
/// `text` is a live exact `str`, the GIL is held, and the caller keeps the
/// contract of [`read_batch`] for the lifetime `'a`.
#[inline(always)]
unsafe fn text<'a>(py: Python<'_>, text: *mut ffi::PyObject) -> Read<Cow<'a, str>> {
    // SAFETY: `text` is a live `str` (the caller's contract).
    let text = unsafe { pyo3::Borrowed::from_ptr(py, text) };
    let text = text.cast::<pyo3::types::PyString>().map_err(|_| GiveUp)?;
    // On 3.9 (no cached UTF-8) or for text with no UTF-8 form: the general way
    // (which copies, or raises the error).
    let Some(Ok(utf8)) = cached_utf8(&text) else {
        return Err(GiveUp);
    };
    let (data, len) = (utf8.as_ptr(), utf8.len());
    // SAFETY: the bytes belong to the `str` object, which the list holds (through
    // its record) unchanged for `'a` under the caller's contract; they are valid
    // UTF-8 (`cached_utf8`).
    Ok(Cow::Borrowed(unsafe {
        std::str::from_utf8_unchecked(std::slice::from_raw_parts(data, len))
    }))
}

/// A value of one of the exact types this reader takes: a scalar, or a
/// `list` of scalars. Inlined into its callers: the value is then built where
/// it is stored (returned through memory it is written piecewise and read back
/// whole, a store-forwarding stall per value).
///
/// # Safety
///
/// `value` is a live object, the GIL is held, and the caller keeps the
/// contract of [`read_batch`] for the lifetime `'a`.
#[inline(always)]
unsafe fn read_value<'a>(
    py: Python<'_>,
    value: *mut ffi::PyObject,
    spare: &mut Spare,
) -> Read<JsonValue<'a>> {
    // SAFETY: `value` is a live object (the caller's contract).
    unsafe {
        if ffi::PyList_CheckExact(value) != 0 {
            return read_list(py, value, spare);
        }
        read_scalar(py, value)
    }
}

/// A `list` of scalars.
///
/// # Safety
///
/// As [`read_value`], `list` an exact `list`.
#[inline(never)]
unsafe fn read_list<'a>(
    py: Python<'_>,
    list: *mut ffi::PyObject,
    spare: &mut Spare,
) -> Read<JsonValue<'a>> {
    // SAFETY: `list` is a live list (the caller's contract); its items are
    // borrowed references it holds while it is not changed.
    unsafe {
        let len = ffi::PyList_Size(list);
        let mut items: Vec<JsonValue<'a>> =
            take(&mut spare.arrays, usize::try_from(len).unwrap_or(0));
        for index in 0..len {
            let item = ffi::PyList_GetItem(list, index);
            if item.is_null() {
                return Err(GiveUp);
            }
            items.push(read_scalar(py, item)?);
        }
        Ok(JsonValue::Array(items))
    }
}

/// A scalar of one of the exact types this reader takes.
///
/// # Safety
///
/// As [`read_value`].
#[inline(always)]
unsafe fn read_scalar<'a>(py: Python<'_>, value: *mut ffi::PyObject) -> Read<JsonValue<'a>> {
    // SAFETY: `value` is a live object (the caller's contract); the checks
    // compare its type pointer, the reads are C functions of exact built-in
    // types that run no Python code.
    unsafe {
        if value == ffi::Py_None() {
            return Ok(JsonValue::Null);
        }
        if ffi::PyUnicode_CheckExact(value) != 0 {
            return Ok(JsonValue::String(text(py, value)?));
        }
        if value == ffi::Py_True() {
            return Ok(JsonValue::Bool(true));
        }
        if value == ffi::Py_False() {
            return Ok(JsonValue::Bool(false));
        }
        if ffi::PyLong_CheckExact(value) != 0 {
            let mut overflow = 0;
            let n = ffi::PyLong_AsLongLongAndOverflow(value, &mut overflow);
            if overflow != 0 || (n == -1 && !ffi::PyErr_Occurred().is_null()) {
                // Past the signed 64-bit range (or an error): the general way.
                if !ffi::PyErr_Occurred().is_null() {
                    ffi::PyErr_Clear();
                }
                return Err(GiveUp);
            }
            return Ok(JsonValue::Number(match u64::try_from(n) {
                Ok(u) => JsonNumber::PosInt(u),
                Err(_) => JsonNumber::NegInt(n),
            }));
        }
        if ffi::PyFloat_CheckExact(value) != 0 {
            let f = ffi::PyFloat_AsDouble(value);
            if !f.is_finite() {
                // Rejected with an error the general way.
                return Err(GiveUp);
            }
            return Ok(JsonValue::Number(JsonNumber::Float(f)));
        }
    }
    Err(GiveUp)
}
