//! The names of the events the host records itself: what the collector writes
//! and what exporters (the Prometheus plug-in's fixed families) look for.
//!
//! Each name comes as text and, for matching an event's name field without
//! decoding it, as bytes (`*_BYTES`).

/// `agent_memory_registered` (MEMORY, bytes).
pub const MEMORY_REGISTERED: &str = "agent_memory_registered";
/// `agent_memory_deregistered` (MEMORY, bytes).
pub const MEMORY_DEREGISTERED: &str = "agent_memory_deregistered";
/// `agent_tx_bytes` (TRANSFER, bytes).
pub const TX_BYTES: &str = "agent_tx_bytes";
/// `agent_rx_bytes` (TRANSFER, bytes).
pub const RX_BYTES: &str = "agent_rx_bytes";
/// `agent_tx_requests_num` (TRANSFER, count).
pub const TX_REQUESTS: &str = "agent_tx_requests_num";
/// `agent_rx_requests_num` (TRANSFER, count).
pub const RX_REQUESTS: &str = "agent_rx_requests_num";
/// `agent_xfer_time` (PERFORMANCE, µs).
pub const XFER_TIME: &str = "agent_xfer_time";
/// `agent_xfer_post_time` (PERFORMANCE, µs).
pub const XFER_POST_TIME: &str = "agent_xfer_post_time";
/// `agent_telemetry_events_dropped` (SYSTEM, count): events lost since the previous report.
pub const EVENTS_DROPPED: &str = "agent_telemetry_events_dropped";

/// The prefix of an error event's name: an error is recorded as an event of
/// category ERROR named `NIXL_ERR_<STATUS>` (NIXL's status, upper case).
pub const ERROR_PREFIX: &str = "NIXL_ERR_";

/// Hands NIXL's error statuses, in the order of NIXL's status enumeration
/// (and of its event types 8–19), to macro `$then` as string literals: the
/// one list of them, from which [`ERROR_STATUSES`] and the ring layouts'
/// event-type table (`ring::EVENT_TYPES`, `agent_err_<status>`) are built.
macro_rules! with_error_statuses {
    ($then:ident) => {
        $then!(
            "not_posted",
            "invalid_param",
            "backend",
            "not_found",
            "mismatch",
            "not_allowed",
            "repost_active",
            "unknown",
            "not_supported",
            "remote_disconnect",
            "canceled",
            "no_telemetry"
        )
    };
}
pub(crate) use with_error_statuses;

macro_rules! status_list {
    ($($status:literal),*) => {
        [$($status),*]
    };
}

/// NIXL's error statuses, lower case and without [`ERROR_PREFIX`], in the
/// order of NIXL's status enumeration: every agent shows each from its
/// creation (at 0), and NIXL's event types 8–19 are `agent_err_<status>`.
pub const ERROR_STATUSES: [&str; 12] = with_error_statuses!(status_list);

/// [`MEMORY_REGISTERED`] as bytes.
pub const MEMORY_REGISTERED_BYTES: &[u8] = MEMORY_REGISTERED.as_bytes();
/// [`MEMORY_DEREGISTERED`] as bytes.
pub const MEMORY_DEREGISTERED_BYTES: &[u8] = MEMORY_DEREGISTERED.as_bytes();
/// [`TX_BYTES`] as bytes.
pub const TX_BYTES_BYTES: &[u8] = TX_BYTES.as_bytes();
/// [`RX_BYTES`] as bytes.
pub const RX_BYTES_BYTES: &[u8] = RX_BYTES.as_bytes();
/// [`TX_REQUESTS`] as bytes.
pub const TX_REQUESTS_BYTES: &[u8] = TX_REQUESTS.as_bytes();
/// [`RX_REQUESTS`] as bytes.
pub const RX_REQUESTS_BYTES: &[u8] = RX_REQUESTS.as_bytes();
/// [`XFER_TIME`] as bytes.
pub const XFER_TIME_BYTES: &[u8] = XFER_TIME.as_bytes();
/// [`XFER_POST_TIME`] as bytes.
pub const XFER_POST_TIME_BYTES: &[u8] = XFER_POST_TIME.as_bytes();
/// [`EVENTS_DROPPED`] as bytes.
pub const EVENTS_DROPPED_BYTES: &[u8] = EVENTS_DROPPED.as_bytes();

/// Every built-in name, in the order above.
pub const ALL: [&str; 9] = [
    MEMORY_REGISTERED,
    MEMORY_DEREGISTERED,
    TX_BYTES,
    RX_BYTES,
    TX_REQUESTS,
    RX_REQUESTS,
    XFER_TIME,
    XFER_POST_TIME,
    EVENTS_DROPPED,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::MAX_EVENT_NAME_LEN;

    #[test]
    fn every_built_in_name_fits_an_event_intact() {
        for name in ALL {
            assert!(name.len() <= MAX_EVENT_NAME_LEN, "{name}");
            assert!(name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'));
        }
    }

    #[test]
    fn every_error_name_fits_an_event_intact() {
        for status in ERROR_STATUSES {
            let name = format!("{ERROR_PREFIX}{}", status.to_uppercase());
            assert!(name.len() <= MAX_EVENT_NAME_LEN, "{name}");
            assert!(status.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'));
        }
    }
}
