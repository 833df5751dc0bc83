// The adapter for NIXL 1.3.0 - 1.4.1: API version 2, typed events, exporters
// with three virtual functions (no batch hooks).
//
// Event (16 bytes, also the slot of ring versions 3 and 4):
//   0: uint32 event type · 4: 4 bytes padding · 8: uint64 value
#include <cstddef>
#include <cstdint>


#include "adapter.hpp"
#include "event_names.hpp"

namespace {

using namespace nixl_adapters;

struct Event {
    uint32_t type;
    uint64_t value;
};
static_assert(sizeof(Event) == NIXL_ADAPTER_EVENT_SIZE && offsetof(Event, value) == 8,
              "NIXL 1.3's event layout");

struct Generation {
    using Event = ::Event;
    using Interface = NixlExporter3<Event>;
    using Exporter = Adapter3<Generation>;
    static constexpr const char *kGeneration = NIXL_ADAPTER_GENERATION;
    static constexpr const char *kReleases = NIXL_ADAPTER_RELEASES;
    static constexpr NixlApiVersion kApiVersion = NixlApiVersion{NIXL_ADAPTER_API_VERSION};
    static constexpr Delivery kDelivery = Delivery::kFlushThread;
    static constexpr Stamp kStamp = Stamp::kAtDelivery;

    // 1.5 has the same events but two more virtual functions, which it calls:
    // this adapter's table has no such entries, so it must not serve 1.5.
    static bool matches(const HostInterface &host) {
        return host.events == EventLayout::kTyped
               && host.exporter_virtuals == NIXL_ADAPTER_EXPORTER_FUNCTIONS;
    }
    static void convert(const Event &in, nixl_telemetry_event_t &out) noexcept {
        typed_event(in.type, -1, in.value, out);
    }
};

}  // namespace

NIXL_ADAPTER_ENTRY_POINTS(Generation)
