//! Checking what a C program compiled against a header prints (one
//! `name value` line per constant, size or offset) against the Rust side.

use std::collections::HashMap;

/// Fails the test unless `stdout` of `program` holds exactly one line
/// `name value` for each entry of `rust`, with the same value.
pub fn assert_printed_values_match(program: &str, stdout: &[u8], rust: &[(&str, i64)]) {
    let text = String::from_utf8_lossy(stdout);
    let c: HashMap<&str, i64> = text
        .lines()
        .map(|l| {
            let (k, v) = l
                .split_once(' ')
                .unwrap_or_else(|| panic!("{program} printed {l:?}, not `name value`"));
            let v = v
                .parse()
                .unwrap_or_else(|_| panic!("{program} printed {l:?}: not an integer"));
            (k, v)
        })
        .collect();
    assert_eq!(
        c.len(),
        rust.len(),
        "{program} prints every checked item once: {c:?}"
    );
    for &(key, value) in rust {
        assert_eq!(
            c.get(key),
            Some(&value),
            "{key}: C {:?}, Rust {value}",
            c.get(key)
        );
    }
}
