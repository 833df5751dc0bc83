/*
 * nixl_telemetry.hpp - header-only C++ (C++11 or later) wrapper of nixl_telemetry.h.
 *
 *   nixl_telemetry::Telemetry telemetry = nixl_telemetry::Telemetry::from_env("initiator");
 *   nixl_telemetry::Handle writes =
 *       telemetry.handle(nixl_telemetry::Category::Backend, "ucx_rdma_writes");
 *   writes.record(1);
 *   telemetry.transfer_completed(120, nixl_telemetry::Direction::Write, 4096);
 *
 * Ownership: Telemetry and Handle own their C object (RAII), are movable and
 * not copyable; a moved-from object holds nothing, records nothing and
 * destroys nothing, so an object is destroyed exactly once. The destructor
 * of Telemetry flushes, stops the flush thread and closes the exporter.
 *
 * Exceptions: only the factories throw, and only nixl_telemetry::Error (or
 * std::bad_alloc from building its message): Telemetry::from_env,
 * Telemetry::create and Telemetry::handle, when the C call refuses the input.
 * Every other member is noexcept and returns the C status (int32_t, 0 = ok).
 * Each factory has a noexcept twin (try_from_env, try_create, try_handle)
 * returning the status and writing the message into a std::string, for code
 * built without exceptions (-fno-exceptions: only the twins are declared).
 */
#ifndef NIXL_TELEMETRY_HPP
#define NIXL_TELEMETRY_HPP

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "nixl_telemetry.h"

namespace nixl_telemetry {

/* Event categories: the numbers of nixl_telemetry.h. */
enum class Category : int32_t {
    Memory = NIXL_TELEMETRY_CATEGORY_MEMORY,
    Transfer = NIXL_TELEMETRY_CATEGORY_TRANSFER,
    Connection = NIXL_TELEMETRY_CATEGORY_CONNECTION,
    Backend = NIXL_TELEMETRY_CATEGORY_BACKEND,
    Error = NIXL_TELEMETRY_CATEGORY_ERROR,
    Performance = NIXL_TELEMETRY_CATEGORY_PERFORMANCE,
    System = NIXL_TELEMETRY_CATEGORY_SYSTEM,
    Custom = NIXL_TELEMETRY_CATEGORY_CUSTOM,
};

/* Transfer directions. */
enum class Direction : int32_t {
    Read = NIXL_TELEMETRY_DIRECTION_READ,
    Write = NIXL_TELEMETRY_DIRECTION_WRITE,
};

/* What a factory throws: the C status and the library's message. */
class Error : public std::runtime_error {
public:
    Error(int32_t status, const std::string &message)
        : std::runtime_error(message), status_(status) {}
    int32_t status() const noexcept { return status_; }

private:
    int32_t status_;
};

/* Settings for Telemetry::create: nixl_telemetry_settings_t, zeroed, with its
 * struct_size set (0 and NULL mean the defaults; see nixl_telemetry.h). */
inline nixl_telemetry_settings_t default_settings() noexcept {
    nixl_telemetry_settings_t settings = nixl_telemetry_settings_t();
    settings.struct_size = static_cast<uint32_t>(sizeof(nixl_telemetry_settings_t));
    settings.enabled = 1;
    return settings;
}

namespace detail {
/* Room for the longest message the library writes, with its search trail. */
const std::size_t kErrorBufferLen = 4096;

inline void set_message(std::string *message, const char *text) noexcept {
    if (message == nullptr) {
        return;
    }
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
    try {
        message->assign(text);
    } catch (...) {
        /* No memory for the message: the status still says what failed. */
    }
#else
    message->assign(text);
#endif
}
} // namespace detail

/* A pre-resolved (category, name) pair: the fast path. */
class Handle {
public:
    Handle() noexcept : handle_(nullptr) {}
    /* Takes ownership of a handle from nixl_telemetry_handle_create. */
    explicit Handle(nixl_telemetry_handle_t *handle) noexcept : handle_(handle) {}
    ~Handle() { reset(); }
    Handle(Handle &&other) noexcept : handle_(other.handle_) { other.handle_ = nullptr; }
    Handle &operator=(Handle &&other) noexcept {
        if (this != &other) {
            reset();
            handle_ = other.handle_;
            other.handle_ = nullptr;
        }
        return *this;
    }
    Handle(const Handle &) = delete;
    Handle &operator=(const Handle &) = delete;

    /* Records value now. NIXL_TELEMETRY_ERR_NULL when empty (moved from). */
    int32_t record(uint64_t value) const noexcept {
        return nixl_telemetry_handle_record(handle_, value);
    }
    /* Records value with the caller's timestamp (us since the epoch). */
    int32_t record_at(uint64_t timestamp_us, uint64_t value) const noexcept {
        return nixl_telemetry_handle_record_at(handle_, timestamp_us, value);
    }
    /* Whether this object owns a handle. */
    explicit operator bool() const noexcept { return handle_ != nullptr; }
    nixl_telemetry_handle_t *get() const noexcept { return handle_; }
    /* Gives the handle up to the caller, who must destroy it. */
    nixl_telemetry_handle_t *release() noexcept {
        nixl_telemetry_handle_t *handle = handle_;
        handle_ = nullptr;
        return handle;
    }
    /* Destroys the handle now (no-op when empty). */
    void reset() noexcept {
        nixl_telemetry_handle_destroy(handle_);
        handle_ = nullptr;
    }

private:
    nixl_telemetry_handle_t *handle_;
};

/* One agent's telemetry. */
class Telemetry {
public:
    Telemetry() noexcept : telemetry_(nullptr) {}
    /* Takes ownership of a telemetry from nixl_telemetry_create*. */
    explicit Telemetry(nixl_telemetry_t *telemetry) noexcept : telemetry_(telemetry) {}
    ~Telemetry() { reset(); }
    Telemetry(Telemetry &&other) noexcept : telemetry_(other.telemetry_) {
        other.telemetry_ = nullptr;
    }
    Telemetry &operator=(Telemetry &&other) noexcept {
        if (this != &other) {
            reset();
            telemetry_ = other.telemetry_;
            other.telemetry_ = nullptr;
        }
        return *this;
    }
    Telemetry(const Telemetry &) = delete;
    Telemetry &operator=(const Telemetry &) = delete;

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
    /* Configured from the NIXL_TELEMETRY_* variables. Throws Error. */
    static Telemetry from_env(const std::string &agent_name) {
        Telemetry telemetry;
        std::string message;
        int32_t status = try_from_env(agent_name.c_str(), telemetry, &message);
        if (status != NIXL_TELEMETRY_OK) {
            throw Error(status, message);
        }
        return telemetry;
    }

    /* Configured by settings (see default_settings()). Throws Error. */
    static Telemetry create(const std::string &agent_name,
                            const nixl_telemetry_settings_t &settings) {
        Telemetry telemetry;
        std::string message;
        int32_t status = try_create(agent_name.c_str(), settings, telemetry, &message);
        if (status != NIXL_TELEMETRY_OK) {
            throw Error(status, message);
        }
        return telemetry;
    }
#endif

    /* from_env without exceptions: the status; out receives the telemetry,
     * *message (if not NULL) the error message. */
    static int32_t try_from_env(const char *agent_name, Telemetry &out,
                                std::string *message) noexcept {
        char err[detail::kErrorBufferLen];
        nixl_telemetry_t *raw = nullptr;
        int32_t status = nixl_telemetry_create_from_env(agent_name, &raw, err, sizeof err);
        out = Telemetry(raw);
        detail::set_message(message, status == NIXL_TELEMETRY_OK ? "" : err);
        return status;
    }

    /* create without exceptions. */
    static int32_t try_create(const char *agent_name, const nixl_telemetry_settings_t &settings,
                              Telemetry &out, std::string *message) noexcept {
        char err[detail::kErrorBufferLen];
        nixl_telemetry_t *raw = nullptr;
        int32_t status = nixl_telemetry_create(agent_name, &settings, &raw, err, sizeof err);
        out = Telemetry(raw);
        detail::set_message(message, status == NIXL_TELEMETRY_OK ? "" : err);
        return status;
    }

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
    /* A handle for (category, name). Throws Error (an empty or non-UTF-8
     * name, an unknown category, an empty Telemetry). */
    Handle handle(Category category, const std::string &name) const {
        Handle handle;
        std::string message;
        int32_t status = try_handle(category, name.c_str(), handle, &message);
        if (status != NIXL_TELEMETRY_OK) {
            throw Error(status, message);
        }
        return handle;
    }
#endif

    /* handle without exceptions. */
    int32_t try_handle(Category category, const char *name, Handle &out,
                       std::string *message) const noexcept {
        char err[detail::kErrorBufferLen];
        nixl_telemetry_handle_t *raw = nullptr;
        int32_t status = nixl_telemetry_handle_create(
            telemetry_, static_cast<int32_t>(category), name, &raw, err, sizeof err);
        out = Handle(raw);
        detail::set_message(message, status == NIXL_TELEMETRY_OK ? "" : err);
        return status;
    }

    /* Recording: each returns the C status (0 = ok) and never throws. */
    int32_t record(Category category, const char *name, uint64_t value) const noexcept {
        return nixl_telemetry_record(telemetry_, static_cast<int32_t>(category), name, value);
    }
    int32_t transfer_completed(uint64_t duration_us, Direction direction,
                               uint64_t bytes) const noexcept {
        return nixl_telemetry_transfer_completed(telemetry_, duration_us,
                                                 static_cast<int32_t>(direction), bytes);
    }
    int32_t transfer_completed_at(uint64_t timestamp_us, uint64_t duration_us,
                                  Direction direction, uint64_t bytes) const noexcept {
        return nixl_telemetry_transfer_completed_at(
            telemetry_, timestamp_us, duration_us, static_cast<int32_t>(direction), bytes);
    }
    int32_t post_time(uint64_t us) const noexcept {
        return nixl_telemetry_post_time(telemetry_, us);
    }
    int32_t post_time_at(uint64_t timestamp_us, uint64_t us) const noexcept {
        return nixl_telemetry_post_time_at(telemetry_, timestamp_us, us);
    }
    int32_t memory_registered(uint64_t bytes) const noexcept {
        return nixl_telemetry_memory_registered(telemetry_, bytes);
    }
    int32_t memory_deregistered(uint64_t bytes) const noexcept {
        return nixl_telemetry_memory_deregistered(telemetry_, bytes);
    }
    int32_t error(const char *status) const noexcept {
        return nixl_telemetry_error(telemetry_, status);
    }
    int32_t backend_event(const char *name, uint64_t value) const noexcept {
        return nixl_telemetry_backend_event(telemetry_, name, value);
    }
    int32_t connection_event(const char *name, uint64_t value) const noexcept {
        return nixl_telemetry_connection_event(telemetry_, name, value);
    }
    int32_t flush() const noexcept { return nixl_telemetry_flush(telemetry_); }

    /* The accounting; all zero for an empty Telemetry. */
    nixl_telemetry_stats_t stats() const noexcept {
        nixl_telemetry_stats_t stats = nixl_telemetry_stats_t();
        stats.struct_size = static_cast<uint32_t>(sizeof(nixl_telemetry_stats_t));
        nixl_telemetry_stats(telemetry_, &stats);
        return stats;
    }
    bool enabled() const noexcept { return nixl_telemetry_is_enabled(telemetry_) == 1; }
    static uint64_t now_us() noexcept { return nixl_telemetry_now_us(); }

    explicit operator bool() const noexcept { return telemetry_ != nullptr; }
    nixl_telemetry_t *get() const noexcept { return telemetry_; }
    /* Gives the telemetry up to the caller, who must destroy it. */
    nixl_telemetry_t *release() noexcept {
        nixl_telemetry_t *telemetry = telemetry_;
        telemetry_ = nullptr;
        return telemetry;
    }
    /* Destroys now: flushes, stops the flush thread, closes the exporter. */
    void reset() noexcept {
        nixl_telemetry_destroy(telemetry_);
        telemetry_ = nullptr;
    }

private:
    nixl_telemetry_t *telemetry_;
};

/* The text of a status code. */
inline const char *status_string(int32_t status) noexcept {
    return nixl_telemetry_status_string(status);
}

} // namespace nixl_telemetry

#endif /* NIXL_TELEMETRY_HPP */
