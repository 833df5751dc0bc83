#!/usr/bin/env bash
# Builds and installs nixl-telemetry into a prefix:
#
#   scripts/install.sh [--prefix P] [--profile release|dev] [--dry-run]
#
#   P/lib/libnixl_telemetry.so.1, libnixl_telemetry.so -> .so.1, libnixl_telemetry.a
#   P/include/nixl_telemetry.h, nixl_telemetry.hpp, nixl_telemetry_plugin.h
#   P/lib/pkgconfig/nixl-telemetry.pc
#   P/lib/cmake/NixlTelemetry/      find_package(NixlTelemetry): NixlTelemetry::nixl_telemetry
#                                   (shared) and NixlTelemetry::nixl_telemetry_static
#   P/lib/nixl/telemetry_exporters/ every exporter plug-in the workspace ships
#                                   (libtelemetry_exporter_*.so; not test fixtures)
#   P/lib/nixl/nixl_adapters/<generation>/
#                                   the NIXL adapters, one directory per generation of
#                                   NIXL's exporter interface, one file per plug-in above
#                                   (libtelemetry_exporter_otlp.so, ..._csv.so,
#                                   ..._nixl_telemetry_prometheus.so, ...): what NIXL loads
#   P/bin/nixl-telemetry, P/bin/telemetry_reader
#   P/bin/nixl-telemetry-adapters   makes them visible to a NIXL installation:
#                                   `nixl-telemetry-adapters link` (docs/nixl-adapters.md)
#
# The prefix defaults to /usr/local. The library and the tools are built with
# NIXL_TELEMETRY_LIBDIR=P/lib, so the plug-in loader searches
# P/lib/nixl/telemetry_exporters (see docs/plugins.md) whatever program loads
# them. Cargo's target directory is the workspace's (or $CARGO_TARGET_DIR).
# --dry-run prints what would be built and installed, and changes nothing.
set -euo pipefail

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}

prefix=/usr/local
profile=release
dry_run=0
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) [ $# -ge 2 ] || { echo "install.sh: --prefix needs a directory" >&2; exit 2; }
                  prefix="$2"; shift 2 ;;
        --prefix=*) prefix="${1#--prefix=}"; shift ;;
        --profile) [ $# -ge 2 ] || { echo "install.sh: --profile needs release or dev" >&2; exit 2; }
                   profile="$2"; shift 2 ;;
        --profile=*) profile="${1#--profile=}"; shift ;;
        --dry-run) dry_run=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "install.sh: unknown argument '$1'; accepted: --prefix P, --profile release|dev, --dry-run, --help" >&2
           exit 2 ;;
    esac
done
case "$profile" in
    release) profile_dir=release ;;
    dev) profile_dir=debug ;;
    *) echo "install.sh: --profile '$profile' is not accepted; accepted: release, dev" >&2; exit 2 ;;
esac
if [ -z "$prefix" ]; then
    echo "install.sh: --prefix is empty; accepted: a directory" >&2
    exit 2
fi
if [ "$dry_run" = 1 ]; then
    prefix="$(realpath -m "$prefix")"
else
    mkdir -p "$prefix" || { echo "install.sh: cannot create the prefix $prefix" >&2; exit 1; }
    prefix="$(cd "$prefix" && pwd)"
fi

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"

# shellcheck source=scripts/layout.sh
. scripts/layout.sh
shipped_plugins
packages=(-p nixl-telemetry-capi -p nixl-telemetry-cli -p nixl-telemetry-nixl-adapters "${plugin_packages[@]}")
out="$target_dir/$profile_dir"

echo "== building (profile $profile, NIXL_TELEMETRY_LIBDIR=$prefix/lib): ${packages[*]}"
if [ "$dry_run" = 0 ]; then
    NIXL_TELEMETRY_LIBDIR="$prefix/lib" cargo build --quiet --profile "$profile" "${packages[@]}"
fi

run() {
    echo "   $*"
    if [ "$dry_run" = 0 ]; then "$@"; fi
}
RUN=(run)

echo "== installing into $prefix"
run install -d "$prefix/lib" "$prefix/include" "$prefix/lib/pkgconfig" \
    "$prefix/lib/cmake/NixlTelemetry"
run install -m 755 "$out/libnixl_telemetry_capi.so" "$prefix/lib/libnixl_telemetry.so.1"
run ln -sfn libnixl_telemetry.so.1 "$prefix/lib/libnixl_telemetry.so"
run install -m 644 "$out/libnixl_telemetry_capi.a" "$prefix/lib/libnixl_telemetry.a"
run install -m 644 include/nixl_telemetry.h include/nixl_telemetry.hpp include/nixl_telemetry_plugin.h \
    "$prefix/include/"
stage_layout "$out" "$prefix/bin" "$prefix/lib/nixl"

# What a static link needs besides the archive (rustc --print native-static-libs).
static_libs="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"

write() { # write <file>: the text on stdin
    echo "   write $1"
    if [ "$dry_run" = 0 ]; then cat > "$1"; else cat > /dev/null; fi
}

write "$prefix/lib/pkgconfig/nixl-telemetry.pc" <<EOF
prefix=$prefix
exec_prefix=\${prefix}
libdir=\${exec_prefix}/lib
includedir=\${prefix}/include
plugindir=\${libdir}/nixl/telemetry_exporters

Name: nixl-telemetry
Description: NIXL telemetry for C and C++ hosts: event collector, shared-memory ring, exporter plug-ins
Version: $version
Libs: -L\${libdir} -lnixl_telemetry
Libs.private: $static_libs
Cflags: -I\${includedir}
EOF

write "$prefix/lib/cmake/NixlTelemetry/NixlTelemetryConfig.cmake" <<'EOF'
# find_package(NixlTelemetry) for nixl-telemetry, written by scripts/install.sh.
# Targets: NixlTelemetry::nixl_telemetry (shared library) and
# NixlTelemetry::nixl_telemetry_static (static archive); both carry the include
# directory of nixl_telemetry.h and nixl_telemetry.hpp.
# Variables: NixlTelemetry_INCLUDE_DIR, NixlTelemetry_PLUGIN_DIR.
get_filename_component(_nixl_telemetry_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(NixlTelemetry_INCLUDE_DIR "${_nixl_telemetry_prefix}/include")
set(NixlTelemetry_PLUGIN_DIR "${_nixl_telemetry_prefix}/lib/nixl/telemetry_exporters")
find_package(Threads REQUIRED)

if(NOT TARGET NixlTelemetry::nixl_telemetry)
  add_library(NixlTelemetry::nixl_telemetry SHARED IMPORTED)
  set_target_properties(NixlTelemetry::nixl_telemetry PROPERTIES
    IMPORTED_LOCATION "${_nixl_telemetry_prefix}/lib/libnixl_telemetry.so.1"
    IMPORTED_SONAME "libnixl_telemetry.so.1"
    INTERFACE_INCLUDE_DIRECTORIES "${NixlTelemetry_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES Threads::Threads)
endif()
if(NOT TARGET NixlTelemetry::nixl_telemetry_static)
  add_library(NixlTelemetry::nixl_telemetry_static STATIC IMPORTED)
  set_target_properties(NixlTelemetry::nixl_telemetry_static PROPERTIES
    IMPORTED_LOCATION "${_nixl_telemetry_prefix}/lib/libnixl_telemetry.a"
    INTERFACE_INCLUDE_DIRECTORIES "${NixlTelemetry_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "Threads::Threads;${CMAKE_DL_LIBS};m;rt;util;gcc_s")
endif()
unset(_nixl_telemetry_prefix)
set(NixlTelemetry_FOUND TRUE)
EOF

write "$prefix/lib/cmake/NixlTelemetry/NixlTelemetryConfigVersion.cmake" <<EOF
# The version of nixl-telemetry installed here; compatible within one major
# version (0.x: within one minor version), written by scripts/install.sh.
set(PACKAGE_VERSION "$version")
string(REPLACE "." ";" _have "\${PACKAGE_VERSION}")
string(REPLACE "." ";" _want "\${PACKAGE_FIND_VERSION}")
list(GET _have 0 _have_major)
list(GET _have 1 _have_minor)
set(PACKAGE_VERSION_COMPATIBLE FALSE)
if(PACKAGE_FIND_VERSION_MAJOR STREQUAL _have_major AND NOT PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION)
  if(NOT _have_major STREQUAL "0" OR PACKAGE_FIND_VERSION_MINOR STREQUAL _have_minor)
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  endif()
endif()
if(PACKAGE_VERSION VERSION_EQUAL PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_EXACT TRUE)
endif()
if(NOT PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
endif()
unset(_have)
unset(_want)
unset(_have_major)
unset(_have_minor)
EOF

echo "== installed nixl-telemetry $version into $prefix"
echo "   C:     cc prog.c \$(pkg-config --cflags --libs nixl-telemetry)   (PKG_CONFIG_PATH=$prefix/lib/pkgconfig)"
echo "   CMake: find_package(NixlTelemetry) with CMAKE_PREFIX_PATH=$prefix; target NixlTelemetry::nixl_telemetry"
echo "   plug-ins: $prefix/lib/nixl/telemetry_exporters"
echo "   NIXL:  $prefix/bin/nixl-telemetry-adapters link --python <the python of your NIXL job>"
echo "          then NIXL_TELEMETRY_EXPORTER=otlp (csv, nixl_telemetry_prometheus, ...) in the job"
