// NIXL's events as our events: the name and category our collector records
// for the same fact, so our exporters map them to the same series as events
// recorded by nixl-telemetry itself.
//
//   type   NIXL's name                    ours                          category
//   0-3    agent_{tx,rx}_{bytes,requests_num}  the same                 TRANSFER
//   4, 5   agent_memory_{,de}registered   the same                      MEMORY
//   6, 7   agent_xfer_time, agent_xfer_post_time  the same              PERFORMANCE
//   8-19   agent_err_<status>             NIXL_ERR_<STATUS> (an error   ERROR
//                                         event, as the collector and
//                                         NIXL <= 1.1 record it)
//   20     agent_telemetry_events_dropped the same                      SYSTEM
//   other  unknown_event                  unknown_event_<type>          the event's (1.2),
//                                                                       else CUSTOM
//
// The conversions are inline: they run on NIXL's thread once per event.
#ifndef NIXL_ADAPTERS_EVENT_NAMES_HPP
#define NIXL_ADAPTERS_EVENT_NAMES_HPP

#include <cstdint>
#include <cstring>

#include "nixl_telemetry_plugin.h"

namespace nixl_adapters {

// Each known event type with its name in place (timestamp and value 0):
// a conversion is one copy. Indexed by NIXL's event type.
inline constexpr nixl_telemetry_event_t kTypedEvents[] = {
    {0, NIXL_TELEMETRY_TRANSFER, "agent_tx_bytes", 0, 0},
    {0, NIXL_TELEMETRY_TRANSFER, "agent_rx_bytes", 0, 0},
    {0, NIXL_TELEMETRY_TRANSFER, "agent_tx_requests_num", 0, 0},
    {0, NIXL_TELEMETRY_TRANSFER, "agent_rx_requests_num", 0, 0},
    {0, NIXL_TELEMETRY_MEMORY, "agent_memory_registered", 0, 0},
    {0, NIXL_TELEMETRY_MEMORY, "agent_memory_deregistered", 0, 0},
    {0, NIXL_TELEMETRY_PERFORMANCE, "agent_xfer_time", 0, 0},
    {0, NIXL_TELEMETRY_PERFORMANCE, "agent_xfer_post_time", 0, 0},
    {0, NIXL_TELEMETRY_ERROR, "NIXL_ERR_NOT_POSTED", 0, 0},
    {0, NIXL_TELEMETRY_ERROR, "NIXL_ERR_INVALID_PARAM", 0, 0},
    {0, NIXL_TELEMETRY_ERROR, "NIXL_ERR_BACKEND", 0, 0},
    {0, NIXL_TELEMETRY_ERROR, "NIXL_ERR_NOT_FOUND", 0, 0},
    {0, NIXL_TELEMETRY_ERROR, "NIXL_ERR_MISMATCH", 0, 0},
    {0, NIXL_TELEMETRY_ERROR, "NIXL_ERR_NOT_ALLOWED", 0, 0},
    {0, NIXL_TELEMETRY_ERROR, "NIXL_ERR_REPOST_ACTIVE", 0, 0},
    {0, NIXL_TELEMETRY_ERROR, "NIXL_ERR_UNKNOWN", 0, 0},
    {0, NIXL_TELEMETRY_ERROR, "NIXL_ERR_NOT_SUPPORTED", 0, 0},
    {0, NIXL_TELEMETRY_ERROR, "NIXL_ERR_REMOTE_DISCONNECT", 0, 0},
    {0, NIXL_TELEMETRY_ERROR, "NIXL_ERR_CANCELED", 0, 0},
    {0, NIXL_TELEMETRY_ERROR, "NIXL_ERR_NO_TELEMETRY", 0, 0},
    {0, NIXL_TELEMETRY_SYSTEM, "agent_telemetry_events_dropped", 0, 0},
};
inline constexpr uint32_t kTypedEventCount = sizeof kTypedEvents / sizeof kTypedEvents[0];
inline constexpr uint32_t kDroppedEventType = 20;

// An event type NIXL knows and we do not: unknown_event_<type>, with
// `category` (>= 0) or CUSTOM.
void unknown_typed_event(uint32_t type, int32_t category, uint64_t value,
                         nixl_telemetry_event_t &out) noexcept;

// Fills `out` (timestamp 0: the forwarder stamps it) for event type `type`
// with `value`. A type of the table gets the table's category; `category` >= 0
// is the category of an unknown type (NIXL 1.2 sends one with each event; for
// the known types it is the table's).
inline void typed_event(uint32_t type, int32_t category, uint64_t value,
                        nixl_telemetry_event_t &out) noexcept {
    if (type < kTypedEventCount) {
        out = kTypedEvents[type];
        out.value = value;
    } else {
        unknown_typed_event(type, category, value, out);
    }
}

// Fills `out` from a named event (timestamp as given): category, the name
// (at most 31 bytes, cut at a NUL), value; the reserved field is zeroed.
inline void named_event(uint64_t timestamp_us, int32_t category, const char (&name)[32],
                        uint64_t value, nixl_telemetry_event_t &out) noexcept {
    out.timestamp_us = timestamp_us;
    out.category = category;
    // NIXL terminates names within the 32 bytes; ours must end in a NUL too.
    const void *end = std::memchr(name, '\0', sizeof name);
    const size_t len = end != nullptr ? static_cast<size_t>(static_cast<const char *>(end) - name)
                                      : sizeof name - 1;
    std::memcpy(out.event_name, name, len);
    std::memset(out.event_name + len, 0, sizeof out.event_name - len);
    out.reserved = 0;
    out.value = value;
}

// Microseconds since the Unix epoch, now.
uint64_t now_us() noexcept;

// The event our collector records for lost events: `agent_telemetry_events_dropped`.
void dropped_event(uint64_t count, nixl_telemetry_event_t &out) noexcept;

}  // namespace nixl_adapters

#endif
