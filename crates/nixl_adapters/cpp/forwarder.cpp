#include "forwarder.hpp"

#include <pthread.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "event_names.hpp"
#include "nixl_log.hpp"

namespace nixl_adapters {

namespace {

constexpr size_t kMaxReasons = 32;
constexpr std::chrono::seconds kReportInterval(10);
constexpr uint64_t kMinRing = 1024;
constexpr uint64_t kMaxRing = uint64_t{1} << 22;

// NIXL_TELEMETRY_RUN_INTERVAL as NIXL reads it (whole milliseconds, default
// 100); 0 (which NIXL accepts) and anything unreadable become 100 here.
std::chrono::milliseconds run_interval() noexcept {
    const char *text = std::getenv("NIXL_TELEMETRY_RUN_INTERVAL");
    if (text == nullptr || *text == '\0') {
        return std::chrono::milliseconds(100);
    }
    char *end = nullptr;
    const unsigned long long ms = std::strtoull(text, &end, 10);
    if (end == text || *end != '\0' || ms == 0 || ms > 3600000ULL) {
        return std::chrono::milliseconds(100);
    }
    return std::chrono::milliseconds(ms);
}

uint64_t ring_slots(size_t max_batch) noexcept {
    uint64_t want = std::max<uint64_t>(2 * static_cast<uint64_t>(max_batch) + 2, kMinRing);
    uint64_t slots = kMinRing;
    while (slots < want && slots < kMaxRing) {
        slots <<= 1;
    }
    return slots;
}

std::string code_text(int32_t code) {
    if (code == NIXL_TELEMETRY_EXPORT_PANICKED) {
        return "panicked";
    }
    return "returned " + std::to_string(code);
}

}  // namespace

std::unique_ptr<Forwarder> Forwarder::create(std::shared_ptr<OurPlugin> plugin,
                                             ForwarderSettings settings,
                                             std::string *error) noexcept {
    try {
        if (settings.max_batch == 0) {
            settings.max_batch = 1;
        }
        // As the sidecar does: "{agent}" in the output path is the agent's
        // name, so that each agent of the process gets its own file.
        const char *raw_output = std::getenv("NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH");
        std::string output = raw_output != nullptr ? raw_output : "";
        static const std::string kAgentPlaceholder = "{agent}";
        for (size_t at = output.find(kAgentPlaceholder); at != std::string::npos;
             at = output.find(kAgentPlaceholder, at + settings.agent.size())) {
            output.replace(at, kAgentPlaceholder.size(), settings.agent);
        }
        void *exporter = plugin->create(settings.agent, settings.max_batch,
                                        raw_output != nullptr ? output.c_str() : nullptr, error);
        if (exporter == nullptr) {
            return nullptr;
        }
        std::unique_ptr<Forwarder> forwarder;
        try {
            forwarder.reset(new Forwarder(plugin, settings, exporter));
        }
        catch (...) {
            plugin->destroy(exporter);
            throw;
        }
        if (settings.delivery == Delivery::kFlushThread) {
            forwarder->thread_ = std::thread(&Forwarder::run, forwarder.get());
        }
        return forwarder;
    }
    catch (const std::exception &e) {
        *error = std::string("cannot start forwarding: ") + e.what();
    }
    catch (...) {
        *error = "cannot start forwarding: unknown error";
    }
    return nullptr;
}

Forwarder::Forwarder(std::shared_ptr<OurPlugin> plugin, ForwarderSettings settings, void *exporter)
    : plugin_(std::move(plugin)),
      settings_(std::move(settings)),
      exporter_(exporter),
      last_report_(std::chrono::steady_clock::now()) {
    if (settings_.delivery == Delivery::kFlushThread) {
        const uint64_t slots = ring_slots(settings_.max_batch);
        ring_.reset(new nixl_telemetry_event_t[slots]);
        mask_ = slots - 1;
        while (burst_ * 2 <= settings_.max_batch && burst_ * 2 <= slots / 2) {
            burst_ *= 2;
        }
        interval_ = run_interval();
    } else {
        batch_capacity_ = std::min<size_t>(settings_.max_batch, 65536);
        batch_.reset(new nixl_telemetry_event_t[batch_capacity_]);
        batch_time_ = now_us();
    }
}

Forwarder::~Forwarder() {
    if (thread_.joinable()) {
        {
            std::lock_guard<std::mutex> hold(wake_lock_);
            stop_ = true;
        }
        wake_.notify_one();
        thread_.join();
    }
    std::lock_guard<std::mutex> books(deliver_lock_);
    if (settings_.delivery == Delivery::kFlushThread) {
        drain();
    } else if (batch_count_ > 0) {
        deliver(batch_.get(), batch_count_);
        batch_count_ = 0;
    }
    flush();
    report_losses(true);
    plugin_->destroy(exporter_);
}

void Forwarder::deliver_finished_pass() noexcept {
    std::unique_lock<std::mutex> hold(deliver_lock_, std::try_to_lock);
    if (!hold.owns_lock()) {
        wake_.notify_one();  // the flush thread is at it: it looks again at once
        return;
    }
    if (tail_.load(std::memory_order_relaxed) != head_.load(std::memory_order_relaxed)) {
        drain();
        flush();
    }
}

bool Forwarder::ring_full(uint64_t head) noexcept {
    tail_seen_ = tail_.load(std::memory_order_acquire);
    return head - tail_seen_ > mask_;
}

void Forwarder::deliver_batch(bool and_flush) noexcept {
    deliver(batch_.get(), batch_count_);
    batch_count_ = 0;
    if (and_flush) {
        // Outside a pass (no 1.5 release does this): on its own, at once.
        flush();
        batch_time_ = now_us();
    }
}

void Forwarder::begin_batch() noexcept {
    in_batch_ = true;
    if (settings_.stamp == Stamp::kAtDelivery) {
        batch_time_ = now_us();
    }
}

void Forwarder::end_batch() noexcept {
    if (batch_count_ > 0) {
        deliver(batch_.get(), batch_count_);
        batch_count_ = 0;
    }
    flush();
    in_batch_ = false;
}

void Forwarder::run() noexcept {
    pthread_setname_np(pthread_self(), "nixl-tel-adapt");
    std::unique_lock<std::mutex> hold(wake_lock_);
    while (!stop_) {
        // Woken at the interval, by a half-full ring, or to stop.
        wake_.wait_for(hold, interval_);
        if (stop_) {
            break;
        }
        hold.unlock();
        {
            std::lock_guard<std::mutex> books(deliver_lock_);
            const uint64_t tail = tail_.load(std::memory_order_relaxed);
            const uint64_t head = head_.load(std::memory_order_acquire);
            // Waiting since two ticks ago (NIXL went quiet: no new pass took
            // them), half a ring of them, or losses to report: deliver from here.
            if (tail < head_two_ticks_ago_ || head - tail > (mask_ >> 1) ||
                overflowed_.load(std::memory_order_relaxed) > 0) {
                drain();
                flush();
            }
            report_losses(false);
            head_two_ticks_ago_ = head_at_tick_;
            head_at_tick_ = head;
        }
        tick_.fetch_add(1, std::memory_order_relaxed);
        hold.lock();
    }
}

void Forwarder::drain() noexcept {
    uint64_t tail = tail_.load(std::memory_order_relaxed);
    const uint64_t head = head_.load(std::memory_order_acquire);
    const uint64_t stamp = settings_.stamp == Stamp::kAtDelivery ? now_us() : 0;
    while (tail != head) {
        const uint64_t at = tail & mask_;
        const size_t count = static_cast<size_t>(
            std::min<uint64_t>({head - tail, mask_ + 1 - at, settings_.max_batch}));
        nixl_telemetry_event_t *events = &ring_[at];
        if (settings_.stamp == Stamp::kAtDelivery) {
            for (size_t i = 0; i < count; ++i) {
                events[i].timestamp_us = stamp;
            }
        }
        deliver(events, count);
        tail += count;
        tail_.store(tail, std::memory_order_release);
    }
    const uint64_t overflowed = overflowed_.exchange(0, std::memory_order_relaxed);
    if (overflowed > 0) {
        lost_ += overflowed;
        nixl_telemetry_event_t dropped;
        dropped_event(overflowed, dropped);
        deliver(&dropped, 1);
        try {
            NIXL_ADAPTER_LOG(Severity::kWarning,
                             "nixl-telemetry adapter " + settings_.exporter + ", agent " +
                                 settings_.agent + ": " + std::to_string(overflowed) +
                                 " events lost: the adapter's queue was full (the exporter "
                                 "does not keep up)");
        }
        catch (...) {
        }
    }
}

void Forwarder::deliver(nixl_telemetry_event_t *events, size_t count) noexcept {
    while (count > 0) {
        const size_t n = std::min(count, settings_.max_batch);
        if (disabled_) {
            lost_ += n;
        } else {
            const int32_t rc = plugin_->export_batch(exporter_, events, n);
            if (rc == NIXL_TELEMETRY_EXPORT_OK) {
                delivered_ += n;
            } else {
                lost_ += n;
                failed("export_batch", rc, n);
            }
        }
        events += n;
        count -= n;
    }
}

void Forwarder::flush() noexcept {
    if (disabled_) {
        return;
    }
    const int32_t rc = plugin_->flush(exporter_);
    if (rc != NIXL_TELEMETRY_EXPORT_OK) {
        failed("flush", rc, 0);
    }
}

void Forwarder::failed(const char *call, int32_t code, size_t events) noexcept {
    ++failed_calls_;
    try {
        const std::string reason = plugin_->last_error(exporter_);
        const std::string who = "nixl-telemetry adapter " + settings_.exporter + " (" +
                                plugin_->path() + "), agent " + settings_.agent + ": ";
        if (code == NIXL_TELEMETRY_EXPORT_PANICKED) {
            disabled_ = true;
            NIXL_ADAPTER_LOG(Severity::kError,
                             who + call + (reason.empty() ? std::string(" panicked") : ": " + reason) +
                                 "; the exporter is disabled, its events are lost from now on");
            return;
        }
        const std::string text = reason.empty() ? std::string(call) + " " + code_text(code)
                                                : std::string(call) + " failed: " + reason;
        if (std::find(reasons_.begin(), reasons_.end(), text) != reasons_.end()) {
            return;
        }
        if (reasons_.size() < kMaxReasons) {
            reasons_.push_back(text);
            NIXL_ADAPTER_LOG(Severity::kWarning,
                             who + text +
                                 (events > 0 ? " (" + std::to_string(events) +
                                                   " event(s) of this call lost; each reason is "
                                                   "logged once, the losses every 10 s)"
                                             : std::string(" (each reason is logged once)")));
        } else if (reasons_.size() == kMaxReasons) {
            reasons_.push_back(std::string());
            NIXL_ADAPTER_LOG(Severity::kWarning,
                             who + std::to_string(kMaxReasons) +
                                 " distinct failure reasons logged; further new ones are not");
        }
    }
    catch (...) {
    }
}

void Forwarder::report_losses(bool final_report) noexcept {
    const uint64_t fresh = lost_ - lost_reported_;
    if (fresh == 0) {
        return;
    }
    const auto now = std::chrono::steady_clock::now();
    if (!final_report && now - last_report_ < kReportInterval) {
        return;
    }
    last_report_ = now;
    lost_reported_ = lost_;
    try {
        NIXL_ADAPTER_LOG(Severity::kWarning,
                         "nixl-telemetry adapter " + settings_.exporter + ", agent " +
                             settings_.agent + ": " + std::to_string(fresh) +
                             " events lost since the last report (" + std::to_string(lost_) +
                             " lost, " + std::to_string(delivered_) + " delivered in all" +
                             (final_report ? "; exporter closed)" : ")"));
    }
    catch (...) {
    }
}

}  // namespace nixl_adapters
