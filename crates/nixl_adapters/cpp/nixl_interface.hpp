// NIXL's exporter plug-in interface, declared from its layout facts
// (docs/nixl-adapters.md has them per generation, with how each was checked
// against the released wheels). Nothing here is NIXL's source: the types have
// our names and only the layout NIXL relies on.
//
// What NIXL does with a plug-in file libtelemetry_exporter_<name>.so:
//   1. dlopen, dlsym("nixl_telemetry_plugin_init"), call it: a pointer to a
//      plug-in object (NixlPlugin below);
//   2. compare its first field with the API version it expects (1 up to 1.0.x,
//      2 from 1.1); a mismatch is logged ("Plugin API version mismatch") and the
//      file is closed again;
//   3. per agent, call create_exporter with {agent name, buffer size}; the
//      creator returns a std::unique_ptr to an exporter (NixlExporter*);
//   4. call exportEvent for every event (and, from 1.5, onBatchBegin/onBatchEnd
//      around each export pass), through the virtual table;
//   5. destroy the exporter through the unique_ptr (the deleting destructor);
//      when the plug-in is unloaded, call nixl_telemetry_plugin_fini, dlclose.
#ifndef NIXL_ADAPTERS_NIXL_INTERFACE_HPP
#define NIXL_ADAPTERS_NIXL_INTERFACE_HPP

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace nixl_adapters {

// The plug-in API version (an unsigned int enumeration in NIXL).
enum class NixlApiVersion : unsigned int {};

// An API version no release accepts: the answer of an adapter that must not
// serve the NIXL loading it, which NIXL's own check then refuses.
constexpr NixlApiVersion kRefusedApiVersion = NixlApiVersion{0};

// nixl_status_t: an int enumeration, 0 is success. NIXL ignores what
// exportEvent returns.
enum NixlStatus : int { kNixlSuccess = 0 };

// The creator's parameters: the agent's name and NIXL_TELEMETRY_BUFFER_SIZE.
struct NixlInitParams {
    std::string agent_name;
    size_t max_events_buffered;
};
static_assert(sizeof(NixlInitParams) == 40, "std::string (C++11 ABI, 32 bytes) + size_t");

// The exporter base class up to 1.4: a virtual destructor (complete and
// deleting: two slots), exportEvent; then the buffer size NIXL reads back.
template <class Event> class NixlExporter3 {
public:
    explicit NixlExporter3(size_t max_events_buffered) noexcept
        : max_events_buffered_(max_events_buffered) {}
    NixlExporter3(const NixlExporter3 &) = delete;
    NixlExporter3 &operator=(const NixlExporter3 &) = delete;
    virtual ~NixlExporter3() = default;                 // slots 0, 1
    virtual NixlStatus exportEvent(const Event &) = 0;  // slot 2

private:
    const size_t max_events_buffered_;
};

// The exporter base class of 1.5: the same, then two functions NIXL calls
// around each export pass (private in NIXL; their place in the table is what
// counts: after exportEvent, as a class derived from the 1.4 one adds them).
template <class Event> class NixlExporter5 : public NixlExporter3<Event> {
public:
    using NixlExporter3<Event>::NixlExporter3;
    virtual void onBatchBegin() noexcept {}  // slot 3
    virtual void onBatchEnd() noexcept {}    // slot 4
};

// What nixl_telemetry_plugin_init returns: API version, creator, then the
// name and version as std::string (NIXL reads them with c_str()).
template <class Exporter> struct NixlPlugin {
    NixlApiVersion api_version;
    std::unique_ptr<Exporter> (*create_exporter)(const NixlInitParams &);
    std::string name;
    std::string version;
};

}  // namespace nixl_adapters

#endif
