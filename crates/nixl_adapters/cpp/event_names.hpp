// NIXL's typed events (1.2 on) as our events: the name and category our
// collector records for the same fact, so our exporters map them to the same
// series as events recorded by nixl-telemetry itself.
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
#ifndef NIXL_ADAPTERS_EVENT_NAMES_HPP
#define NIXL_ADAPTERS_EVENT_NAMES_HPP

#include <cstdint>

#include "nixl_telemetry_plugin.h"

namespace nixl_adapters {

// Fills `out` (timestamp 0: the caller stamps it) for event type `type` with
// `value`. A type of the table gets the table's category; `category` >= 0 is
// the category of an unknown type (NIXL 1.2 sends one with each event; for
// the known types it is the table's).
void typed_event(uint32_t type, int32_t category, uint64_t value,
                 nixl_telemetry_event_t &out) noexcept;

// Fills `out` from a named event (timestamp as given): category, the name
// (at most 31 bytes, cut at a NUL), value; the reserved field is zeroed.
void named_event(uint64_t timestamp_us, int32_t category, const char (&name)[32], uint64_t value,
                 nixl_telemetry_event_t &out) noexcept;

// Microseconds since the Unix epoch, now.
uint64_t now_us() noexcept;

// The event our collector records for lost events: `agent_telemetry_events_dropped`.
void dropped_event(uint64_t count, nixl_telemetry_event_t &out) noexcept;

}  // namespace nixl_adapters

#endif
