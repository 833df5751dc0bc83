// The adapter for NIXL 1.1.0: API version 2, named events without a timestamp,
// exporters with three virtual functions.
//
// Event (48 bytes, also the slot of 1.1's ring version 2):
//   0: int32 category · 4: char[32] name (NUL-terminated) · 36: 4 bytes padding
//   · 40: uint64 value
#include <cstddef>
#include <cstdint>


#include "adapter.hpp"
#include "event_names.hpp"

namespace {

using namespace nixl_adapters;

struct Event {
    int32_t category;
    char name[32];
    uint64_t value;
};
static_assert(sizeof(Event) == NIXL_ADAPTER_EVENT_SIZE,
              "NIXL 1.1's event size (src/generations.rs)");
static_assert(offsetof(Event, name) == 4 && offsetof(Event, value) == 40,
              "NIXL 1.1's event layout");

struct Generation {
    using Event = ::Event;
    using Interface = NixlExporter3<Event>;
    using Exporter = Adapter3<Generation>;
    static constexpr const char *kGeneration = NIXL_ADAPTER_GENERATION;
    static constexpr const char *kReleases = NIXL_ADAPTER_RELEASES;
    static constexpr NixlApiVersion kApiVersion = NixlApiVersion{NIXL_ADAPTER_API_VERSION};
    static constexpr Delivery kDelivery = Delivery::kFlushThread;
    static constexpr Stamp kStamp = Stamp::kAtDelivery;

    // NIXL up to 1.0 has the same named interface but expects API version 1:
    // its own check turns this adapter (version 2) away.
    static bool matches(const HostInterface &host) {
        return host.events == EventLayout::kNamed
               && host.exporter_virtuals == NIXL_ADAPTER_EXPORTER_FUNCTIONS;
    }
    static void convert(const Event &in, nixl_telemetry_event_t &out) noexcept {
        named_event(0, in.category, in.name, in.value, out);
    }
};

}  // namespace

NIXL_ADAPTER_ENTRY_POINTS(Generation)
