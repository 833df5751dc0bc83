#include "event_names.hpp"

#include <time.h>

#include <cstdio>
#include <cstring>

namespace nixl_adapters {

namespace {

struct Known {
    const char *name;
    int32_t category;
};

// Indexed by NIXL's event type.
constexpr Known kKnown[] = {
    {"agent_tx_bytes", NIXL_TELEMETRY_TRANSFER},
    {"agent_rx_bytes", NIXL_TELEMETRY_TRANSFER},
    {"agent_tx_requests_num", NIXL_TELEMETRY_TRANSFER},
    {"agent_rx_requests_num", NIXL_TELEMETRY_TRANSFER},
    {"agent_memory_registered", NIXL_TELEMETRY_MEMORY},
    {"agent_memory_deregistered", NIXL_TELEMETRY_MEMORY},
    {"agent_xfer_time", NIXL_TELEMETRY_PERFORMANCE},
    {"agent_xfer_post_time", NIXL_TELEMETRY_PERFORMANCE},
    {"NIXL_ERR_NOT_POSTED", NIXL_TELEMETRY_ERROR},
    {"NIXL_ERR_INVALID_PARAM", NIXL_TELEMETRY_ERROR},
    {"NIXL_ERR_BACKEND", NIXL_TELEMETRY_ERROR},
    {"NIXL_ERR_NOT_FOUND", NIXL_TELEMETRY_ERROR},
    {"NIXL_ERR_MISMATCH", NIXL_TELEMETRY_ERROR},
    {"NIXL_ERR_NOT_ALLOWED", NIXL_TELEMETRY_ERROR},
    {"NIXL_ERR_REPOST_ACTIVE", NIXL_TELEMETRY_ERROR},
    {"NIXL_ERR_UNKNOWN", NIXL_TELEMETRY_ERROR},
    {"NIXL_ERR_NOT_SUPPORTED", NIXL_TELEMETRY_ERROR},
    {"NIXL_ERR_REMOTE_DISCONNECT", NIXL_TELEMETRY_ERROR},
    {"NIXL_ERR_CANCELED", NIXL_TELEMETRY_ERROR},
    {"NIXL_ERR_NO_TELEMETRY", NIXL_TELEMETRY_ERROR},
    {"agent_telemetry_events_dropped", NIXL_TELEMETRY_SYSTEM},
};
constexpr uint32_t kKnownCount = sizeof kKnown / sizeof kKnown[0];
constexpr uint32_t kDroppedType = 20;

// Each known event with its name in place: a conversion is one copy.
struct Templates {
    nixl_telemetry_event_t events[kKnownCount];
    Templates() noexcept {
        std::memset(events, 0, sizeof events);
        for (uint32_t i = 0; i < kKnownCount; ++i) {
            events[i].category = kKnown[i].category;
            std::strncpy(events[i].event_name, kKnown[i].name, NIXL_TELEMETRY_EVENT_NAME_LEN - 1);
        }
    }
};

const Templates &templates() noexcept {
    static const Templates table;
    return table;
}

}  // namespace

void typed_event(uint32_t type, int32_t category, uint64_t value,
                 nixl_telemetry_event_t &out) noexcept {
    if (type < kKnownCount) {
        out = templates().events[type];
    } else {
        std::memset(&out, 0, sizeof out);
        out.category = category >= 0 ? category : NIXL_TELEMETRY_CUSTOM;
        std::snprintf(out.event_name, sizeof out.event_name, "unknown_event_%u", type);
    }
    out.value = value;
}

void named_event(uint64_t timestamp_us, int32_t category, const char (&name)[32], uint64_t value,
                 nixl_telemetry_event_t &out) noexcept {
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

uint64_t now_us() noexcept {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000u + static_cast<uint64_t>(ts.tv_nsec) / 1000u;
}

void dropped_event(uint64_t count, nixl_telemetry_event_t &out) noexcept {
    typed_event(kDroppedType, -1, count, out);
    out.timestamp_us = now_us();
}

}  // namespace nixl_adapters
