//! The panic boundary every exported function runs in.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::status::ERR_INTERNAL;

/// Runs `body`; a panic inside it becomes `on_panic()` instead of unwinding
/// into the C caller. The payload is dropped inside a second boundary (a
/// payload whose drop panics must not escape either).
#[inline(always)]
pub(crate) fn guard<T>(
    what: &'static str,
    on_panic: impl FnOnce() -> T,
    body: impl FnOnce() -> T,
) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(payload) => {
            caught(what, payload);
            on_panic()
        }
    }
}

/// [`guard`] for the functions that return a status.
#[inline(always)]
pub(crate) fn status(what: &'static str, body: impl FnOnce() -> i32) -> i32 {
    guard(what, || ERR_INTERNAL, body)
}

#[cold]
#[inline(never)]
fn caught(what: &'static str, payload: Box<dyn std::any::Any + Send>) {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    tracing::error!(
        function = what,
        message,
        "panic caught at the C API boundary"
    );
    let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_the_internal_status() {
        assert_eq!(status("test", || panic!("boom")), ERR_INTERNAL);
        assert_eq!(status("test", || 0), 0);
        assert_eq!(
            guard("test", || 7u64, || panic!("{}", String::from("x"))),
            7
        );
    }
}
