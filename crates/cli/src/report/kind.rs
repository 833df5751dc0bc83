//! What an event means for the report: one of the built-in series, an error
//! of some status, or anything else (counted, not charted).

use nixl_telemetry_abi::{names, Category};

/// The meaning of one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `agent_tx_bytes`.
    TxBytes,
    /// `agent_rx_bytes`.
    RxBytes,
    /// `agent_tx_requests_num`.
    TxRequests,
    /// `agent_rx_requests_num`.
    RxRequests,
    /// `agent_memory_registered`.
    MemoryRegistered,
    /// `agent_memory_deregistered`.
    MemoryDeregistered,
    /// `agent_xfer_time` (µs).
    XferTime,
    /// `agent_telemetry_events_dropped`: events lost since the last report.
    EventsDropped,
    /// An error; the number indexes the report's status names.
    Error(u32),
    /// Any other event.
    Other,
}

/// The status of an error event named `name`: without a leading `NIXL_ERR_`
/// (how version-1 rings name errors) or `agent_err_` (the name of the event
/// types of later versions), in lower case: `NIXL_ERR_NOT_FOUND` and
/// `agent_err_not_found` are both `not_found`, as in the Prometheus label.
pub fn error_status(name: &str) -> String {
    let strip = |prefix: &str| {
        (name.len() > prefix.len() && name[..prefix.len()].eq_ignore_ascii_case(prefix))
            .then(|| &name[prefix.len()..])
    };
    strip("NIXL_ERR_")
        .or_else(|| strip("agent_err_"))
        .unwrap_or(name)
        .to_lowercase()
}

/// Distinct error statuses kept; errors of further statuses count under
/// [`OTHER_STATUSES`], so that a hostile input costs bounded memory.
pub const MAX_STATUSES: usize = 64;
/// The status errors beyond [`MAX_STATUSES`] count under.
pub const OTHER_STATUSES: &str = "(other statuses)";

/// Interns error statuses and classifies events.
#[derive(Debug, Default)]
pub struct Classifier {
    statuses: Vec<String>,
}

impl Classifier {
    /// The meaning of an event of `category` (`None` where the ring version
    /// has none) named `name`. A built-in name counts only in its own
    /// category (a CUSTOM `agent_tx_bytes` is someone else's event), or in
    /// any when the version has no categories.
    pub fn classify(&mut self, category: Option<i32>, name: &str) -> Kind {
        let is = |c: Category| category.is_none_or(|found| found == c.0);
        let kind = match name {
            names::TX_BYTES if is(Category::TRANSFER) => Kind::TxBytes,
            names::RX_BYTES if is(Category::TRANSFER) => Kind::RxBytes,
            names::TX_REQUESTS if is(Category::TRANSFER) => Kind::TxRequests,
            names::RX_REQUESTS if is(Category::TRANSFER) => Kind::RxRequests,
            names::MEMORY_REGISTERED if is(Category::MEMORY) => Kind::MemoryRegistered,
            names::MEMORY_DEREGISTERED if is(Category::MEMORY) => Kind::MemoryDeregistered,
            names::XFER_TIME if is(Category::PERFORMANCE) => Kind::XferTime,
            names::EVENTS_DROPPED if is(Category::SYSTEM) => Kind::EventsDropped,
            _ => Kind::Other,
        };
        if kind != Kind::Other {
            return kind;
        }
        let typed_error = category.is_none() && name.starts_with("agent_err_");
        if category == Some(Category::ERROR.0) || typed_error {
            return Kind::Error(self.status_id(&error_status(name)));
        }
        Kind::Other
    }

    fn status_id(&mut self, status: &str) -> u32 {
        if let Some(at) = self.statuses.iter().position(|s| s == status) {
            return at as u32;
        }
        let status = if self.statuses.len() < MAX_STATUSES {
            status
        } else {
            match self.statuses.iter().position(|s| s == OTHER_STATUSES) {
                Some(at) => return at as u32,
                None => OTHER_STATUSES,
            }
        };
        self.statuses.push(status.to_owned());
        (self.statuses.len() - 1) as u32
    }

    /// The error statuses seen, by id.
    pub fn statuses(&self) -> &[String] {
        &self.statuses
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_of_every_ring_version() {
        assert_eq!(error_status("NIXL_ERR_NOT_FOUND"), "not_found");
        assert_eq!(error_status("agent_err_not_found"), "not_found");
        assert_eq!(error_status("nixl_err_backend"), "backend");
        assert_eq!(error_status("SOMETHING"), "something");
        assert_eq!(error_status("NIXL_ERR_"), "nixl_err_");
    }

    #[test]
    fn names_count_in_their_own_category_or_where_there_is_none() {
        let mut c = Classifier::default();
        assert_eq!(c.classify(Some(1), "agent_tx_bytes"), Kind::TxBytes);
        assert_eq!(c.classify(None, "agent_tx_bytes"), Kind::TxBytes);
        assert_eq!(c.classify(Some(7), "agent_tx_bytes"), Kind::Other);
        assert_eq!(c.classify(Some(4), "NIXL_ERR_BACKEND"), Kind::Error(0));
        assert_eq!(c.classify(None, "agent_err_not_found"), Kind::Error(1));
        assert_eq!(c.classify(Some(4), "agent_err_not_found"), Kind::Error(1));
        assert_eq!(c.classify(None, "unknown_event_99"), Kind::Other);
        assert_eq!(c.statuses(), ["backend", "not_found"]);
    }

    #[test]
    fn statuses_are_bounded() {
        let mut c = Classifier::default();
        for i in 0..1000 {
            c.classify(Some(4), &format!("NIXL_ERR_X{i}"));
        }
        assert_eq!(c.statuses().len(), MAX_STATUSES + 1);
        assert_eq!(c.statuses()[MAX_STATUSES], OTHER_STATUSES);
        assert_eq!(
            c.classify(Some(4), "NIXL_ERR_X999"),
            Kind::Error(MAX_STATUSES as u32)
        );
        assert_eq!(c.classify(Some(4), "NIXL_ERR_X0"), Kind::Error(0));
    }
}
