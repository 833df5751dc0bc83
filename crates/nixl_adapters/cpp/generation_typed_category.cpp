// The adapter for NIXL 1.2.0: API version 2, typed events with a category,
// exporters with three virtual functions.
//
// Event (16 bytes, also the slot of 1.2's ring version 2):
//   0: uint32 category · 4: uint32 event type · 8: uint64 value
#include <cstddef>
#include <cstdint>


#include "adapter.hpp"
#include "event_names.hpp"

namespace {

using namespace nixl_adapters;

struct Event {
    uint32_t category;
    uint32_t type;
    uint64_t value;
};
static_assert(sizeof(Event) == NIXL_ADAPTER_EVENT_SIZE,
              "NIXL 1.2's event size (src/generations.rs)");
static_assert(offsetof(Event, type) == 4 && offsetof(Event, value) == 8,
              "NIXL 1.2's event layout");

struct Generation {
    using Event = ::Event;
    using Interface = NixlExporter3<Event>;
    using Exporter = Adapter3<Generation>;
    static constexpr const char *kGeneration = NIXL_ADAPTER_GENERATION;
    static constexpr const char *kReleases = NIXL_ADAPTER_RELEASES;
    static constexpr NixlApiVersion kApiVersion = NixlApiVersion{NIXL_ADAPTER_API_VERSION};
    static constexpr Delivery kDelivery = Delivery::kFlushThread;
    static constexpr Stamp kStamp = Stamp::kAtDelivery;

    static bool matches(const HostInterface &host) {
        return host.events == EventLayout::kTypedWithCategory
               && host.exporter_virtuals == NIXL_ADAPTER_EXPORTER_FUNCTIONS;
    }
    static void convert(const Event &in, nixl_telemetry_event_t &out) noexcept {
        typed_event(in.type, static_cast<int32_t>(in.category & 0x7fffffffu), in.value, out);
    }
};

}  // namespace

NIXL_ADAPTER_ENTRY_POINTS(Generation)
