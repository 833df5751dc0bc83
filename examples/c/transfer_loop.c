/* A C host recording a transfer loop through libnixl_telemetry, configured
 * from the environment as NIXL does.
 *
 *   cc -o transfer_loop transfer_loop.c $(pkg-config --cflags --libs nixl-telemetry)
 *   NIXL_TELEMETRY_ENABLE=1 NIXL_TELEMETRY_DIR=/tmp/rings ./transfer_loop c-example 1000
 *   telemetry_reader --once /tmp/rings/c-example
 *
 * Each of the N transfers copies a buffer (the "transfer"), timed with
 * telemetry's clock, and records it: agent_xfer_time, agent_{tx|rx}_bytes,
 * agent_{tx|rx}_requests_num, plus its post time and one backend event
 * through a pre-resolved handle. Prints the stats line at the end. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nixl_telemetry.h>

#define BUFFER_BYTES 4096

int main(int argc, char **argv) {
    const char *agent = argc > 1 ? argv[1] : "c-example";
    long transfers = argc > 2 ? strtol(argv[2], NULL, 10) : 100;
    char err[1024];
    nixl_telemetry_t *telemetry = NULL;

    int32_t status = nixl_telemetry_create_from_env(agent, &telemetry, err, sizeof err);
    if (status != NIXL_TELEMETRY_OK) {
        fprintf(stderr, "transfer_loop: telemetry: %s (%s)\n", err, nixl_telemetry_status_string(status));
        return 2;
    }
    nixl_telemetry_handle_t *completions = NULL;
    status = nixl_telemetry_handle_create(telemetry, NIXL_TELEMETRY_CATEGORY_BACKEND, "example_completions",
                                          &completions, err, sizeof err);
    if (status != NIXL_TELEMETRY_OK) {
        fprintf(stderr, "transfer_loop: handle: %s\n", err);
        nixl_telemetry_destroy(telemetry);
        return 2;
    }

    static unsigned char source[BUFFER_BYTES], destination[BUFFER_BYTES];
    memset(source, 0x5a, sizeof source);
    nixl_telemetry_memory_registered(telemetry, 2 * BUFFER_BYTES);
    nixl_telemetry_connection_event(telemetry, "example_peer_connected", 1);

    for (long i = 0; i < transfers; i++) {
        int32_t direction = (i % 2 == 0) ? NIXL_TELEMETRY_DIRECTION_WRITE : NIXL_TELEMETRY_DIRECTION_READ;
        uint64_t posted = nixl_telemetry_now_us();
        nixl_telemetry_post_time(telemetry, 0);
        memcpy(destination, source, sizeof destination); /* the transfer */
        uint64_t completed = nixl_telemetry_now_us();
        nixl_telemetry_transfer_completed_at(telemetry, completed, completed - posted, direction,
                                             sizeof destination);
        nixl_telemetry_handle_record_at(completions, completed, 1);
    }
    nixl_telemetry_memory_deregistered(telemetry, 2 * BUFFER_BYTES);
    nixl_telemetry_flush(telemetry);

    nixl_telemetry_stats_t stats;
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    nixl_telemetry_stats(telemetry, &stats);
    printf("transfer_loop: agent=%s transfers=%ld enabled=%d recorded=%llu delivered=%llu dropped=%llu\n", agent,
           transfers, nixl_telemetry_is_enabled(telemetry), (unsigned long long)stats.recorded,
           (unsigned long long)stats.delivered, (unsigned long long)stats.dropped_total);

    nixl_telemetry_handle_destroy(completions);
    nixl_telemetry_destroy(telemetry); /* flushes, stops the flush thread, closes the ring */
    return destination[0] == 0x5a ? 0 : 1;
}
