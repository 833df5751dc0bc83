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
//    puts the event into a ring (no lock, no system call, no allocation). A
//    thread of the forwarder ticks every NIXL_TELEMETRY_RUN_INTERVAL
//    milliseconds (NIXL's own export interval, default 100). The first event
//    NIXL exports after a tick begins a new pass, so the events before it are a
//    finished pass: NIXL's thread delivers them then and flushes (if the
//    flush thread is not delivering at that moment), with its caches warm.
//    Every NIXL buffer's worth of events (a burst) is delivered at once the
//    same way. Events still waiting two ticks later (NIXL
//    went quiet) are delivered and flushed by the flush thread. So events reach
//    the exporter at most about three intervals after NIXL exports them. The ring
//    holds twice NIXL's buffer (at least 1024, at most 4 Mi events): one export
//    pass of NIXL never fills it. A full ring (an exporter that does not keep
//    up) loses the event; losses are counted, reported to the exporter as an
//    agent_telemetry_events_dropped event and logged.
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

    // One event from NIXL's thread, written in place: `fill(slot)` converts
    // NIXL's event into the slot (its timestamp too when NIXL gives one).
    // Inline: this is all an event costs NIXL's thread.
    template <class Fill> void push(Fill &&fill) noexcept {
        if (settings_.delivery == Delivery::kFlushThread) {
            const uint64_t tick = tick_.load(std::memory_order_relaxed);
            if (tick != producer_tick_) {
                producer_tick_ = tick;
                deliver_finished_pass();
            }
            const uint64_t head = head_.load(std::memory_order_relaxed);
            if (head - tail_seen_ > mask_ && ring_full(head)) {
                overflowed_.fetch_add(1, std::memory_order_relaxed);
                return;
            }
            fill(ring_[head & mask_]);
            head_.store(head + 1, std::memory_order_release);
            // Every `burst_` events (NIXL's buffer, to a power of two): a burst
            // is delivered while its events are still in the cache, long before
            // it could fill the ring (by the flush thread if it holds the lock).
            if (((head + 1) & (burst_ - 1)) == 0) {
                deliver_finished_pass();
            }
            return;
        }
        nixl_telemetry_event_t &slot = batch_[batch_count_];
        fill(slot);
        if (settings_.stamp == Stamp::kAtDelivery) {
            slot.timestamp_us = batch_time_;
        }
        if (++batch_count_ == batch_capacity_ || !in_batch_) {
            deliver_batch(!in_batch_);
        }
    }

    // The export pass brackets of NIXL 1.5 (Delivery::kBatchHooks).
    void begin_batch() noexcept;
    void end_batch() noexcept;

private:
    Forwarder(std::shared_ptr<OurPlugin> plugin, ForwarderSettings settings, void *exporter);

    bool ring_full(uint64_t head) noexcept;     // refreshes tail_seen_
    // On NIXL's thread, unless the flush thread holds the lock (then it is
    // woken to deliver).
    void deliver_finished_pass() noexcept;
    void deliver_batch(bool and_flush) noexcept;  // the batch so far, outside a pass: flushed too

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
    std::unique_ptr<nixl_telemetry_event_t[]> batch_;
    size_t batch_capacity_ = 0;
    size_t batch_count_ = 0;
    bool in_batch_ = false;
    uint64_t batch_time_ = 0;

    // Delivery::kFlushThread: the ring (one producer: NIXL's thread; one
    // consumer: the flush thread, or the destructor once it is joined).
    std::unique_ptr<nixl_telemetry_event_t[]> ring_;
    uint64_t mask_ = 0;
    uint64_t burst_ = 1;  // a power of two, at most half the ring
    alignas(64) std::atomic<uint64_t> head_{0};
    uint64_t tail_seen_ = 0;  // the producer's copy of tail_
    alignas(64) std::atomic<uint64_t> tail_{0};
    std::atomic<uint64_t> overflowed_{0};
    std::atomic<uint64_t> tick_{0};  // the flush thread's intervals
    uint64_t producer_tick_ = 0;     // the last tick NIXL's thread saw
    uint64_t head_at_tick_ = 0;      // the flush thread's: head at its previous tick
    uint64_t head_two_ticks_ago_ = 0;  // and at the one before
    // Held by whichever thread calls the exporter (and keeps the books below).
    std::mutex deliver_lock_;
    std::chrono::milliseconds interval_{100};
    std::mutex wake_lock_;
    std::condition_variable wake_;
    bool stop_ = false;
    std::thread thread_;

    // The books of the thread calling the exporter.
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
