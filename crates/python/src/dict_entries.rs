//! Whether two dicts hold the very same entries, by identity, without
//! hashing: the quick check before `==` when `process_many` asks whether the
//! caller's dict is still the copy it kept.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Whether `a` and `b` hold the same number of entries, and, walked in order,
/// the same key object with the same value object at each step.
///
/// `true` implies `a == b` (each key maps to an identical value, and Python's
/// `==` takes identical objects as equal); `false` says nothing (an equal value
/// may be another object, or the order may differ): then compare with `==`.
/// Runs no Python code: it reads the two dicts' entry tables through
/// `PyDict_Next` and compares pointers.
pub fn same_entries(a: &Bound<'_, PyDict>, b: &Bound<'_, PyDict>) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (mut at_a, mut at_b): (ffi::Py_ssize_t, ffi::Py_ssize_t) = (0, 0);
    let mut key_a: *mut ffi::PyObject = std::ptr::null_mut();
    let mut value_a: *mut ffi::PyObject = std::ptr::null_mut();
    let mut key_b: *mut ffi::PyObject = std::ptr::null_mut();
    let mut value_b: *mut ffi::PyObject = std::ptr::null_mut();
    loop {
        // SAFETY: `a` and `b` are live dicts and the GIL is held (through the
        // `Bound`s); `PyDict_Next` hands out borrowed references, only compared
        // here (never dereferenced), and nothing in this loop runs Python code
        // or changes either dict. Both dicts keep their objects alive, so equal
        // pointers are the same object.
        let (more_a, more_b) = unsafe {
            (
                ffi::PyDict_Next(a.as_ptr(), &mut at_a, &mut key_a, &mut value_a),
                ffi::PyDict_Next(b.as_ptr(), &mut at_b, &mut key_b, &mut value_b),
            )
        };
        match (more_a != 0, more_b != 0) {
            (false, false) => return true,
            (true, true) if key_a == key_b && value_a == value_b => {}
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_entries_only() {
        Python::initialize();
        Python::attach(|py| {
            let a = PyDict::new(py);
            for i in 0..100 {
                a.set_item(format!("key_{i}"), i * 1000).unwrap();
            }
            let copy = a.copy().unwrap();
            assert!(same_entries(&a, &copy));
            // An equal value that is another object: not the same entries.
            let other = copy.copy().unwrap();
            other.set_item("key_5", 5000.0).unwrap();
            assert!(!same_entries(&a, &other));
            assert!(a.as_any().eq(&other).unwrap());
            // Another order of the same entries.
            let reordered = copy.copy().unwrap();
            let value = reordered.get_item("key_0").unwrap().unwrap();
            reordered.del_item("key_0").unwrap();
            reordered.set_item("key_0", value).unwrap();
            assert!(!same_entries(&a, &reordered));
            // A key more, a key less.
            let more = copy.copy().unwrap();
            more.set_item("extra", 1).unwrap();
            assert!(!same_entries(&a, &more) && !same_entries(&more, &a));
            let less = copy.copy().unwrap();
            less.del_item("key_99").unwrap();
            assert!(!same_entries(&a, &less));
            // Deleted entries leave holes in one table, not in its copy.
            let holes = PyDict::new(py);
            holes.set_item("gone", 1).unwrap();
            holes.update(a.as_mapping()).unwrap();
            holes.del_item("gone").unwrap();
            let compact = holes.copy().unwrap();
            assert!(same_entries(&holes, &compact));
        });
    }
}
