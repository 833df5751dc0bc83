#include "event_names.hpp"

#include <time.h>

#include <cstdio>

namespace nixl_adapters {

void unknown_typed_event(uint32_t type, int32_t category, uint64_t value,
                         nixl_telemetry_event_t &out) noexcept {
    std::memset(&out, 0, sizeof out);
    out.category = category >= 0 ? category : NIXL_TELEMETRY_CUSTOM;
    std::snprintf(out.event_name, sizeof out.event_name, "unknown_event_%u", type);
    out.value = value;
}

uint64_t now_us() noexcept {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000u + static_cast<uint64_t>(ts.tv_nsec) / 1000u;
}

void dropped_event(uint64_t count, nixl_telemetry_event_t &out) noexcept {
    typed_event(kDroppedEventType, -1, count, out);
    out.timestamp_us = now_us();
}

}  // namespace nixl_adapters
