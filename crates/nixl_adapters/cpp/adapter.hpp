// The adapter of one generation: an exporter of NIXL's interface that
// forwards to one of ours, and the plug-in entry points NIXL calls.
//
// A generation file describes its NIXL (event struct, base class, how to
// recognise it, how its events become ours) in a traits struct G and ends
// with NIXL_ADAPTER_ENTRY_POINTS(G). See generation_*.cpp. The facts of the
// generation table (src/generations.rs) come from the build script as macros:
// NIXL_ADAPTER_GENERATION (its name), NIXL_ADAPTER_RELEASES,
// NIXL_ADAPTER_API_VERSION, NIXL_ADAPTER_EVENT_SIZE and
// NIXL_ADAPTER_EXPORTER_FUNCTIONS.
#ifndef NIXL_ADAPTERS_ADAPTER_HPP
#define NIXL_ADAPTERS_ADAPTER_HPP

#if !defined(NIXL_ADAPTER_GENERATION) || !defined(NIXL_ADAPTER_RELEASES) ||        \
    !defined(NIXL_ADAPTER_API_VERSION) || !defined(NIXL_ADAPTER_EVENT_SIZE) ||     \
    !defined(NIXL_ADAPTER_EXPORTER_FUNCTIONS)
#error "build.rs passes the generation's facts from src/generations.rs (NIXL_ADAPTER_*)"
#endif

#include <memory>
#include <string>
#include <utility>

#include "forwarder.hpp"
#include "host_interface.hpp"
#include "nixl_interface.hpp"
#include "nixl_log.hpp"

#ifndef NIXL_TELEMETRY_VERSION
#error "build with -DNIXL_TELEMETRY_VERSION=\"x.y.z\""
#endif

namespace nixl_adapters {

// What an adapter file knows about itself.
struct AdapterIdentity {
    std::string file;       // this library, as NIXL opened it
    std::string nixl_name;  // <name> of libtelemetry_exporter_<name>.so: NIXL_TELEMETRY_EXPORTER
    std::string our_name;   // the plug-in of ours behind it: <name> less "nixl_telemetry_"
};

// This library's identity, found from the address of one of its functions.
const AdapterIdentity &identity(const void *own_code) noexcept;

// Whether to serve the NIXL whose code is at `caller`; logs the refusal.
bool serve_host(const void *caller, const char *generation, const char *releases,
                bool (*matches)(const HostInterface &), const AdapterIdentity &me) noexcept;

// The forwarder of one agent (loading our plug-in at the first); nullptr,
// logged as an error in NIXL's log, when it cannot be made.
std::unique_ptr<Forwarder> start_forwarding(const AdapterIdentity &me, const std::string &agent,
                                            size_t max_events, Delivery delivery,
                                            Stamp stamp) noexcept;

// Our plug-in is unloaded once the adapter is and its last exporter is gone.
void release_our_plugin() noexcept;

// An exporter of NIXL's interface `Base` that converts each event and hands it
// to a forwarder.
template <class G, class Base> class Forwarding : public Base {
public:
    Forwarding(size_t max_events, std::unique_ptr<Forwarder> forwarder) noexcept
        : Base(max_events), forwarder_(std::move(forwarder)) {}

    NixlStatus exportEvent(const typename G::Event &event) noexcept override {
        forwarder_->push([&event](nixl_telemetry_event_t &ours) { G::convert(event, ours); });
        return kNixlSuccess;
    }

protected:
    std::unique_ptr<Forwarder> forwarder_;
};

// An exporter of a generation without batch hooks.
template <class G>
class Adapter3 final : public Forwarding<G, NixlExporter3<typename G::Event>> {
public:
    using Forwarding<G, NixlExporter3<typename G::Event>>::Forwarding;
};

// An exporter of a generation with batch hooks.
template <class G>
class Adapter5 final : public Forwarding<G, NixlExporter5<typename G::Event>> {
public:
    using Forwarding<G, NixlExporter5<typename G::Event>>::Forwarding;
    void onBatchBegin() noexcept override { this->forwarder_->begin_batch(); }
    void onBatchEnd() noexcept override { this->forwarder_->end_batch(); }
};

template <class G> struct Entry {
    using Interface = typename G::Interface;
    using Plugin = NixlPlugin<Interface>;
    static_assert(sizeof(Plugin) == 80, "version, creator, two std::string (C++11 ABI)");
    static_assert(sizeof(Interface) == 16, "virtual table pointer, buffer size");

    static const void *own_code() noexcept { return reinterpret_cast<const void *>(&create); }

    // The creator NIXL calls per agent. Never throws: a failure is logged in
    // NIXL's log and NIXL gets no exporter (it then reports "Failed to create
    // telemetry exporter").
    static std::unique_ptr<Interface> create(const NixlInitParams &params) noexcept {
        try {
            const AdapterIdentity &me = identity(own_code());
            std::unique_ptr<Forwarder> forwarder = start_forwarding(
                me, params.agent_name, params.max_events_buffered, G::kDelivery, G::kStamp);
            if (!forwarder) {
                return nullptr;
            }
            return std::unique_ptr<Interface>(
                new typename G::Exporter(params.max_events_buffered, std::move(forwarder)));
        }
        catch (...) {
            NIXL_ADAPTER_LOG(Severity::kError,
                             "nixl-telemetry adapter: cannot create an exporter (out of memory)");
            return nullptr;
        }
    }

    static Plugin *init(const void *caller) noexcept {
        try {
            static Plugin plugin{kRefusedApiVersion, &create, std::string(), std::string()};
            const AdapterIdentity &me = identity(own_code());
            plugin.name = me.nixl_name;
            plugin.version = std::string("nixl-telemetry ") + NIXL_TELEMETRY_VERSION +
                             " adapter for NIXL " + G::kReleases + " (" + G::kGeneration + ")";
            plugin.api_version =
                serve_host(caller, G::kGeneration, G::kReleases, &G::matches, me)
                    ? G::kApiVersion
                    : kRefusedApiVersion;
            return &plugin;
        }
        catch (...) {
            return nullptr;
        }
    }
};

}  // namespace nixl_adapters

// The symbols an adapter exports: NIXL's two entry points and our mark (the
// generation's name), by which our own loader knows to pass over this file.
#define NIXL_ADAPTER_ENTRY_POINTS(G)                                                        \
    extern "C" {                                                                            \
    __attribute__((visibility("default"))) extern const char nixl_telemetry_nixl_adapter[]; \
    const char nixl_telemetry_nixl_adapter[] = NIXL_ADAPTER_GENERATION;                     \
    __attribute__((visibility("default"), noinline)) void *nixl_telemetry_plugin_init();    \
    void *nixl_telemetry_plugin_init() {                                                    \
        return ::nixl_adapters::Entry<G>::init(__builtin_return_address(0));                \
    }                                                                                       \
    __attribute__((visibility("default"))) void nixl_telemetry_plugin_fini();              \
    void nixl_telemetry_plugin_fini() { ::nixl_adapters::release_our_plugin(); }            \
    }

#endif
