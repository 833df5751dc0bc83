#include "nixl_log.hpp"

#include <strings.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace nixl_adapters {

namespace {

// The lowest severity NIXL_LOG_LEVEL lets through: NIXL's own mapping
// (TRACE, DEBUG and INFO show INFO; WARN, the default, and anything unknown
// show warnings; ERROR errors; FATAL nothing of ours).
int threshold() noexcept {
    const char *level = std::getenv("NIXL_LOG_LEVEL");
    if (level == nullptr) {
        return 1;
    }
    if (strcasecmp(level, "TRACE") == 0 || strcasecmp(level, "DEBUG") == 0 ||
        strcasecmp(level, "INFO") == 0) {
        return 0;
    }
    if (strcasecmp(level, "ERROR") == 0) {
        return 2;
    }
    if (strcasecmp(level, "FATAL") == 0) {
        return 3;
    }
    return 1;
}

int rank(Severity severity) noexcept {
    switch (severity) {
    case Severity::kInfo:
        return 0;
    case Severity::kWarning:
        return 1;
    case Severity::kError:
        return 2;
    }
    return 2;
}

const char *base_name(const char *path) noexcept {
    const char *slash = std::strrchr(path, '/');
    return slash == nullptr ? path : slash + 1;
}

}  // namespace

bool log_enabled(Severity severity) noexcept {
    return rank(severity) >= threshold();
}

void log_line(Severity severity, const char *file, int line, const std::string &message) noexcept {
    if (!log_enabled(severity)) {
        return;
    }
    static const char kLetters[] = {'I', 'W', 'E'};
    struct timeval now;
    gettimeofday(&now, nullptr);
    struct tm local;
    localtime_r(&now.tv_sec, &local);
    char text[4096];
    const long tid = static_cast<long>(syscall(SYS_gettid));
    int n = std::snprintf(text, sizeof text, "%c%02d%02d %02d:%02d:%02d.%06ld %7ld %s:%d] %s\n",
                          kLetters[rank(severity)], local.tm_mon + 1, local.tm_mday,
                          local.tm_hour, local.tm_min, local.tm_sec,
                          static_cast<long>(now.tv_usec), tid, base_name(file), line,
                          message.c_str());
    if (n < 0) {
        return;
    }
    size_t len = static_cast<size_t>(n);
    if (len >= sizeof text) {
        len = sizeof text - 1;
        text[len - 1] = '\n';
    }
    // One write per line, as Abseil does: lines of several threads never mix.
    const char *at = text;
    while (len > 0) {
        ssize_t written = ::write(STDERR_FILENO, at, len);
        if (written < 0 && errno == EINTR) {
            continue;
        }
        if (written <= 0) {
            return;
        }
        at += written;
        len -= static_cast<size_t>(written);
    }
}

}  // namespace nixl_adapters
