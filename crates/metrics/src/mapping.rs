//! What an event does to its agent's totals: the one event → family mapping,
//! written from [`nixl_telemetry_abi::names`].

use nixl_telemetry_abi::{names, Category, EVENT_NAME_CAPACITY};

use crate::families::{histogram, slot};

/// What one event does to its agent's totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventEffect {
    /// A built-in event: its value is added (saturating) to fixed reading
    /// `sum`, written to fixed reading `last` if there is one, and observed
    /// by histogram `histogram` (an index of [`histogram`]) if there is one.
    Builtin {
        /// The fixed reading ([`slot`]) the value is added to.
        sum: usize,
        /// The fixed reading that takes the value as the latest one.
        last: Option<usize>,
        /// The histogram that observes the value.
        histogram: Option<usize>,
    },
    /// A run-time series: an error status (each event counts one) or a
    /// per-name counter (each event adds its value), named by
    /// [`Series::of_event`](crate::Series::of_event).
    PerName,
    /// Counted (one per event) in [`slot::UNMAPPED`]: a category this
    /// version does not know.
    Unmapped,
}

const fn builtin(sum: usize, last: Option<usize>, histogram: Option<usize>) -> EventEffect {
    EventEffect::Builtin {
        sum,
        last,
        histogram,
    }
}

/// What an event of `category` called `name` (without its NUL padding) does.
#[inline]
pub fn effect(category: Category, name: &[u8]) -> EventEffect {
    match category {
        Category::TRANSFER => match name {
            names::TX_BYTES_BYTES => builtin(slot::TX_BYTES, Some(slot::TX_LAST), None),
            names::RX_BYTES_BYTES => builtin(slot::RX_BYTES, Some(slot::RX_LAST), None),
            names::TX_REQUESTS_BYTES => builtin(slot::TX_REQUESTS, None, None),
            names::RX_REQUESTS_BYTES => builtin(slot::RX_REQUESTS, None, None),
            _ => EventEffect::PerName,
        },
        Category::PERFORMANCE => match name {
            names::XFER_TIME_BYTES => builtin(
                slot::XFER_TIME,
                Some(slot::XFER_LAST),
                Some(histogram::XFER_TIME),
            ),
            names::XFER_POST_TIME_BYTES => builtin(
                slot::POST_TIME,
                Some(slot::POST_LAST),
                Some(histogram::POST_TIME),
            ),
            _ => EventEffect::PerName,
        },
        Category::MEMORY => match name {
            names::MEMORY_REGISTERED_BYTES => {
                builtin(slot::MEM_REGISTERED, Some(slot::MEM_REGISTERED_LAST), None)
            }
            names::MEMORY_DEREGISTERED_BYTES => builtin(
                slot::MEM_DEREGISTERED,
                Some(slot::MEM_DEREGISTERED_LAST),
                None,
            ),
            _ => EventEffect::PerName,
        },
        Category::SYSTEM => match name {
            names::EVENTS_DROPPED_BYTES => builtin(slot::DROPPED, None, None),
            _ => EventEffect::PerName,
        },
        Category::ERROR | Category::BACKEND | Category::CONNECTION | Category::CUSTOM => {
            EventEffect::PerName
        }
        _ => EventEffect::Unmapped,
    }
}

/// `name` NUL-padded to the event's name field.
const fn padded(name: &str) -> [u8; EVENT_NAME_CAPACITY] {
    let bytes = name.as_bytes();
    let mut out = [0u8; EVENT_NAME_CAPACITY];
    let mut i = 0;
    while i < bytes.len() {
        out[i] = bytes[i];
        i += 1;
    }
    out
}

const TX_BYTES: [u8; EVENT_NAME_CAPACITY] = padded(names::TX_BYTES);
const RX_BYTES: [u8; EVENT_NAME_CAPACITY] = padded(names::RX_BYTES);
const TX_REQUESTS: [u8; EVENT_NAME_CAPACITY] = padded(names::TX_REQUESTS);
const RX_REQUESTS: [u8; EVENT_NAME_CAPACITY] = padded(names::RX_REQUESTS);
const XFER_TIME: [u8; EVENT_NAME_CAPACITY] = padded(names::XFER_TIME);
const POST_TIME: [u8; EVENT_NAME_CAPACITY] = padded(names::XFER_POST_TIME);

/// The effect of one of the frequent built-in events (the transfer and
/// performance ones) found by comparing the whole NUL-padded name field at
/// once (a few vector compares), which skips the scan for the NUL; `None` for
/// any other event, including a frequent name with bytes after its NUL (the
/// slower path gives it the same meaning).
#[inline]
pub(crate) fn frequent(category: i32, name: &[u8; EVENT_NAME_CAPACITY]) -> Option<EventEffect> {
    match Category(category) {
        Category::TRANSFER => {
            if *name == TX_REQUESTS {
                Some(builtin(slot::TX_REQUESTS, None, None))
            } else if *name == TX_BYTES {
                Some(builtin(slot::TX_BYTES, Some(slot::TX_LAST), None))
            } else if *name == RX_REQUESTS {
                Some(builtin(slot::RX_REQUESTS, None, None))
            } else if *name == RX_BYTES {
                Some(builtin(slot::RX_BYTES, Some(slot::RX_LAST), None))
            } else {
                None
            }
        }
        Category::PERFORMANCE => {
            if *name == XFER_TIME {
                Some(builtin(
                    slot::XFER_TIME,
                    Some(slot::XFER_LAST),
                    Some(histogram::XFER_TIME),
                ))
            } else if *name == POST_TIME {
                Some(builtin(
                    slot::POST_TIME,
                    Some(slot::POST_LAST),
                    Some(histogram::POST_TIME),
                ))
            } else {
                None
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fast_path_agrees_with_the_mapping() {
        for (category, name) in [
            (Category::TRANSFER, names::TX_REQUESTS),
            (Category::TRANSFER, names::TX_BYTES),
            (Category::TRANSFER, names::RX_REQUESTS),
            (Category::TRANSFER, names::RX_BYTES),
            (Category::PERFORMANCE, names::XFER_TIME),
            (Category::PERFORMANCE, names::XFER_POST_TIME),
        ] {
            let field = padded(name);
            assert_eq!(
                frequent(category.0, &field),
                Some(effect(category, name.as_bytes())),
                "{name}"
            );
            assert!(matches!(
                effect(category, name.as_bytes()),
                EventEffect::Builtin { .. }
            ));
        }
        assert_eq!(frequent(Category::PERFORMANCE.0, &TX_BYTES), None);
        assert_eq!(
            frequent(Category::MEMORY.0, &padded(names::MEMORY_REGISTERED)),
            None
        );
    }

    #[test]
    fn every_built_in_name_is_mapped_in_its_category_only() {
        for name in names::ALL {
            let builtin_somewhere = [
                Category::TRANSFER,
                Category::PERFORMANCE,
                Category::MEMORY,
                Category::SYSTEM,
            ]
            .iter()
            .filter(|c| matches!(effect(**c, name.as_bytes()), EventEffect::Builtin { .. }))
            .count();
            assert_eq!(builtin_somewhere, 1, "{name}");
            assert_eq!(
                effect(Category::CUSTOM, name.as_bytes()),
                EventEffect::PerName
            );
        }
        assert_eq!(
            effect(Category(99), b"agent_tx_bytes"),
            EventEffect::Unmapped
        );
    }
}
