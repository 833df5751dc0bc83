// A C++ host recording a transfer loop through the header-only wrapper
// nixl_telemetry.hpp, configured by code (settings), built with CMake:
//
//   cmake -S examples/cpp -B build -DCMAKE_PREFIX_PATH=<prefix> && cmake --build build
//   ./build/transfer_loop /tmp/rings cpp-example 1000
//   telemetry_reader --once /tmp/rings/cpp-example
//
// Arguments: <ring directory> [agent] [transfers] [exporter]. With an exporter
// name (e.g. csv, prometheus) the ring directory is ignored and the exporter
// gets NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH from the environment, if set.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <nixl_telemetry.hpp>

namespace nt = nixl_telemetry;

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s <ring directory> [agent] [transfers] [exporter]\n", argv[0]);
        return 2;
    }
    const std::string agent = argc > 2 ? argv[2] : "cpp-example";
    const long transfers = argc > 3 ? std::strtol(argv[3], nullptr, 10) : 100;

    nixl_telemetry_settings_t settings = nt::default_settings();
    settings.ring_directory = argv[1];
    settings.run_interval_ms = 10;
    if (argc > 4) {
        settings.exporter = argv[4];
        settings.output_path = std::getenv("NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH");
    }
    nt::Telemetry telemetry;
    try {
        telemetry = nt::Telemetry::create(agent, settings);
    } catch (const nt::Error &e) {
        std::fprintf(stderr, "transfer_loop: telemetry: %s (%s)\n", e.what(), nt::status_string(e.status()));
        return 2;
    }
    nt::Handle completions = telemetry.handle(nt::Category::Backend, "example_completions");

    std::vector<unsigned char> source(1 << 16, 0x5a), destination(source.size());
    telemetry.memory_registered(source.size() + destination.size());
    for (long i = 0; i < transfers; i++) {
        const nt::Direction direction = i % 2 == 0 ? nt::Direction::Write : nt::Direction::Read;
        const uint64_t posted = nt::Telemetry::now_us();
        std::memcpy(destination.data(), source.data(), source.size()); // the transfer
        const uint64_t completed = nt::Telemetry::now_us();
        telemetry.transfer_completed_at(completed, completed - posted, direction, destination.size());
        completions.record_at(completed, 1);
    }
    telemetry.memory_deregistered(source.size() + destination.size());
    telemetry.flush();

    const nixl_telemetry_stats_t stats = telemetry.stats();
    std::printf("transfer_loop: agent=%s transfers=%ld recorded=%llu delivered=%llu dropped=%llu\n",
                agent.c_str(), transfers, static_cast<unsigned long long>(stats.recorded),
                static_cast<unsigned long long>(stats.delivered),
                static_cast<unsigned long long>(stats.dropped_total));
    return destination[0] == 0x5a ? 0 : 1;
    // The destructors destroy the handle, then the telemetry (flush, close).
}
