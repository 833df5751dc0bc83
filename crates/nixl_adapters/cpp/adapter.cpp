#include "adapter.hpp"

#include <dlfcn.h>

#include <mutex>

namespace nixl_adapters {

namespace {

constexpr char kFilePrefix[] = "libtelemetry_exporter_";
constexpr char kFileSuffix[] = ".so";
constexpr char kOurPrefix[] = "nixl_telemetry_";

std::mutex registry_lock;
// The plug-in of ours behind this adapter, from the first exporter to
// release_our_plugin; each forwarder holds a reference of its own.
std::shared_ptr<OurPlugin> *registry = nullptr;

AdapterIdentity find_identity(const void *own_code) {
    AdapterIdentity me;
    Dl_info info;
    if (dladdr(own_code, &info) != 0 && info.dli_fname != nullptr) {
        me.file = info.dli_fname;
    }
    std::string base = me.file.substr(me.file.find_last_of('/') + 1);
    const std::string prefix(kFilePrefix), suffix(kFileSuffix);
    if (base.size() > prefix.size() + suffix.size() && base.compare(0, prefix.size(), prefix) == 0 &&
        base.compare(base.size() - suffix.size(), suffix.size(), suffix) == 0) {
        me.nixl_name = base.substr(prefix.size(), base.size() - prefix.size() - suffix.size());
    }
    me.our_name = me.nixl_name;
    const std::string ours(kOurPrefix);
    if (me.our_name.size() > ours.size() && me.our_name.compare(0, ours.size(), ours) == 0) {
        me.our_name = me.our_name.substr(ours.size());
    }
    return me;
}

}  // namespace

const AdapterIdentity &identity(const void *own_code) noexcept {
    // Computed once; a failure (no memory) leaves it empty, and loading then
    // fails with a message.
    static const AdapterIdentity me = [own_code] {
        try {
            return find_identity(own_code);
        }
        catch (...) {
            return AdapterIdentity();
        }
    }();
    return me;
}

bool serve_host(const void *caller, const char *generation, const char *releases,
                bool (*matches)(const HostInterface &), const AdapterIdentity &me) noexcept {
    const HostInterface host = inspect_host(caller);
    if (matches(host)) {
        try {
            NIXL_ADAPTER_LOG(Severity::kInfo, "nixl-telemetry adapter " + me.file + " (" +
                                                  generation + ") serves " + host.describe());
        }
        catch (...) {
        }
        return true;
    }
    try {
        NIXL_ADAPTER_LOG(
            Severity::kWarning,
            "nixl-telemetry adapter " + me.file + " serves NIXL " + releases + " (" + generation +
                "), not the NIXL loading it: " + host.describe() +
                "; answering with API version 0, which NIXL refuses. Install the adapters of this "
                "NIXL's generation: nixl-telemetry-adapters link");
    }
    catch (...) {
    }
    return false;
}

std::unique_ptr<Forwarder> start_forwarding(const AdapterIdentity &me, const std::string &agent,
                                            size_t max_events, Delivery delivery,
                                            Stamp stamp) noexcept {
    try {
        std::shared_ptr<OurPlugin> plugin;
        std::string error;
        {
            std::lock_guard<std::mutex> hold(registry_lock);
            if (registry == nullptr) {
                if (me.our_name.empty()) {
                    error = "the adapter's file name " + me.file +
                            " is not libtelemetry_exporter_<name>.so";
                } else {
                    std::shared_ptr<OurPlugin> loaded = OurPlugin::load(me.our_name, me.file, &error);
                    if (loaded) {
                        registry = new std::shared_ptr<OurPlugin>(std::move(loaded));
                    }
                }
            }
            if (registry != nullptr) {
                plugin = *registry;
            }
        }
        if (!plugin) {
            NIXL_ADAPTER_LOG(Severity::kError, "nixl-telemetry adapter " + me.file +
                                                   ": cannot load our exporter plug-in \"" +
                                                   me.our_name + "\" for agent " + agent + ": " +
                                                   error);
            return nullptr;
        }
        ForwarderSettings settings;
        settings.exporter = me.nixl_name;
        settings.agent = agent;
        settings.max_batch = max_events;
        settings.delivery = delivery;
        settings.stamp = stamp;
        std::unique_ptr<Forwarder> forwarder = Forwarder::create(plugin, settings, &error);
        if (!forwarder) {
            NIXL_ADAPTER_LOG(Severity::kError, "nixl-telemetry adapter " + me.nixl_name + " (" +
                                                   plugin->path() +
                                                   "): cannot create the exporter of agent " +
                                                   agent + ": " + error);
            return nullptr;
        }
        NIXL_ADAPTER_LOG(Severity::kInfo, "nixl-telemetry adapter " + me.nixl_name +
                                              ": agent " + agent + " exports through " +
                                              plugin->path());
        return forwarder;
    }
    catch (...) {
        NIXL_ADAPTER_LOG(Severity::kError,
                         "nixl-telemetry adapter: cannot create an exporter (out of memory)");
        return nullptr;
    }
}

void release_our_plugin() noexcept {
    std::shared_ptr<OurPlugin> *held = nullptr;
    {
        std::lock_guard<std::mutex> hold(registry_lock);
        held = registry;
        registry = nullptr;
    }
    // Unloads our plug-in now unless an exporter still holds it.
    delete held;
}

}  // namespace nixl_adapters
