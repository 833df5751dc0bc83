// One of our exporter plug-ins, loaded and driven through our C ABI
// (include/nixl_telemetry_plugin.h), the way our own host does it.
#ifndef NIXL_ADAPTERS_OUR_PLUGIN_HPP
#define NIXL_ADAPTERS_OUR_PLUGIN_HPP

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "nixl_telemetry_plugin.h"

namespace nixl_adapters {

class OurPlugin {
public:
    // Finds libtelemetry_exporter_<name>.so in each directory of
    // NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR, then in
    // <directory of `adapter_file`, symlinks resolved>/../../telemetry_exporters
    // (the installed layout: <prefix>/lib/nixl/nixl_adapters/<generation>/ beside
    // <prefix>/lib/nixl/telemetry_exporters/), passing over NIXL adapters and
    // `adapter_file` itself; loads the first one found and checks its
    // descriptor. nullptr, with the reason in `error`, when none can be used.
    static std::shared_ptr<OurPlugin> load(const std::string &name,
                                           const std::string &adapter_file,
                                           std::string *error) noexcept;

    OurPlugin(const OurPlugin &) = delete;
    OurPlugin &operator=(const OurPlugin &) = delete;
    // Takes the log callback back, calls the plug-in's fini and unloads it
    // (every exporter is gone: each holds a reference).
    ~OurPlugin();

    // create_exporter; nullptr with the plug-in's reason in `error`.
    void *create(const std::string &agent, size_t max_events, const char *output_path,
                 std::string *error) const noexcept;
    // export_batch, or export_event for each event when the plug-in has no
    // export_batch (the first failing code is returned).
    int32_t export_batch(void *exporter, const nixl_telemetry_event_t *events,
                         size_t count) const noexcept;
    // flush, 0 when the plug-in has none.
    int32_t flush(void *exporter) const noexcept;
    void destroy(void *exporter) const noexcept;
    // The reason of the exporter's last failed call ("" if the plug-in gives none).
    std::string last_error(void *exporter) const noexcept;

    const std::string &path() const noexcept { return path_; }
    const std::string &name() const noexcept { return name_; }

private:
    OurPlugin() = default;

    void *library_ = nullptr;
    const nixl_telemetry_plugin_t *descriptor_ = nullptr;
    void (*fini_)(void) = nullptr;
    size_t (*last_error_)(void *, char *, size_t) = nullptr;
    // The optional nixl_telemetry_exporter_set_log: the plug-in's messages go
    // to NIXL's log while it is set (taken back before fini).
    void (*set_log_)(nixl_telemetry_log_fn, void *) = nullptr;
    std::string path_;
    std::string name_;
};

}  // namespace nixl_adapters

#endif
