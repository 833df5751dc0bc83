// The adapter for NIXL 0.9.0 - 1.0.1: API version 1, named events with a
// timestamp, exporters with three virtual functions.
//
// Event (56 bytes, also the slot of ring version 1):
//   0: uint64 timestamp (µs since the epoch) · 8: int32 category · 12: char[32] name
//   (NUL-terminated) · 44: 4 bytes padding · 48: uint64 value
// Our event has the same layout; only the padding (uninitialised in NIXL's
// events) is zeroed.
#include <cstddef>
#include <cstdint>


#include "adapter.hpp"
#include "event_names.hpp"

namespace {

using namespace nixl_adapters;

struct Event {
    uint64_t timestamp_us;
    int32_t category;
    char name[32];
    uint64_t value;
};
static_assert(sizeof(Event) == NIXL_ADAPTER_EVENT_SIZE,
              "NIXL 1.0's event size (src/generations.rs)");
static_assert(offsetof(Event, category) == 8 && offsetof(Event, name) == 12 &&
                  offsetof(Event, value) == 48,
              "NIXL 1.0's event layout");

struct Generation {
    using Event = ::Event;
    using Interface = NixlExporter3<Event>;
    using Exporter = Adapter3<Generation>;
    static constexpr const char *kGeneration = NIXL_ADAPTER_GENERATION;
    static constexpr const char *kReleases = NIXL_ADAPTER_RELEASES;
    static constexpr NixlApiVersion kApiVersion = NixlApiVersion{NIXL_ADAPTER_API_VERSION};
    static constexpr Delivery kDelivery = Delivery::kFlushThread;
    static constexpr Stamp kStamp = Stamp::kKeep;

    // NIXL 1.1 has the same named interface but expects API version 2: its
    // own check turns this adapter (version 1) away.
    static bool matches(const HostInterface &host) {
        return host.events == EventLayout::kNamed
               && host.exporter_virtuals == NIXL_ADAPTER_EXPORTER_FUNCTIONS;
    }
    static void convert(const Event &in, nixl_telemetry_event_t &out) noexcept {
        named_event(in.timestamp_us, in.category, in.name, in.value, out);
    }
};

}  // namespace

NIXL_ADAPTER_ENTRY_POINTS(Generation)
