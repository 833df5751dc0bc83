// Which exporter interface the NIXL that loads an adapter speaks.
//
// NIXL's API version check cannot tell the generations apart: releases 1.1 to
// 1.5 all expect version 2, yet hand their exporters three different event
// layouts and, from 1.5 on, call two more virtual functions. So an adapter
// looks at the library that called its nixl_telemetry_plugin_init (NIXL's
// plug-in manager, in libnixl.so) before it answers, and reads two facts from
// that library's exported symbols:
//
//  * the event layout, from the signature of nixlTelemetry::updateData, the
//    function every event goes through:
//      updateData(const std::string &, nixl_telemetry_category_t, unsigned long)
//          named events (0.9 to 1.1)
//      updateData(nixl_telemetry_event_type_t, nixl_telemetry_category_t, unsigned long)
//          typed events with a category (1.2)
//      updateData(nixl_telemetry_event_type_t, unsigned long)
//          typed events (1.3 to 1.5)
//  * the number of virtual functions of an exporter, from the size of the
//    virtual table of NIXL's own exporter (nixlTelemetryBufferExporter):
//    40 bytes = 3 functions (up to 1.4), 56 bytes = 5 (1.5).
//
// An adapter whose generation does not match answers NIXL with an API version
// NIXL refuses, so NIXL's own check turns it away (docs/nixl-adapters.md).
#ifndef NIXL_ADAPTERS_HOST_INTERFACE_HPP
#define NIXL_ADAPTERS_HOST_INTERFACE_HPP

#include <string>

namespace nixl_adapters {

enum class EventLayout {
    kUnknown,            // not a NIXL we know (or not NIXL at all)
    kNamed,              // {category, name} events (with a timestamp up to 1.0)
    kTypedWithCategory,  // {category, type, value}
    kTyped,              // {type, value}
};

struct HostInterface {
    // The file of the library that called, "" if it could not be found.
    std::string library;
    EventLayout events = EventLayout::kUnknown;
    // Virtual functions of an exporter (destructors counted twice), or -1.
    int exporter_virtuals = -1;

    // A description for log lines: "libnixl.so (typed events, 5 exporter functions)".
    std::string describe() const;
};

// Inspects the library holding the code at `caller` (a return address).
// Never throws.
HostInterface inspect_host(const void *caller) noexcept;

const char *layout_name(EventLayout layout) noexcept;

}  // namespace nixl_adapters

#endif
