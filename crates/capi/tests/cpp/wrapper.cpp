// The C++ wrapper: RAII ownership, moves (a moved-from object destroys
// nothing, so nothing is destroyed twice), noexcept record calls, factories
// that throw nixl_telemetry::Error with the library's message, and their
// noexcept twins. Usage: wrapper <ring directory>. Exit 0 when all passed.
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "nixl_telemetry.hpp"

namespace nt = nixl_telemetry;

static int failures = 0;
#define EXPECT(cond)                                                              \
    do {                                                                          \
        if (!(cond)) {                                                            \
            std::fprintf(stderr, "%s:%d: %s is false\n", __FILE__, __LINE__, #cond); \
            failures++;                                                           \
        }                                                                         \
    } while (0)

static_assert(noexcept(std::declval<nt::Handle &>().record(1)), "handle record is noexcept");
static_assert(noexcept(std::declval<nt::Telemetry &>().transfer_completed(1, nt::Direction::Write, 1)),
              "transfer_completed is noexcept");
static_assert(noexcept(std::declval<nt::Telemetry &>().record(nt::Category::Custom, "x", 1)),
              "record is noexcept");
static_assert(noexcept(std::declval<nt::Telemetry &>().flush()), "flush is noexcept");
static_assert(noexcept(std::declval<nt::Telemetry &>().stats()), "stats is noexcept");
static_assert(std::is_nothrow_move_constructible<nt::Telemetry>::value, "Telemetry moves");
static_assert(std::is_nothrow_move_assignable<nt::Handle>::value, "Handle moves");
static_assert(!std::is_copy_constructible<nt::Telemetry>::value, "Telemetry is not copied");
static_assert(!std::is_copy_constructible<nt::Handle>::value, "Handle is not copied");

static nt::Telemetry make(const char *dir) {
    nixl_telemetry_settings_t settings = nt::default_settings();
    settings.ring_directory = dir;
    settings.buffer_size = 1024;
    return nt::Telemetry::create("cpp-wrapper", settings);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <ring directory>\n", argv[0]);
        return 2;
    }
    {
        nt::Telemetry telemetry = make(argv[1]);
        EXPECT(telemetry && telemetry.enabled());
        nt::Handle writes = telemetry.handle(nt::Category::Backend, "cpp_handle");
        EXPECT(writes.record(1) == NIXL_TELEMETRY_OK);

        // Moves: the moved-from objects hold nothing and record nothing.
        nt::Handle moved_handle(std::move(writes));
        EXPECT(!writes && moved_handle);
        EXPECT(writes.record(100) == NIXL_TELEMETRY_ERR_NULL);
        EXPECT(moved_handle.record(2) == NIXL_TELEMETRY_OK);
        nt::Telemetry moved(std::move(telemetry));
        EXPECT(!telemetry && moved);
        EXPECT(telemetry.record(nt::Category::Custom, "lost", 1) == NIXL_TELEMETRY_ERR_NULL);
        EXPECT(telemetry.stats().recorded == 0);
        EXPECT(moved.transfer_completed(120, nt::Direction::Write, 4096) == NIXL_TELEMETRY_OK);
        EXPECT(moved.record(nt::Category::Custom, "cpp_generic", 3) == NIXL_TELEMETRY_OK);
        EXPECT(moved.error("NIXL_ERR_BACKEND") == NIXL_TELEMETRY_OK);

        // Bad input through the noexcept calls: a status, nothing recorded.
        EXPECT(moved.record(static_cast<nt::Category>(42), "x", 1) == NIXL_TELEMETRY_ERR_INVALID_CATEGORY);
        EXPECT(moved.record(nt::Category::Custom, "", 1) == NIXL_TELEMETRY_ERR_INVALID_NAME);
        EXPECT(moved.transfer_completed(1, static_cast<nt::Direction>(5), 1) ==
               NIXL_TELEMETRY_ERR_INVALID_ARGUMENT);

        // Move assignment over a live object destroys the old one once.
        nt::Handle other = moved.handle(nt::Category::Custom, "cpp_other");
        other = std::move(moved_handle);
        EXPECT(!moved_handle && other);
        EXPECT(other.record(4) == NIXL_TELEMETRY_OK);
        other = std::move(other); // self-move keeps the handle
        EXPECT(other);

        EXPECT(moved.flush() == NIXL_TELEMETRY_OK);
        nixl_telemetry_stats_t stats = moved.stats();
        EXPECT(stats.recorded == 8 && stats.delivered == 8 && stats.dropped_total == 0);

        // Destroy explicitly, then let the destructors run: nothing twice.
        moved.reset();
        moved.reset();
        EXPECT(!moved);
    }

    // Factories throw nt::Error with the status and the library's message.
    bool thrown = false;
    try {
        nixl_telemetry_settings_t settings = nt::default_settings();
        settings.buffer_size = 1000;
        nt::Telemetry::create("cpp-wrapper-bad", settings);
    } catch (const nt::Error &e) {
        thrown = true;
        EXPECT(e.status() == NIXL_TELEMETRY_ERR_CONFIG);
        EXPECT(std::strstr(e.what(), "settings.buffer_size=\"1000\"") != nullptr);
    }
    EXPECT(thrown);
    thrown = false;
    try {
        nt::Telemetry::from_env("a/b");
    } catch (const nt::Error &e) {
        thrown = true;
        EXPECT(e.status() == NIXL_TELEMETRY_ERR_INVALID_NAME);
    }
    EXPECT(thrown);
    thrown = false;
    try {
        nt::Telemetry empty;
        empty.handle(nt::Category::Custom, "x");
    } catch (const nt::Error &e) {
        thrown = true;
        EXPECT(e.status() == NIXL_TELEMETRY_ERR_NULL);
    }
    EXPECT(thrown);

    // The noexcept twins.
    nt::Telemetry t;
    std::string message;
    EXPECT(nt::Telemetry::try_from_env("", t, &message) == NIXL_TELEMETRY_ERR_INVALID_NAME);
    EXPECT(!t && message.find("empty") != std::string::npos);
    EXPECT(nt::Telemetry::try_from_env("cpp-wrapper-off", t, &message) == NIXL_TELEMETRY_OK);
    EXPECT(t && !t.enabled() && message.empty());
    nt::Handle h;
    EXPECT(t.try_handle(nt::Category::Custom, "\xff", h, &message) == NIXL_TELEMETRY_ERR_INVALID_NAME);
    EXPECT(!h && message.find("UTF-8") != std::string::npos);
    EXPECT(std::strstr(nt::status_string(NIXL_TELEMETRY_ERR_NULL), "NIXL_TELEMETRY_ERR_NULL") != nullptr);
    EXPECT(nt::Telemetry::now_us() > 0);

    // release() hands the C object over; the caller destroys it.
    nixl_telemetry_t *raw = t.release();
    EXPECT(!t && raw != nullptr);
    EXPECT(nixl_telemetry_destroy(raw) == NIXL_TELEMETRY_OK);

    if (failures != 0) {
        std::fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    std::printf("wrapper: all checks passed\n");
    return 0;
}
