//! Full reads of the store shared by the requests that wait for them.
//!
//! A `GET` of the whole map reads every stored key and renders it; at hundreds of
//! thousands of keys that costs about 200 bytes a key per request. Here one read
//! and render runs at a time per kind of answer, and a request takes the answer
//! of a read that *began after the request arrived* (so it never sees the store
//! older than when it asked, whoever wrote it: this instance, another instance,
//! an import), rendering itself only when there is none. N requests arriving
//! together thus cost at most two reads: the one under way when they came, and one
//! for all of them.

use std::sync::Mutex;
use std::time::Instant;

/// The last answer of one kind of full read, and the lock one read holds while it
/// runs.
#[derive(Debug)]
pub(crate) struct SharedRead<T> {
    last: Mutex<Option<(Instant, T)>>,
}

impl<T> Default for SharedRead<T> {
    fn default() -> Self {
        SharedRead {
            last: Mutex::new(None),
        }
    }
}

impl<T: Clone> SharedRead<T> {
    /// The answer of a read begun at or after `arrived`: the last one if it began
    /// then, or a new one from `read` (waiting for the read under way first).
    pub fn get(&self, arrived: Instant, read: impl FnOnce() -> T) -> T {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((began, answer)) = &*last {
            if *began >= arrived {
                return answer.clone();
            }
        }
        let began = Instant::now();
        let answer = read();
        *last = Some((began, answer.clone()));
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_begun_before_the_request_is_not_reused() {
        let shared = SharedRead::default();
        let arrived = Instant::now();
        assert_eq!(shared.get(arrived, || 1), 1);
        // Arrived before that read began: it is reused.
        assert_eq!(shared.get(arrived, || 2), 1);
        std::thread::sleep(std::time::Duration::from_millis(1));
        // Arrived after it began: read again.
        let later = Instant::now();
        assert_eq!(shared.get(later, || 3), 3);
    }
}
