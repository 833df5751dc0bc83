#include "our_plugin.hpp"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdlib>
#include <vector>

#include "nixl_log.hpp"

namespace nixl_adapters {

namespace {

constexpr const char kInit[] = "nixl_telemetry_exporter_plugin_init";
constexpr const char kFini[] = "nixl_telemetry_exporter_plugin_fini";
constexpr const char kLastError[] = "nixl_telemetry_exporter_last_error";
constexpr const char kSetLog[] = "nixl_telemetry_exporter_set_log";
constexpr const char kAdapterMark[] = "nixl_telemetry_nixl_adapter";

// The log callback given to the plug-in: its messages (already rate-limited
// by the plug-in) as lines of NIXL's log. `context` is the plug-in's name,
// alive until set_log is called with NULL. Any thread; never throws.
extern "C" void forward_to_nixl_log(void *context, int32_t level, const char *message) {
    if (context == nullptr || message == nullptr) {
        return;
    }
    Severity severity = Severity::kWarning;
    if (level == NIXL_TELEMETRY_LOG_ERROR) {
        severity = Severity::kError;
    } else if (level >= NIXL_TELEMETRY_LOG_INFO && level <= NIXL_TELEMETRY_LOG_TRACE) {
        severity = Severity::kInfo;
    }
    if (!log_enabled(severity)) {
        return;
    }
    try {
        const std::string &name = *static_cast<const std::string *>(context);
        NIXL_ADAPTER_LOG(severity, "nixl-telemetry exporter plug-in " + name + ": " + message);
    }
    catch (...) {
    }
}

std::string real_path(const std::string &path) {
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved) == nullptr) {
        return path;
    }
    return resolved;
}

std::string parent(const std::string &path) {
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

bool is_file(const std::string &path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

struct Candidate {
    std::string path;
    std::string origin;
};

std::vector<Candidate> candidates(const std::string &file, const std::string &adapter_file) {
    std::vector<Candidate> out;
    if (const char *dirs = std::getenv("NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR")) {
        std::string list(dirs);
        size_t start = 0;
        while (start <= list.size()) {
            size_t end = list.find(':', start);
            if (end == std::string::npos) {
                end = list.size();
            }
            if (end > start) {
                out.push_back({list.substr(start, end - start) + "/" + file,
                               "NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR"});
            }
            start = end + 1;
        }
    }
    const std::string installed =
        parent(parent(parent(real_path(adapter_file)))) + "/telemetry_exporters/" + file;
    out.push_back({installed, "installed beside the adapter"});
    return out;
}

}  // namespace

std::shared_ptr<OurPlugin> OurPlugin::load(const std::string &name,
                                           const std::string &adapter_file,
                                           std::string *error) noexcept {
    try {
        const std::string file = "libtelemetry_exporter_" + name + ".so";
        const std::string self = real_path(adapter_file);
        std::string searched;
        for (const Candidate &candidate : candidates(file, adapter_file)) {
            if (!searched.empty()) {
                searched += ", ";
            }
            searched += candidate.path + " (" + candidate.origin;
            if (!is_file(candidate.path)) {
                searched += ")";
                continue;
            }
            if (real_path(candidate.path) == self) {
                searched += "; this adapter itself, passed over)";
                continue;
            }
            void *library = dlopen(candidate.path.c_str(), RTLD_NOW | RTLD_LOCAL);
            if (library == nullptr) {
                const char *why = dlerror();
                *error = candidate.path + " is not a loadable library: " +
                         (why ? why : "unknown reason") + "; searched " + searched + ")";
                return nullptr;
            }
            if (dlsym(library, kAdapterMark) != nullptr) {
                dlclose(library);
                searched += "; a NIXL adapter, passed over)";
                continue;
            }
            searched += ")";
            using Init = const nixl_telemetry_plugin_t *(*)(void);
            Init init = reinterpret_cast<Init>(dlsym(library, kInit));
            void (*fini)(void) = reinterpret_cast<void (*)(void)>(dlsym(library, kFini));
            if (init == nullptr || fini == nullptr) {
                dlclose(library);
                *error = candidate.path + " does not export " + kInit + " and " + kFini +
                         " (not a nixl-telemetry plug-in, or one built before they got these "
                         "names: reinstall it); searched " + searched;
                return nullptr;
            }
            const nixl_telemetry_plugin_t *descriptor = init();
            const char *refusal = nullptr;
            if (descriptor == nullptr) {
                refusal = "its init function returned NULL";
            } else if (descriptor->api_version != NIXL_TELEMETRY_PLUGIN_API_VERSION ||
                       descriptor->struct_size != sizeof(nixl_telemetry_plugin_t)) {
                refusal = "it speaks another version of the plug-in ABI than this adapter (1)";
            } else if (descriptor->create_exporter == nullptr ||
                       descriptor->export_event == nullptr ||
                       descriptor->destroy_exporter == nullptr) {
                refusal = "its descriptor lacks a required function";
            }
            if (refusal != nullptr) {
                fini();
                dlclose(library);
                *error = candidate.path + " cannot be used: " + refusal + "; searched " + searched;
                return nullptr;
            }
            std::shared_ptr<OurPlugin> plugin(new OurPlugin());
            plugin->library_ = library;
            plugin->descriptor_ = descriptor;
            plugin->fini_ = fini;
            plugin->last_error_ = reinterpret_cast<size_t (*)(void *, char *, size_t)>(
                dlsym(library, kLastError));
            plugin->path_ = candidate.path;
            plugin->name_ = name;
            plugin->set_log_ = reinterpret_cast<void (*)(nixl_telemetry_log_fn, void *)>(
                dlsym(library, kSetLog));
            if (plugin->set_log_ != nullptr) {
                plugin->set_log_(forward_to_nixl_log, &plugin->name_);
            }
            return plugin;
        }
        *error = file + " not found; searched " + searched;
    }
    catch (const std::exception &e) {
        *error = std::string("cannot load the plug-in: ") + e.what();
    }
    catch (...) {
        *error = "cannot load the plug-in: unknown error";
    }
    return nullptr;
}

OurPlugin::~OurPlugin() {
    if (set_log_ != nullptr) {
        set_log_(nullptr, nullptr);
    }
    if (fini_ != nullptr) {
        fini_();
    }
    if (library_ != nullptr) {
        dlclose(library_);
    }
}

void *OurPlugin::create(const std::string &agent, size_t max_events, const char *output_path,
                        std::string *error) const noexcept {
    nixl_telemetry_exporter_params_t params;
    params.agent_name = agent.c_str();
    params.max_events_buffered = max_events;
    params.output_path = (output_path != nullptr && output_path[0] != '\0') ? output_path : nullptr;
    char reason[1024];
    reason[0] = '\0';
    void *exporter = descriptor_->create_exporter(&params, reason, sizeof reason);
    if (exporter == nullptr) {
        reason[sizeof reason - 1] = '\0';
        try {
            *error = reason[0] != '\0' ? std::string(reason)
                                       : std::string("create_exporter gave no reason");
        }
        catch (...) {
        }
    }
    return exporter;
}

int32_t OurPlugin::export_batch(void *exporter, const nixl_telemetry_event_t *events,
                                size_t count) const noexcept {
    if (descriptor_->export_batch != nullptr) {
        return descriptor_->export_batch(exporter, events, count);
    }
    int32_t first_failure = NIXL_TELEMETRY_EXPORT_OK;
    for (size_t i = 0; i < count; ++i) {
        const int32_t rc = descriptor_->export_event(exporter, &events[i]);
        if (rc != NIXL_TELEMETRY_EXPORT_OK && first_failure == NIXL_TELEMETRY_EXPORT_OK) {
            first_failure = rc;
        }
        if (rc == NIXL_TELEMETRY_EXPORT_PANICKED) {
            return rc;
        }
    }
    return first_failure;
}

int32_t OurPlugin::flush(void *exporter) const noexcept {
    return descriptor_->flush != nullptr ? descriptor_->flush(exporter) : NIXL_TELEMETRY_EXPORT_OK;
}

void OurPlugin::destroy(void *exporter) const noexcept {
    descriptor_->destroy_exporter(exporter);
}

std::string OurPlugin::last_error(void *exporter) const noexcept {
    if (last_error_ == nullptr) {
        return std::string();
    }
    char reason[1024];
    reason[0] = '\0';
    if (last_error_(exporter, reason, sizeof reason) == 0) {
        return std::string();
    }
    reason[sizeof reason - 1] = '\0';
    try {
        return std::string(reason);
    }
    catch (...) {
        return std::string();
    }
}

}  // namespace nixl_adapters
