// One agent's events on their way from NIXL to one of our exporters.
//
// NIXL calls exportEvent once per event from its export task. The forwarder
// gathers the converted events into batches and hands each batch to our
// exporter's export_batch, then calls flush, the way our own collector does:
//
//  * with batch hooks (NIXL 1.5 calls onBatchBegin/onBatchEnd around each
//    export pass): the events of a pass are one batch, delivered and flushed
//    at onBatchEnd, on NIXL's thread;
//  * without (up to 1.4, which gives no sign where a pass ends): exportEvent
//    puts the event into a single-producer ring (no lock, no system call, no
//    allocation) and a thread of the forwarder delivers what is there and
//    flushes every NIXL_TELEMETRY_RUN_INTERVAL milliseconds (NIXL's own export
//    interval, default 100). A full ring loses the event; losses are counted,
//    reported to the exporter as an agent_telemetry_events_dropped event and
//    logged.
//
// Only one thread calls the exporter at a time. Its failures are counted and
// logged (each distinct reason once, a summary at most every 10 s) and never
// reach NIXL: exportEvent always succeeds for NIXL. An exporter that reports
// a panic is called no more (but destroyed). Nothing here throws.
#ifndef NIXL_ADAPTERS_FORWARDER_HPP
#define NIXL_ADAPTERS_FORWARDER_HPP

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nixl_telemetry_plugin.h"
#include "our_plugin.hpp"

namespace nixl_adapters {

enum class Delivery {
    kBatchHooks,   // NIXL brackets each export pass (1.5)
    kFlushThread,  // it does not (up to 1.4)
};

enum class Stamp {
    kKeep,         // NIXL's events carry their time (up to 1.0)
    kAtDelivery,   // they carry none (1.1 on): each batch gets the time it is handed over
};

struct ForwarderSettings {
    std::string exporter;  // the name NIXL knows the exporter by, for messages
    std::string agent;
    size_t max_batch = 0;  // NIXL's maxEventsBuffered: no batch is larger
    Delivery delivery = Delivery::kFlushThread;
    Stamp stamp = Stamp::kAtDelivery;
};

class Forwarder {
public:
    // Creates the agent's exporter in `plugin` (the environment gives its
    // output path, as to our own host: NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH)
    // and starts the flush thread if the delivery needs one. nullptr, with
    // the reason in `error`, on failure.
    static std::unique_ptr<Forwarder> create(std::shared_ptr<OurPlugin> plugin,
                                             ForwarderSettings settings,
                                             std::string *error) noexcept;

    // Delivers what is left, flushes, stops the thread, destroys the exporter.
    ~Forwarder();

    Forwarder(const Forwarder &) = delete;
    Forwarder &operator=(const Forwarder &) = delete;

    // One event from NIXL's thread (timestamp already set when NIXL gives one).
    void push(const nixl_telemetry_event_t &event) noexcept;
    // The export pass brackets of NIXL 1.5 (Delivery::kBatchHooks).
    void begin_batch() noexcept;
    void end_batch() noexcept;

private:
    Forwarder(std::shared_ptr<OurPlugin> plugin, ForwarderSettings settings, void *exporter);

    void run() noexcept;             // the flush thread
    void drain() noexcept;           // ring -> exporter (the consumer)
    void deliver(nixl_telemetry_event_t *events, size_t count) noexcept;
    void flush() noexcept;
    void failed(const char *call, int32_t code, size_t events) noexcept;
    void report_losses(bool final_report) noexcept;

    const std::shared_ptr<OurPlugin> plugin_;
    const ForwarderSettings settings_;
    void *const exporter_;

    // Delivery::kBatchHooks
    std::vector<nixl_telemetry_event_t> batch_;
    bool in_batch_ = false;
    uint64_t batch_time_ = 0;

    // Delivery::kFlushThread: the ring (one producer: NIXL's thread; one
    // consumer: the flush thread, or the destructor once it is joined).
    std::unique_ptr<nixl_telemetry_event_t[]> ring_;
    uint64_t mask_ = 0;
    alignas(64) std::atomic<uint64_t> head_{0};
    uint64_t tail_seen_ = 0;  // the producer's copy of tail_
    alignas(64) std::atomic<uint64_t> tail_{0};
    std::atomic<uint64_t> overflowed_{0};
    std::chrono::milliseconds interval_{100};
    std::mutex wake_lock_;
    std::condition_variable wake_;
    bool stop_ = false;
    std::thread thread_;

    // The consumer's books.
    bool disabled_ = false;
    uint64_t delivered_ = 0;
    uint64_t lost_ = 0;
    uint64_t lost_reported_ = 0;
    uint64_t failed_calls_ = 0;
    std::chrono::steady_clock::time_point last_report_;
    std::vector<std::string> reasons_;
};

}  // namespace nixl_adapters

#endif
