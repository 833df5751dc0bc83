//! Reading a Python `str` as UTF-8 without an intermediate `bytes` object.
//!
//! The wheel targets the stable ABI of Python 3.9, where the only way is
//! `PyUnicode_AsUTF8String` (a new `bytes` object per string). From Python 3.10
//! on, `PyUnicode_AsUTF8AndSize` is part of the stable ABI: it returns the
//! UTF-8 form cached in the string object. It is looked up at run time, once,
//! so that the same wheel still loads on 3.9.
//!
//! [`TextArena`] lends that cached form without copying it: a batch of records
//! borrows its strings' text for as long as the arena keeps the strings alive.

use std::borrow::Cow;
use std::cell::RefCell;
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

/// The UTF-8 form CPython caches in `value` (3.10+), or `None` on 3.9.
///
/// The returned slice points into the string object: it is valid, and never
/// changes, for as long as the object lives (`str` objects are immutable, and
/// the cached form is freed only with the object).
pub(crate) fn cached_utf8<'a>(value: &'a Bound<'_, PyString>) -> Option<PyResult<&'a str>> {
    let function = as_utf8_and_size(value.py())?;
    let mut size: ffi::Py_ssize_t = 0;
    // SAFETY: `value` is a live `str` (the GIL is held through `Bound`); the
    // function returns NULL with an exception set, or a pointer to `size`
    // bytes of UTF-8 owned by the string object.
    let data = unsafe { function(value.as_ptr(), &mut size) };
    if data.is_null() {
        return Some(Err(PyErr::fetch(value.py())));
    }
    // SAFETY: `size` bytes at `data`, alive while `value` is (at least `'a`).
    // They are valid UTF-8: CPython encodes them itself and fails (NULL, handled
    // above) for text with no UTF-8 form, such as a lone surrogate.
    Some(Ok(unsafe {
        std::str::from_utf8_unchecked(std::slice::from_raw_parts(data.cast::<u8>(), size as usize))
    }))
}

/// The text of `value` (a `str`) as an owned `String`.
pub fn owned_text(value: &Bound<'_, PyString>) -> PyResult<String> {
    match cached_utf8(value) {
        Some(text) => text.map(str::to_owned),
        None => value.extract(),
    }
}

/// Strong references to the `str` objects whose text a batch borrows: each
/// text [`TextArena::text`] lends stays valid until the arena is dropped.
#[derive(Default)]
pub struct TextArena<'py> {
    keep: RefCell<Vec<Bound<'py, PyString>>>,
}

impl<'py> TextArena<'py> {
    /// A new, empty arena.
    pub fn new() -> TextArena<'py> {
        TextArena::default()
    }

    /// The text of `value`, borrowed from the string object (kept alive by the
    /// arena) where the interpreter allows it (3.10+), else copied.
    pub fn text<'a>(&'a self, value: &Bound<'py, PyString>) -> PyResult<Cow<'a, str>> {
        self.text_of(value.clone())
    }

    /// As [`TextArena::text`], keeping the reference given (no new one taken).
    pub fn text_of<'a>(&'a self, value: Bound<'py, PyString>) -> PyResult<Cow<'a, str>> {
        let Some(text) = cached_utf8(&value) else {
            return value.extract::<String>().map(Cow::Owned);
        };
        let text = text?;
        let (data, len) = (text.as_ptr(), text.len());
        self.keep.borrow_mut().push(value);
        // SAFETY: the bytes belong to the string object (not to `keep`, whose
        // growth moves only the references), which `keep` holds alive and
        // unchanged until the arena, outliving `'a`, is dropped; they are valid
        // UTF-8 (`cached_utf8`).
        Ok(Cow::Borrowed(unsafe {
            std::str::from_utf8_unchecked(std::slice::from_raw_parts(data, len))
        }))
    }
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

    #[test]
    fn arena_text_outlives_the_callers_reference() {
        Python::initialize();
        Python::attach(|py| {
            let arena = TextArena::new();
            let texts: Vec<Cow<'_, str>> = (0..100)
                .map(|i| {
                    // A fresh string whose only other reference dies at once.
                    let s = PyString::new(py, &format!("name_{i}_\u{e9}"));
                    arena.text(&s).unwrap()
                })
                .collect();
            for (i, text) in texts.iter().enumerate() {
                assert_eq!(text.as_ref(), format!("name_{i}_\u{e9}"));
            }
            let lone = py.eval(c"'\\udc80'", None, None).unwrap();
            assert!(arena.text(lone.cast::<PyString>().unwrap()).is_err());
        });
    }
}
