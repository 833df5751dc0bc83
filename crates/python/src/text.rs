//! Reading a Python `str` as UTF-8 without an intermediate `bytes` object.
//!
//! The wheel targets the stable ABI of Python 3.9, where the only way is
//! `PyUnicode_AsUTF8String` (a new `bytes` object per string). From Python 3.10
//! on, `PyUnicode_AsUTF8AndSize` is part of the stable ABI: it returns the
//! UTF-8 form cached in the string object. It is looked up at run time, once,
//! so that the same wheel still loads on 3.9.

use std::ffi::{c_char, CStr};
use std::sync::OnceLock;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyString;

type AsUtf8AndSize =
    unsafe extern "C" fn(*mut ffi::PyObject, *mut ffi::Py_ssize_t) -> *const c_char;

static AS_UTF8_AND_SIZE: OnceLock<Option<AsUtf8AndSize>> = OnceLock::new();

fn as_utf8_and_size(py: Python<'_>) -> Option<AsUtf8AndSize> {
    *AS_UTF8_AND_SIZE.get_or_init(|| {
        if !py.version_info().ge(&(3, 10)) {
            return None;
        }
        const NAME: &CStr = c"PyUnicode_AsUTF8AndSize";
        // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only looks the
        // symbol up among the libraries already loaded (the interpreter's own).
        let symbol = unsafe { libc::dlsym(libc::RTLD_DEFAULT, NAME.as_ptr()) };
        if symbol.is_null() {
            None
        } else {
            // SAFETY: the symbol is CPython's `PyUnicode_AsUTF8AndSize`, whose
            // stable-ABI signature (3.10+, checked above) is exactly `AsUtf8AndSize`.
            Some(unsafe { std::mem::transmute::<*mut libc::c_void, AsUtf8AndSize>(symbol) })
        }
    })
}

/// The text of `value` (a `str`) as an owned `String`.
pub fn owned_text(value: &Bound<'_, PyString>) -> PyResult<String> {
    if let Some(function) = as_utf8_and_size(value.py()) {
        let mut size: ffi::Py_ssize_t = 0;
        // SAFETY: `value` is a live `str` (the GIL is held through `Bound`); the
        // function returns NULL with an exception set, or a pointer to `size`
        // bytes of valid UTF-8 owned by the string object, which outlives this call.
        let data = unsafe { function(value.as_ptr(), &mut size) };
        if data.is_null() {
            return Err(PyErr::fetch(value.py()));
        }
        // SAFETY: as above: `size` bytes at `data`, alive while `value` is.
        let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size as usize) };
        return std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|e| pyo3::exceptions::PyUnicodeDecodeError::new_err(e.to_string()));
    }
    value.extract()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips() {
        Python::initialize();
        Python::attach(|py| {
            for text in [
                "",
                "agent_tx_bytes",
                "r\u{e9}snet \u{7f51} \u{1f680}",
                "a\0b",
            ] {
                let s = PyString::new(py, text);
                assert_eq!(owned_text(&s).unwrap(), text);
            }
            // A lone surrogate has no UTF-8 form: an error, not a crash.
            let lone = py.eval(c"'\\udc80'", None, None).unwrap();
            assert!(owned_text(lone.cast::<PyString>().unwrap()).is_err());
        });
    }
}
