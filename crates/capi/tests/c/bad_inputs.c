/* Every function of nixl_telemetry.h with the inputs a careless host passes:
 * NULL, empty, over-long and non-UTF-8 names, unknown categories and
 * directions, bad struct sizes, a too-small error buffer, destroyed handles.
 * Then the valid calls, whose 18 events the Rust test finds in the ring.
 *
 * Usage: bad_inputs <ring directory>. Exit 0 when every check passed. Also
 * run under valgrind by scripts/test-capi.sh. */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nixl_telemetry.h"
#include "check.h"

#define AGENT "c-bad-inputs"

static const char BAD_UTF8[] = "bad\xff\xfename";
static const char CUT_UTF8[] = "ends_inside\xc3";

static char err[512];

static void reset_err(void) { memset(err, 'X', sizeof err); err[sizeof err - 1] = 0; }

static void creation_from_env(void) {
    nixl_telemetry_t *t = (nixl_telemetry_t *)&t; /* not NULL: must be overwritten */

    reset_err();
    CHECK_EQ(nixl_telemetry_create_from_env(NULL, &t, err, sizeof err), NIXL_TELEMETRY_ERR_NULL);
    CHECK_TRUE(t == NULL);
    CHECK_CONTAINS(err, "agent name is NULL");

    reset_err();
    CHECK_EQ(nixl_telemetry_create_from_env(AGENT, NULL, err, sizeof err), NIXL_TELEMETRY_ERR_NULL);
    CHECK_CONTAINS(err, "out is NULL");

    CHECK_EQ(nixl_telemetry_create_from_env("", &t, err, sizeof err), NIXL_TELEMETRY_ERR_INVALID_NAME);
    CHECK_CONTAINS(err, "it is empty");
    CHECK_EQ(nixl_telemetry_create_from_env(BAD_UTF8, &t, err, sizeof err), NIXL_TELEMETRY_ERR_INVALID_NAME);
    CHECK_CONTAINS(err, "not valid UTF-8");
    CHECK_EQ(nixl_telemetry_create_from_env("a/b", &t, err, sizeof err), NIXL_TELEMETRY_ERR_INVALID_NAME);
    CHECK_CONTAINS(err, "'/'");

    char long_agent[301];
    memset(long_agent, 'a', 300);
    long_agent[300] = 0;
    CHECK_EQ(nixl_telemetry_create_from_env(long_agent, &t, err, sizeof err), NIXL_TELEMETRY_ERR_INVALID_NAME);
    CHECK_CONTAINS(err, "longer than 255 bytes");
    CHECK_TRUE(t == NULL);

    /* A too-small buffer gets the message's start, NUL-terminated; the bytes
     * after it are untouched. */
    char small[16];
    memset(small, '#', sizeof small);
    CHECK_EQ(nixl_telemetry_create_from_env("", &t, small, 8), NIXL_TELEMETRY_ERR_INVALID_NAME);
    CHECK_EQ(strlen(small), 7);
    CHECK_TRUE(strncmp(small, "agent n", 7) == 0);
    for (size_t i = 8; i < sizeof small; i++) CHECK_EQ(small[i], '#');
    /* One byte: only the terminator. Zero bytes, or no buffer: nothing written. */
    memset(small, '#', sizeof small);
    CHECK_EQ(nixl_telemetry_create_from_env("", &t, small, 1), NIXL_TELEMETRY_ERR_INVALID_NAME);
    CHECK_EQ(small[0], 0);
    CHECK_EQ(small[1], '#');
    memset(small, '#', sizeof small);
    CHECK_EQ(nixl_telemetry_create_from_env("", &t, small, 0), NIXL_TELEMETRY_ERR_INVALID_NAME);
    CHECK_EQ(small[0], '#');
    CHECK_EQ(nixl_telemetry_create_from_env("", &t, NULL, 100), NIXL_TELEMETRY_ERR_INVALID_NAME);

    /* A bad variable: named in the message, with what is accepted. */
    setenv("NIXL_TELEMETRY_ENABLE", "1", 1);
    setenv("NIXL_TELEMETRY_BUFFER_SIZE", "1000", 1);
    CHECK_EQ(nixl_telemetry_create_from_env(AGENT, &t, err, sizeof err), NIXL_TELEMETRY_ERR_CONFIG);
    CHECK_CONTAINS(err, "NIXL_TELEMETRY_BUFFER_SIZE=\"1000\" is invalid; accepted: a power of two");
    unsetenv("NIXL_TELEMETRY_BUFFER_SIZE");
    setenv("NIXL_TELEMETRY_ENABLE", "maybe", 1);
    CHECK_EQ(nixl_telemetry_create_from_env(AGENT, &t, err, sizeof err), NIXL_TELEMETRY_ERR_CONFIG);
    CHECK_CONTAINS(err, "NIXL_TELEMETRY_ENABLE");
    setenv("NIXL_TELEMETRY_ENABLE", "1", 1);
    setenv("NIXL_TELEMETRY_EXPORTER", "no_such_exporter_plugin", 1);
    CHECK_EQ(nixl_telemetry_create_from_env(AGENT, &t, err, sizeof err), NIXL_TELEMETRY_ERR_EXPORTER);
    CHECK_CONTAINS(err, "libtelemetry_exporter_no_such_exporter_plugin.so not found");
    unsetenv("NIXL_TELEMETRY_EXPORTER");

    /* Telemetry off: a valid object that records nothing. */
    unsetenv("NIXL_TELEMETRY_ENABLE");
    reset_err();
    CHECK_EQ(nixl_telemetry_create_from_env(AGENT, &t, err, sizeof err), NIXL_TELEMETRY_OK);
    CHECK_EQ(err[0], 0);
    CHECK_TRUE(t != NULL);
    CHECK_EQ(nixl_telemetry_is_enabled(t), 0);
    CHECK_EQ(nixl_telemetry_record(t, NIXL_TELEMETRY_CATEGORY_CUSTOM, "off", 1), NIXL_TELEMETRY_OK);
    nixl_telemetry_handle_t *h = NULL;
    CHECK_EQ(nixl_telemetry_handle_create(t, NIXL_TELEMETRY_CATEGORY_CUSTOM, "off", &h, err, sizeof err),
             NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_handle_record(h, 1), NIXL_TELEMETRY_OK);
    nixl_telemetry_stats_t stats;
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    CHECK_EQ(nixl_telemetry_stats(t, &stats), NIXL_TELEMETRY_OK);
    CHECK_EQ(stats.recorded, 0);
    CHECK_EQ(nixl_telemetry_handle_destroy(h), NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_destroy(t), NIXL_TELEMETRY_OK);
}

static nixl_telemetry_settings_t settings_for(const char *ring_dir) {
    nixl_telemetry_settings_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    s.enabled = 1;
    s.buffer_size = 1024;
    s.run_interval_ms = 10;
    s.ring_directory = ring_dir;
    return s;
}

static void creation_from_settings(const char *ring_dir) {
    nixl_telemetry_t *t = NULL;
    nixl_telemetry_settings_t s = settings_for(ring_dir);

    CHECK_EQ(nixl_telemetry_create(AGENT, NULL, &t, err, sizeof err), NIXL_TELEMETRY_ERR_NULL);
    CHECK_CONTAINS(err, "settings is NULL");
    CHECK_EQ(nixl_telemetry_create(AGENT, &s, NULL, err, sizeof err), NIXL_TELEMETRY_ERR_NULL);
    CHECK_EQ(nixl_telemetry_create(NULL, &s, &t, err, sizeof err), NIXL_TELEMETRY_ERR_NULL);
    CHECK_EQ(nixl_telemetry_create(BAD_UTF8, &s, &t, err, sizeof err), NIXL_TELEMETRY_ERR_INVALID_NAME);

    s.struct_size = 0;
    CHECK_EQ(nixl_telemetry_create(AGENT, &s, &t, err, sizeof err), NIXL_TELEMETRY_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(err, "settings.struct_size=0 is invalid");
    s.struct_size = NIXL_TELEMETRY_SETTINGS_V1_SIZE - 8;
    CHECK_EQ(nixl_telemetry_create(AGENT, &s, &t, err, sizeof err), NIXL_TELEMETRY_ERR_INVALID_ARGUMENT);

    /* A newer caller's larger struct: fine while its unknown fields are 0. */
    struct {
        nixl_telemetry_settings_t v1;
        uint64_t newer_field;
    } larger;
    memset(&larger, 0, sizeof larger);
    larger.v1 = settings_for(ring_dir);
    larger.v1.struct_size = sizeof larger;
    larger.v1.exporter = "nop";
    CHECK_EQ(nixl_telemetry_create(AGENT, &larger.v1, &t, err, sizeof err), NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_destroy(t), NIXL_TELEMETRY_OK);
    larger.newer_field = 1;
    CHECK_EQ(nixl_telemetry_create(AGENT, &larger.v1, &t, err, sizeof err), NIXL_TELEMETRY_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(err, "past 72 are zero");
    CHECK_TRUE(t == NULL);

    /* A version-1 caller's struct ends before ring_version: never read. */
    s = settings_for(ring_dir);
    s.exporter = "nop";
    s.struct_size = NIXL_TELEMETRY_SETTINGS_V1_SIZE;
    s.ring_version = "not read";
    CHECK_EQ(nixl_telemetry_create(AGENT, &s, &t, err, sizeof err), NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_destroy(t), NIXL_TELEMETRY_OK);
    s.struct_size = sizeof s;
    s.ring_version = "5";
    CHECK_EQ(nixl_telemetry_create(AGENT, &s, &t, err, sizeof err), NIXL_TELEMETRY_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(err, "settings.ring_version=5 is invalid");
    CHECK_TRUE(t == NULL);
    s.ring_version = "4";
    CHECK_EQ(nixl_telemetry_create(AGENT, &s, &t, err, sizeof err), NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_destroy(t), NIXL_TELEMETRY_OK);

    s = settings_for(ring_dir);
    s.buffer_size = 1000;
    CHECK_EQ(nixl_telemetry_create(AGENT, &s, &t, err, sizeof err), NIXL_TELEMETRY_ERR_CONFIG);
    CHECK_CONTAINS(err, "settings.buffer_size=\"1000\" is invalid; accepted: a power of two");
    s = settings_for(NULL);
    s.exporter = "buffer";
    CHECK_EQ(nixl_telemetry_create(AGENT, &s, &t, err, sizeof err), NIXL_TELEMETRY_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(err, "settings.ring_directory");
    s.exporter = "../evil";
    CHECK_EQ(nixl_telemetry_create(AGENT, &s, &t, err, sizeof err), NIXL_TELEMETRY_ERR_CONFIG);
    CHECK_CONTAINS(err, "settings.exporter");
    s.exporter = "no_such_exporter_plugin";
    CHECK_EQ(nixl_telemetry_create(AGENT, &s, &t, err, sizeof err), NIXL_TELEMETRY_ERR_EXPORTER);
    CHECK_CONTAINS(err, "not found");
    s = settings_for(BAD_UTF8);
    CHECK_EQ(nixl_telemetry_create(AGENT, &s, &t, err, sizeof err), NIXL_TELEMETRY_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(err, "settings.ring_directory");
    s = settings_for("/dev/null/not_a_directory");
    CHECK_EQ(nixl_telemetry_create(AGENT, &s, &t, err, sizeof err), NIXL_TELEMETRY_ERR_EXPORTER);
    CHECK_CONTAINS(err, "/dev/null/not_a_directory");
    CHECK_TRUE(t == NULL);
}

/* A call with a NULL telemetry or handle records nothing and says so. */
static void null_objects(void) {
    CHECK_EQ(nixl_telemetry_handle_record(NULL, 1), NIXL_TELEMETRY_ERR_NULL);
    CHECK_EQ(nixl_telemetry_handle_record_at(NULL, 1, 1), NIXL_TELEMETRY_ERR_NULL);
    CHECK_EQ(nixl_telemetry_record(NULL, NIXL_TELEMETRY_CATEGORY_CUSTOM, "x", 1), NIXL_TELEMETRY_ERR_NULL);
    CHECK_EQ(nixl_telemetry_transfer_completed(NULL, 1, NIXL_TELEMETRY_DIRECTION_WRITE, 1), NIXL_TELEMETRY_ERR_NULL);
    CHECK_EQ(nixl_telemetry_transfer_completed_at(NULL, 1, 1, NIXL_TELEMETRY_DIRECTION_READ, 1), NIXL_TELEMETRY_ERR_NULL);
    CHECK_EQ(nixl_telemetry_post_time(NULL, 1), NIXL_TELEMETRY_ERR_NULL);
    CHECK_EQ(nixl_telemetry_post_time_at(NULL, 1, 1), NIXL_TELEMETRY_ERR_NULL);
    CHECK_EQ(nixl_telemetry_memory_registered(NULL, 1), NIXL_TELEMETRY_ERR_NULL);
    CHECK_EQ(nixl_telemetry_memory_deregistered(NULL, 1), NIXL_TELEMETRY_ERR_NULL);
    CHECK_EQ(nixl_telemetry_error(NULL, "NIXL_ERR_BACKEND"), NIXL_TELEMETRY_ERR_NULL);
    CHECK_EQ(nixl_telemetry_backend_event(NULL, "x", 1), NIXL_TELEMETRY_ERR_NULL);
    CHECK_EQ(nixl_telemetry_connection_event(NULL, "x", 1), NIXL_TELEMETRY_ERR_NULL);
    CHECK_EQ(nixl_telemetry_flush(NULL), NIXL_TELEMETRY_ERR_NULL);
    nixl_telemetry_stats_t stats;
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    CHECK_EQ(nixl_telemetry_stats(NULL, &stats), NIXL_TELEMETRY_ERR_NULL);
    CHECK_EQ(nixl_telemetry_is_enabled(NULL), NIXL_TELEMETRY_ERR_NULL);
    nixl_telemetry_handle_t *h = (nixl_telemetry_handle_t *)&h;
    CHECK_EQ(nixl_telemetry_handle_create(NULL, NIXL_TELEMETRY_CATEGORY_CUSTOM, "x", &h, err, sizeof err),
             NIXL_TELEMETRY_ERR_NULL);
    CHECK_TRUE(h == NULL);
    CHECK_CONTAINS(err, "telemetry is NULL");
    CHECK_EQ(nixl_telemetry_handle_destroy(NULL), NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_destroy(NULL), NIXL_TELEMETRY_OK);
}

static void names_and_numbers(nixl_telemetry_t *t) {
    nixl_telemetry_handle_t *h = NULL;
    CHECK_EQ(nixl_telemetry_handle_create(t, NIXL_TELEMETRY_CATEGORY_CUSTOM, "x", NULL, err, sizeof err),
             NIXL_TELEMETRY_ERR_NULL);
    CHECK_EQ(nixl_telemetry_handle_create(t, 8, "x", &h, err, sizeof err), NIXL_TELEMETRY_ERR_INVALID_CATEGORY);
    CHECK_CONTAINS(err, "category 8 is unknown; accepted: 0 MEMORY");
    CHECK_EQ(nixl_telemetry_handle_create(t, -1, "x", &h, err, sizeof err), NIXL_TELEMETRY_ERR_INVALID_CATEGORY);
    CHECK_EQ(nixl_telemetry_handle_create(t, NIXL_TELEMETRY_CATEGORY_CUSTOM, NULL, &h, err, sizeof err),
             NIXL_TELEMETRY_ERR_NULL);
    CHECK_CONTAINS(err, "event name is NULL");
    CHECK_EQ(nixl_telemetry_handle_create(t, NIXL_TELEMETRY_CATEGORY_CUSTOM, "", &h, err, sizeof err),
             NIXL_TELEMETRY_ERR_INVALID_NAME);
    CHECK_CONTAINS(err, "it is empty");
    CHECK_EQ(nixl_telemetry_handle_create(t, NIXL_TELEMETRY_CATEGORY_CUSTOM, BAD_UTF8, &h, err, sizeof err),
             NIXL_TELEMETRY_ERR_INVALID_NAME);
    CHECK_CONTAINS(err, "not valid UTF-8");
    CHECK_EQ(nixl_telemetry_handle_create(t, NIXL_TELEMETRY_CATEGORY_CUSTOM, CUT_UTF8, &h, err, sizeof err),
             NIXL_TELEMETRY_ERR_INVALID_NAME);
    CHECK_CONTAINS(err, "ends inside a UTF-8 character");
    CHECK_TRUE(h == NULL);

    const int32_t bad_categories[] = {8, -1, 1000, INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < sizeof bad_categories / sizeof bad_categories[0]; i++) {
        CHECK_EQ(nixl_telemetry_record(t, bad_categories[i], "x", 1), NIXL_TELEMETRY_ERR_INVALID_CATEGORY);
    }
    CHECK_EQ(nixl_telemetry_record(t, NIXL_TELEMETRY_CATEGORY_CUSTOM, NULL, 1), NIXL_TELEMETRY_ERR_NULL);
    CHECK_EQ(nixl_telemetry_record(t, NIXL_TELEMETRY_CATEGORY_CUSTOM, "", 1), NIXL_TELEMETRY_ERR_INVALID_NAME);
    CHECK_EQ(nixl_telemetry_record(t, NIXL_TELEMETRY_CATEGORY_CUSTOM, BAD_UTF8, 1), NIXL_TELEMETRY_ERR_INVALID_NAME);
    CHECK_EQ(nixl_telemetry_record(t, NIXL_TELEMETRY_CATEGORY_CUSTOM, CUT_UTF8, 1), NIXL_TELEMETRY_ERR_INVALID_NAME);
    CHECK_EQ(nixl_telemetry_transfer_completed(t, 1, 2, 1), NIXL_TELEMETRY_ERR_INVALID_ARGUMENT);
    CHECK_EQ(nixl_telemetry_transfer_completed(t, 1, -1, 1), NIXL_TELEMETRY_ERR_INVALID_ARGUMENT);
    CHECK_EQ(nixl_telemetry_transfer_completed_at(t, 1, 1, 7, 1), NIXL_TELEMETRY_ERR_INVALID_ARGUMENT);
    const char *bad_names[] = {NULL, "", BAD_UTF8, CUT_UTF8};
    const int32_t want[] = {NIXL_TELEMETRY_ERR_NULL, NIXL_TELEMETRY_ERR_INVALID_NAME,
                            NIXL_TELEMETRY_ERR_INVALID_NAME, NIXL_TELEMETRY_ERR_INVALID_NAME};
    for (size_t i = 0; i < 4; i++) {
        CHECK_EQ(nixl_telemetry_error(t, bad_names[i]), want[i]);
        CHECK_EQ(nixl_telemetry_backend_event(t, bad_names[i], 1), want[i]);
        CHECK_EQ(nixl_telemetry_connection_event(t, bad_names[i], 1), want[i]);
    }

    /* stats: NULL output, and struct sizes it cannot fill. */
    nixl_telemetry_stats_t stats;
    memset(&stats, 0, sizeof stats);
    CHECK_EQ(nixl_telemetry_stats(t, NULL), NIXL_TELEMETRY_ERR_NULL);
    CHECK_EQ(nixl_telemetry_stats(t, &stats), NIXL_TELEMETRY_ERR_INVALID_ARGUMENT);
    stats.struct_size = 8;
    CHECK_EQ(nixl_telemetry_stats(t, &stats), NIXL_TELEMETRY_ERR_INVALID_ARGUMENT);
    stats.struct_size = 100000;
    CHECK_EQ(nixl_telemetry_stats(t, &stats), NIXL_TELEMETRY_ERR_INVALID_ARGUMENT);
}

/* The valid calls: 18 events, in this order, read back by the Rust test. */
static void valid_calls(nixl_telemetry_t *t) {
    nixl_telemetry_handle_t *h = NULL, *long_h = NULL;
    reset_err();
    CHECK_EQ(nixl_telemetry_handle_create(t, NIXL_TELEMETRY_CATEGORY_BACKEND, "c_handle_event", &h, err, sizeof err),
             NIXL_TELEMETRY_OK);
    CHECK_EQ(err[0], 0);
    CHECK_EQ(nixl_telemetry_handle_create(t, NIXL_TELEMETRY_CATEGORY_BACKEND,
                                          "handle_name_longer_than_thirty_one_bytes", &long_h, err, sizeof err),
             NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_handle_record(h, 7), NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_handle_record(long_h, 8), NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_handle_record_at(h, 1234567, 9), NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_record(t, NIXL_TELEMETRY_CATEGORY_CUSTOM, "generic_event", 10), NIXL_TELEMETRY_OK);
    /* 30 bytes of 'a' and a 2-byte character: cut before the character. */
    CHECK_EQ(nixl_telemetry_record(t, NIXL_TELEMETRY_CATEGORY_CUSTOM, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\xc3\xa9", 11),
             NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_transfer_completed(t, 120, NIXL_TELEMETRY_DIRECTION_WRITE, 4096), NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_transfer_completed_at(t, 2000000, 5, NIXL_TELEMETRY_DIRECTION_READ, 512), NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_post_time(t, 3), NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_post_time_at(t, 3000000, 4), NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_memory_registered(t, 65536), NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_memory_deregistered(t, 65536), NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_error(t, "NIXL_ERR_BACKEND"), NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_backend_event(t, "ucx_rdma_writes", 2), NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_connection_event(t, "agent_connect", 1), NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_flush(t), NIXL_TELEMETRY_OK);

    /* A newer caller's larger stats struct: its unknown tail comes back zeroed. */
    struct {
        nixl_telemetry_stats_t v1;
        uint64_t newer_field[3];
    } stats;
    memset(&stats, 0xAA, sizeof stats);
    stats.v1.struct_size = sizeof stats;
    CHECK_EQ(nixl_telemetry_stats(t, &stats.v1), NIXL_TELEMETRY_OK);
    CHECK_EQ(stats.v1.struct_size, sizeof stats);
    CHECK_EQ(stats.v1.reserved, 0);
    CHECK_EQ(stats.v1.recorded, 18);
    CHECK_EQ(stats.v1.delivered, 18);
    CHECK_EQ(stats.v1.pending, 0);
    CHECK_EQ(stats.v1.generated, 0);
    CHECK_EQ(stats.v1.dropped_total, 0);
    CHECK_EQ(stats.v1.dropped_late, 0);
    for (int i = 0; i < 3; i++) CHECK_EQ(stats.newer_field[i], 0);
    /* The exact size. */
    nixl_telemetry_stats_t exact;
    memset(&exact, 0, sizeof exact);
    exact.struct_size = sizeof exact;
    CHECK_EQ(nixl_telemetry_stats(t, &exact), NIXL_TELEMETRY_OK);
    CHECK_EQ(exact.recorded, 18);
    CHECK_EQ(nixl_telemetry_is_enabled(t), 1);

    CHECK_EQ(nixl_telemetry_handle_destroy(long_h), NIXL_TELEMETRY_OK);
    /* h outlives its telemetry: its records are then dropped, nothing breaks. */
    CHECK_EQ(nixl_telemetry_destroy(t), NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_handle_record(h, 99), NIXL_TELEMETRY_OK);
    CHECK_EQ(nixl_telemetry_handle_destroy(h), NIXL_TELEMETRY_OK);
}

static void queries(void) {
    CHECK_EQ(nixl_telemetry_api_version(), NIXL_TELEMETRY_C_API_VERSION);
    const int32_t codes[] = {NIXL_TELEMETRY_OK, NIXL_TELEMETRY_ERR_NULL, NIXL_TELEMETRY_ERR_INVALID_NAME,
                             NIXL_TELEMETRY_ERR_INVALID_CATEGORY, NIXL_TELEMETRY_ERR_INVALID_ARGUMENT,
                             NIXL_TELEMETRY_ERR_CONFIG, NIXL_TELEMETRY_ERR_EXPORTER, NIXL_TELEMETRY_ERR_SYSTEM,
                             NIXL_TELEMETRY_ERR_INTERNAL};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        const char *text = nixl_telemetry_status_string(codes[i]);
        CHECK_TRUE(text != NULL && strncmp(text, "NIXL_TELEMETRY_", 15) == 0);
    }
    CHECK_CONTAINS(nixl_telemetry_status_string(NIXL_TELEMETRY_ERR_CONFIG), "NIXL_TELEMETRY_ERR_CONFIG");
    CHECK_CONTAINS(nixl_telemetry_status_string(12345), "unknown");
    CHECK_CONTAINS(nixl_telemetry_status_string(INT32_MIN), "unknown");
    uint64_t now = nixl_telemetry_now_us();
    uint64_t wall = (uint64_t)time(NULL) * 1000000u;
    CHECK_TRUE(now + 10000000u > wall && now < wall + 10000000u);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s <ring directory>\n", argv[0]);
        return 2;
    }
    queries();
    creation_from_env();
    creation_from_settings(argv[1]);
    null_objects();

    nixl_telemetry_t *t = NULL;
    nixl_telemetry_settings_t s = settings_for(argv[1]);
    reset_err();
    CHECK_EQ(nixl_telemetry_create(AGENT, &s, &t, err, sizeof err), NIXL_TELEMETRY_OK);
    if (t == NULL) {
        fprintf(stderr, "cannot create telemetry: %s\n", err);
        return 1;
    }
    names_and_numbers(t);
    valid_calls(t);

    if (check_failures != 0) {
        fprintf(stderr, "%d check(s) failed\n", check_failures);
        return 1;
    }
    printf("bad_inputs: all checks passed\n");
    return 0;
}
