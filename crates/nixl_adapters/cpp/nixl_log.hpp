// Lines in NIXL's log.
//
// NIXL logs through Abseil to stderr, one line per message:
//   E1126 17:32:11.832147   10572 nixl_plugin_manager.cpp:190] message
// (severity letter, month and day, local time with microseconds, thread id
// right-aligned in 7 columns, source file and line), at the threshold of
// NIXL_LOG_LEVEL (TRACE, DEBUG, INFO, WARN, ERROR, FATAL; default WARN).
// The adapters write their messages the same way, so they appear in NIXL's log
// in its format and obey its level. Never throws.
#ifndef NIXL_ADAPTERS_NIXL_LOG_HPP
#define NIXL_ADAPTERS_NIXL_LOG_HPP

#include <string>

namespace nixl_adapters {

enum class Severity { kInfo, kWarning, kError };

// Writes one line (at most 4 KiB) if NIXL_LOG_LEVEL lets `severity` through.
void log_line(Severity severity, const char *file, int line, const std::string &message) noexcept;

// Whether a message of `severity` would be written.
bool log_enabled(Severity severity) noexcept;

}  // namespace nixl_adapters

#define NIXL_ADAPTER_LOG(severity, message) \
    ::nixl_adapters::log_line((severity), __FILE__, __LINE__, (message))

#endif
