// The adapter's cost per event against our exporter's own, in one process:
//
//   adapter_bench ADAPTER PLUGIN EVENTS ROUNDS
//
// * direct: our plug-in PLUGIN (dlopened, our C ABI) gets the events as our
//   host hands them over: export_batch of up to 4096 events, then flush;
// * adapted: the adapter ADAPTER (dlopened, called the way NIXL calls it) gets
//   the same events as NIXL 1.5 (or 1.3/1.4) passes them: exportEvent per
//   event (in onBatchBegin/onBatchEnd brackets of 4096 on 1.5), and forwards
//   them to its own instance of the same plug-in.
//
// * floor: what any adapter costs at the least, measured beside them: NIXL's
//   virtual exportEvent call into an exporter that only writes our 56-byte
//   event (a copy of a ready-made one, and the value) into a batch buffer.
//
// Rounds alternate between the three. Printed per round and path: nanoseconds of
// wall time and of process CPU time (every thread: the adapter's flush thread
// on 1.3/1.4) per event, and the calling thread's own CPU time. On 1.3/1.4 the
// events come back to back: the adapter delivers every half ring (16384 events
// here) on the calling thread, and the exporter is destroyed at the end of each
// round (its destructor delivers what is left), so the time covers every event
// delivered. The flush thread's own cost is per interval, not per event
// (NIXL_TELEMETRY_RUN_INTERVAL; set long here, measured by the bench's tick
// line).
//
// This program is the NIXL that loads the adapter: it exports the two facts
// an adapter checks (nixlTelemetry::updateData for typed events, and the
// virtual table of NIXL's exporter with BENCH_EXPORTER_FUNCTIONS entries),
// and is linked with -rdynamic so the adapter finds them.
#include <dlfcn.h>
#include <sys/resource.h>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "../event_names.hpp"
#include "../nixl_interface.hpp"
#include "nixl_telemetry_plugin.h"

#ifndef BENCH_EXPORTER_FUNCTIONS
#error "build with -DBENCH_EXPORTER_FUNCTIONS=5 (NIXL 1.5) or 3 (NIXL 1.3/1.4)"
#endif

// The host facts (see cpp/host_interface.cpp).
extern "C" void bench_update_data() __asm__("_ZN13nixlTelemetry10updateDataE27nixl_telemetry_event_type_tm");
extern "C" __attribute__((visibility("default"))) void bench_update_data() {}
extern "C" __attribute__((visibility("default"))) const void *bench_vtable[BENCH_EXPORTER_FUNCTIONS + 2] __asm__(
    "_ZTV27nixlTelemetryBufferExporter");
const void *bench_vtable[BENCH_EXPORTER_FUNCTIONS + 2] = {};

// NIXL's event. Not in an anonymous namespace: the exporter class over it
// must have external linkage, or the compiler, seeing no class derived from
// it here, may turn the virtual calls into calls of the pure function.
namespace bench {
struct TypedEvent {
    uint32_t type;
    uint64_t value;
};
// The floor: the virtual call and the 56-byte write, nothing else.
class FloorExporter final : public
#if BENCH_EXPORTER_FUNCTIONS == 5
                            nixl_adapters::NixlExporter5<TypedEvent>
#else
                            nixl_adapters::NixlExporter3<TypedEvent>
#endif
{
public:
    FloorExporter() : Base(4096) {}
    nixl_adapters::NixlStatus exportEvent(const TypedEvent &event) noexcept override {
        nixl_telemetry_event_t &slot = buffer_[count_++ & 4095];
        nixl_adapters::typed_event(event.type, -1, event.value, slot);
        return nixl_adapters::kNixlSuccess;
    }
    uint64_t count_ = 0;

private:
#if BENCH_EXPORTER_FUNCTIONS == 5
    using Base = nixl_adapters::NixlExporter5<TypedEvent>;
#else
    using Base = nixl_adapters::NixlExporter3<TypedEvent>;
#endif
    nixl_telemetry_event_t buffer_[4096];
};
}  // namespace bench

namespace {

using bench::TypedEvent;
using nixl_adapters::NixlInitParams;
using nixl_adapters::NixlPlugin;

#if BENCH_EXPORTER_FUNCTIONS == 5
using Exporter = nixl_adapters::NixlExporter5<TypedEvent>;
#else
using Exporter = nixl_adapters::NixlExporter3<TypedEvent>;
#endif

constexpr size_t kBatch = 4096;

double now_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

void *must_open(const char *path) {
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
        std::fprintf(stderr, "adapter_bench: %s\n", dlerror());
        std::exit(2);
    }
    return library;
}

void *must_find(void *library, const char *name) {
    void *symbol = dlsym(library, name);
    if (symbol == nullptr) {
        std::fprintf(stderr, "adapter_bench: no %s\n", name);
        std::exit(2);
    }
    return symbol;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: adapter_bench ADAPTER PLUGIN EVENTS ROUNDS\n");
        return 2;
    }
    const size_t events = std::strtoull(argv[3], nullptr, 10);
    const int rounds = std::atoi(argv[4]);

    // NIXL's events of a transfer: post time, transfer time, bytes, requests.
    const uint32_t kTypes[] = {7, 6, 0, 2, 7, 6, 1, 3};
    std::vector<TypedEvent> nixl_events(events);
    std::vector<nixl_telemetry_event_t> our_events(events);
    for (size_t i = 0; i < events; ++i) {
        nixl_events[i] = TypedEvent{kTypes[i % 8], 4096 + i % 977};
        nixl_adapters::typed_event(nixl_events[i].type, -1, nixl_events[i].value, our_events[i]);
        our_events[i].timestamp_us = nixl_adapters::now_us();
    }

    // Direct: our plug-in through our C ABI.
    void *plugin_library = must_open(argv[2]);
    auto plugin_init = reinterpret_cast<const nixl_telemetry_plugin_t *(*)()>(
        must_find(plugin_library, "nixl_telemetry_exporter_plugin_init"));
    const nixl_telemetry_plugin_t *plugin = plugin_init();
    nixl_telemetry_exporter_params_t params{"direct", kBatch, std::getenv("NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH")};
    char reason[512] = {0};
    void *direct = plugin->create_exporter(&params, reason, sizeof reason);
    if (direct == nullptr) {
        std::fprintf(stderr, "adapter_bench: direct exporter: %s\n", reason);
        return 2;
    }

    // Adapted: the adapter, called the way NIXL calls it.
    void *adapter_library = must_open(argv[1]);
    auto adapter_init = reinterpret_cast<NixlPlugin<Exporter> *(*)()>(
        must_find(adapter_library, "nixl_telemetry_plugin_init"));
    NixlPlugin<Exporter> *adapter = adapter_init();
    if (adapter == nullptr || static_cast<unsigned>(adapter->api_version) != 2) {
        std::fprintf(stderr, "adapter_bench: the adapter refused this host\n");
        return 2;
    }
    const NixlInitParams init{"adapted", kBatch};

    // Reached through a volatile pointer: the calls stay virtual.
    std::unique_ptr<bench::FloorExporter> floor_object(new bench::FloorExporter());
    Exporter *volatile floor_exporter = floor_object.get();

    std::unique_ptr<Exporter> adapted;
    for (int round = 0; round < rounds; ++round) {
        {
            Exporter *floor = floor_exporter;
            const double start = now_ns(CLOCK_PROCESS_CPUTIME_ID);
            for (size_t i = 0; i < events; ++i) {
                floor->exportEvent(nixl_events[i]);
            }
            const double cpu = (now_ns(CLOCK_PROCESS_CPUTIME_ID) - start) / events;
            std::printf("floor %d %.2f %.2f\n", round, cpu, cpu);
        }
        double wall = now_ns(CLOCK_MONOTONIC), cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID);
        for (size_t at = 0; at < events; at += kBatch) {
            const size_t n = events - at < kBatch ? events - at : kBatch;
            if (plugin->export_batch(direct, &our_events[at], n) != 0 || plugin->flush(direct) != 0) {
                std::fprintf(stderr, "adapter_bench: the direct exporter failed\n");
                return 2;
            }
        }
        std::printf("direct %d %.2f %.2f\n", round, (now_ns(CLOCK_MONOTONIC) - wall) / events,
                    (now_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu) / events);

        if (!adapted) {
            adapted = adapter->create_exporter(init);
            if (!adapted) {
                std::fprintf(stderr, "adapter_bench: the adapter made no exporter\n");
                return 2;
            }
        }
        wall = now_ns(CLOCK_MONOTONIC);
        cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID);
        double own = now_ns(CLOCK_THREAD_CPUTIME_ID);
        for (size_t at = 0; at < events; at += kBatch) {
            const size_t end = events - at < kBatch ? events : at + kBatch;
#if BENCH_EXPORTER_FUNCTIONS == 5
            adapted->onBatchBegin();
#endif
            for (size_t i = at; i < end; ++i) {
                adapted->exportEvent(nixl_events[i]);
            }
#if BENCH_EXPORTER_FUNCTIONS == 5
            adapted->onBatchEnd();
#endif
        }
#if BENCH_EXPORTER_FUNCTIONS != 5
        adapted.reset();  // the flush thread's share: every event delivered
#endif
        std::printf("adapted %d %.2f %.2f %.2f\n", round, (now_ns(CLOCK_MONOTONIC) - wall) / events,
                    (now_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu) / events,
                    (now_ns(CLOCK_THREAD_CPUTIME_ID) - own) / events);
        std::fflush(stdout);
    }
    adapted.reset();
    plugin->destroy_exporter(direct);
    auto adapter_fini = reinterpret_cast<void (*)()>(must_find(adapter_library, "nixl_telemetry_plugin_fini"));
    adapter_fini();
    auto plugin_fini = reinterpret_cast<void (*)()>(must_find(plugin_library, "nixl_telemetry_exporter_plugin_fini"));
    plugin_fini();
    return 0;
}
