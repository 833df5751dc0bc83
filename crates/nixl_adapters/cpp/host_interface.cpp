#include "host_interface.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

namespace nixl_adapters {

namespace {

// nixlTelemetry::updateData(std::__cxx11::string const&, nixl_telemetry_category_t, unsigned long)
constexpr const char kNamedUpdate[] =
    "_ZN13nixlTelemetry10updateDataERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"
    "25nixl_telemetry_category_tm";
// nixlTelemetry::updateData(nixl_telemetry_event_type_t, nixl_telemetry_category_t, unsigned long)
constexpr const char kTypedWithCategoryUpdate[] =
    "_ZN13nixlTelemetry10updateDataE27nixl_telemetry_event_type_t25nixl_telemetry_category_tm";
// nixlTelemetry::updateData(nixl_telemetry_event_type_t, unsigned long)
constexpr const char kTypedUpdate[] =
    "_ZN13nixlTelemetry10updateDataE27nixl_telemetry_event_type_tm";
// vtable for nixlTelemetryBufferExporter
constexpr const char kBufferExporterVtable[] = "_ZTV27nixlTelemetryBufferExporter";

bool has_symbol(void *handle, const char *name) noexcept {
    dlerror();
    void *address = dlsym(handle, name);
    return dlerror() == nullptr && address != nullptr;
}

// The virtual functions in the virtual table `name` (its size, less the offset
// to top and the type info), or -1.
int virtual_functions(void *handle, const char *name) noexcept {
    dlerror();
    void *address = dlsym(handle, name);
    if (dlerror() != nullptr || address == nullptr) {
        return -1;
    }
    Dl_info info;
    ElfW(Sym) *symbol = nullptr;
    if (dladdr1(address, &info, reinterpret_cast<void **>(&symbol), RTLD_DL_SYMENT) == 0 ||
        symbol == nullptr || symbol->st_size < 2 * sizeof(void *)) {
        return -1;
    }
    return static_cast<int>(symbol->st_size / sizeof(void *)) - 2;
}

}  // namespace

const char *layout_name(EventLayout layout) noexcept {
    switch (layout) {
    case EventLayout::kUnknown:
        return "no known NIXL telemetry interface";
    case EventLayout::kNamed:
        return "named events";
    case EventLayout::kTypedWithCategory:
        return "typed events with a category";
    case EventLayout::kTyped:
        return "typed events";
    }
    return "?";
}

std::string HostInterface::describe() const {
    std::string text = library.empty() ? std::string("an unknown library") : library;
    text += " (";
    text += layout_name(events);
    if (exporter_virtuals >= 0) {
        text += ", exporters with ";
        text += std::to_string(exporter_virtuals);
        text += " virtual functions";
    }
    text += ")";
    return text;
}

HostInterface inspect_host(const void *caller) noexcept {
    HostInterface host;
    try {
        Dl_info info;
        struct link_map *map = nullptr;
        if (dladdr1(caller, &info, reinterpret_cast<void **>(&map), RTLD_DL_LINKMAP) == 0 ||
            map == nullptr) {
            return host;
        }
        // The main program's map has an empty name: it is reached with dlopen(NULL).
        const bool main_program = map->l_name == nullptr || map->l_name[0] == '\0';
        host.library = main_program ? std::string(info.dli_fname ? info.dli_fname : "")
                                    : std::string(map->l_name);
        if (host.library.empty()) {
            host.library = "the main program";
        }
        void *handle = main_program ? dlopen(nullptr, RTLD_LAZY)
                                    : dlopen(map->l_name, RTLD_LAZY | RTLD_NOLOAD);
        if (handle == nullptr) {
            return host;
        }
        // dlsym on a library's handle searches it and its dependencies.
        if (has_symbol(handle, kTypedUpdate)) {
            host.events = EventLayout::kTyped;
        } else if (has_symbol(handle, kTypedWithCategoryUpdate)) {
            host.events = EventLayout::kTypedWithCategory;
        } else if (has_symbol(handle, kNamedUpdate)) {
            host.events = EventLayout::kNamed;
        }
        host.exporter_virtuals = virtual_functions(handle, kBufferExporterVtable);
        dlclose(handle);
    }
    catch (...) {
        host.events = EventLayout::kUnknown;
    }
    return host;
}

}  // namespace nixl_adapters
