//! How many events a producer lost, from what a ring can tell: the same rule
//! for `top` and `report`.

/// Events lost by an agent's producer: the trailer's count when the ring has
/// one (this project's producers also report their losses as events, which
/// the trailer already counts); otherwise the sum of the
/// `agent_telemetry_events_dropped` events read (`reported`), which NIXL
/// writes from ring version 4 on. `None` when neither can tell: a NIXL ring
/// of an earlier version has no way to report a loss.
pub fn events_lost(
    trailer: Option<u128>,
    reported: u128,
    ring_version: Option<i32>,
) -> Option<u128> {
    match (trailer, ring_version) {
        (Some(counted), _) => Some(counted.max(reported)),
        (None, Some(version)) if version < 4 && reported == 0 => None,
        _ => Some(reported),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trailer_first_then_the_events_then_nothing() {
        assert_eq!(events_lost(Some(7), 3, Some(1)), Some(7));
        assert_eq!(events_lost(None, 3, Some(4)), Some(3));
        assert_eq!(events_lost(None, 0, Some(4)), Some(0));
        assert_eq!(events_lost(None, 0, Some(3)), None);
        assert_eq!(events_lost(None, 2, Some(1)), Some(2));
        // A capture: no ring, the events say it.
        assert_eq!(events_lost(None, 0, None), Some(0));
    }
}
