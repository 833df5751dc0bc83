//! What an event means for the report: one of the built-in series, an error
//! of some status, or anything else (counted, not charted) — as the metric
//! model maps it for every exporter.

use nixl_telemetry::{Category, Event};
use nixl_telemetry_metrics::naming::error_status;
use nixl_telemetry_metrics::{mapping, slot, EventEffect};

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
    /// The meaning of `event`, by the metric model's mapping
    /// ([`mapping::effect`]): what the exporters count it as.
    pub fn classify(&mut self, event: &Event) -> Kind {
        let name = event.name_bytes();
        match mapping::effect(event.category(), name) {
            EventEffect::Builtin { sum, .. } => match sum {
                slot::TX_BYTES => Kind::TxBytes,
                slot::RX_BYTES => Kind::RxBytes,
                slot::TX_REQUESTS => Kind::TxRequests,
                slot::RX_REQUESTS => Kind::RxRequests,
                slot::MEM_REGISTERED => Kind::MemoryRegistered,
                slot::MEM_DEREGISTERED => Kind::MemoryDeregistered,
                slot::XFER_TIME => Kind::XferTime,
                slot::DROPPED => Kind::EventsDropped,
                _ => Kind::Other,
            },
            EventEffect::PerName if event.category() == Category::ERROR => {
                Kind::Error(self.status_id(&error_status(name)))
            }
            _ => Kind::Other,
        }
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
    use crate::report::input::event_of_line;

    fn kind(c: &mut Classifier, category: Option<i32>, name: &str) -> Kind {
        c.classify(&event_of_line(category, name, 1))
    }

    #[test]
    fn events_mean_what_the_exporters_count() {
        let mut c = Classifier::default();
        assert_eq!(kind(&mut c, Some(1), "agent_tx_bytes"), Kind::TxBytes);
        assert_eq!(kind(&mut c, None, "agent_tx_bytes"), Kind::TxBytes);
        assert_eq!(kind(&mut c, Some(7), "agent_tx_bytes"), Kind::Other);
        assert_eq!(kind(&mut c, Some(5), "agent_xfer_time"), Kind::XferTime);
        assert_eq!(
            kind(&mut c, None, "agent_telemetry_events_dropped"),
            Kind::EventsDropped
        );
        assert_eq!(kind(&mut c, Some(4), "NIXL_ERR_BACKEND"), Kind::Error(0));
        assert_eq!(kind(&mut c, None, "agent_err_not_found"), Kind::Error(1));
        assert_eq!(kind(&mut c, Some(4), "agent_err_not_found"), Kind::Error(1));
        assert_eq!(kind(&mut c, None, "unknown_event_99"), Kind::Other);
        assert_eq!(c.statuses(), ["backend", "not_found"]);
    }

    #[test]
    fn statuses_are_bounded() {
        let mut c = Classifier::default();
        for i in 0..1000 {
            kind(&mut c, Some(4), &format!("NIXL_ERR_X{i}"));
        }
        assert_eq!(c.statuses().len(), MAX_STATUSES + 1);
        assert_eq!(c.statuses()[MAX_STATUSES], OTHER_STATUSES);
        assert_eq!(
            kind(&mut c, Some(4), "NIXL_ERR_X999"),
            Kind::Error(MAX_STATUSES as u32)
        );
        assert_eq!(kind(&mut c, Some(4), "NIXL_ERR_X0"), Kind::Error(0));
    }
}
