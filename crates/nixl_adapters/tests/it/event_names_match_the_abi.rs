//! The adapters' C++ keeps its own table of NIXL's event types
//! (`cpp/event_names.hpp`, `kTypedEvents`: one copy per conversion, no lookup
//! on NIXL's thread). It must say what the ABI crate says: the names of
//! `ring::EVENT_TYPES` in the same order, each error type as the event the
//! collector records (`NIXL_ERR_<STATUS>`, category ERROR, from
//! `names::ERROR_STATUSES`), and the dropped-events type at its number.

use nixl_telemetry_abi::names::{ERROR_PREFIX, ERROR_STATUSES, EVENTS_DROPPED};
use nixl_telemetry_abi::ring::EVENT_TYPES;

/// `(category, name)` of each `kTypedEvents` entry, in order.
fn typed_events(header: &str) -> Vec<(String, String)> {
    let start = header
        .find("kTypedEvents[] = {")
        .expect("event_names.hpp defines kTypedEvents");
    let body = &header[start..];
    let body = &body[..body.find("};").expect("kTypedEvents ends")];
    body.lines()
        .filter_map(|line| {
            let entry = line.trim().strip_prefix("{0, NIXL_TELEMETRY_")?;
            let (category, rest) = entry.split_once(", \"")?;
            let (name, _) = rest.split_once('"')?;
            Some((category.to_owned(), name.to_owned()))
        })
        .collect()
}

fn header() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/cpp/event_names.hpp");
    std::fs::read_to_string(path).expect("cpp/event_names.hpp is readable")
}

#[test]
fn the_cpp_event_table_is_the_abis() {
    let cpp = typed_events(&header());
    assert_eq!(cpp.len(), EVENT_TYPES.len(), "{cpp:?}");
    let mut errors = ERROR_STATUSES.iter();
    for (event_type, ((category, name), ours)) in cpp.iter().zip(EVENT_TYPES).enumerate() {
        match ours.strip_prefix("agent_err_") {
            Some(status) => {
                assert_eq!(errors.next(), Some(&status), "type {event_type}");
                assert_eq!(
                    name,
                    &format!("{ERROR_PREFIX}{}", status.to_uppercase()),
                    "type {event_type}"
                );
                assert_eq!(category, "ERROR", "type {event_type}");
            }
            None => {
                assert_eq!(name, ours, "type {event_type}");
                assert_ne!(category, "ERROR", "type {event_type}");
            }
        }
    }
    assert_eq!(errors.next(), None, "every error status has its type");
}

#[test]
fn the_cpp_dropped_type_is_the_abis() {
    let dropped = EVENT_TYPES
        .iter()
        .position(|name| *name == EVENTS_DROPPED)
        .expect("EVENT_TYPES holds the dropped-events name");
    assert!(
        header().contains(&format!("kDroppedEventType = {dropped};")),
        "cpp/event_names.hpp: kDroppedEventType must be {dropped}"
    );
}

#[test]
fn a_drifted_table_is_seen() {
    // The parser finds what a changed entry says, so the checks above can fail.
    let changed = header().replace("\"agent_rx_bytes\"", "\"agent_rx_octets\"");
    let cpp = typed_events(&changed);
    assert_eq!(cpp.len(), EVENT_TYPES.len());
    assert_eq!(cpp[1].1, "agent_rx_octets");
}
