/* Tiny assertion helpers of the C test programs: each failed check prints
 * where and what, and the program exits 1 at the end. */
#ifndef NIXL_TELEMETRY_TEST_CHECK_H
#define NIXL_TELEMETRY_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures = 0;

#define CHECK_EQ(got, want)                                                             \
    do {                                                                                \
        long long check_got_ = (long long)(got), check_want_ = (long long)(want);       \
        if (check_got_ != check_want_) {                                                \
            fprintf(stderr, "%s:%d: %s is %lld, want %s = %lld\n", __FILE__, __LINE__,  \
                    #got, check_got_, #want, check_want_);                              \
            check_failures++;                                                           \
        }                                                                               \
    } while (0)

#define CHECK_CONTAINS(text, needle)                                                    \
    do {                                                                                \
        if (strstr((text), (needle)) == NULL) {                                         \
            fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__,        \
                    __LINE__, (text), (needle));                                        \
            check_failures++;                                                           \
        }                                                                               \
    } while (0)

#define CHECK_TRUE(cond)                                                                \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "%s:%d: %s is false\n", __FILE__, __LINE__, #cond);         \
            check_failures++;                                                           \
        }                                                                               \
    } while (0)

#endif
