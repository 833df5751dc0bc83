# The installed layout of nixl-telemetry's commands, exporter plug-ins and NIXL
# adapters, written once for scripts/install.sh (a prefix) and
# scripts/build-wheel.sh (the wheel's data directories). Sourced, not run.
#
#   shipped_plugins
#       sets target_dir (cargo's target directory), plugin_libs (one
#       "<package> <lib name>" line per exporter plug-in the workspace ships:
#       packages with a cdylib named telemetry_exporter_<name>, except those
#       marked `publish = false`, the test fixtures), plugin_packages (their
#       `-p <package>` arguments) and exporters (their <name>s).
#   stage_layout BUILT BIN_DIR NIXL_LIB_DIR
#       installs from the build directory BUILT the commands into BIN_DIR, the
#       plug-ins into NIXL_LIB_DIR/telemetry_exporters and the NIXL adapters
#       (one directory per generation of NIXL's exporter interface) into
#       NIXL_LIB_DIR/nixl_adapters. Each command goes through "${RUN[@]}" when
#       set (install.sh's --dry-run prints instead).

shipped_plugins() {
    local metadata package lib
    metadata="$(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
m = json.load(sys.stdin)
print(m["target_directory"])
for p in m["packages"]:
    if p.get("publish") == []:
        continue
    for t in p["targets"]:
        if "cdylib" in t["kind"] and t["name"].startswith("telemetry_exporter_"):
            print(p["name"], t["name"])
')"
    target_dir="$(printf '%s\n' "$metadata" | head -1)"
    plugin_libs="$(printf '%s\n' "$metadata" | tail -n +2)"
    plugin_packages=()
    exporters=()
    while read -r package lib; do
        [ -n "$package" ] || continue
        plugin_packages+=(-p "$package")
        exporters+=("${lib#telemetry_exporter_}")
    done <<< "$plugin_libs"
}

stage_layout() {
    local built="$1" bin_dir="$2" nixl_lib="$3" lib
    "${RUN[@]}" install -d "$bin_dir" "$nixl_lib/telemetry_exporters" "$nixl_lib/nixl_adapters"
    "${RUN[@]}" install -m 755 "$built/nixl-telemetry" "$built/telemetry_reader" \
        "$built/nixl-telemetry-adapters" "$bin_dir/"
    while read -r _ lib; do
        [ -n "$lib" ] && "${RUN[@]}" install -m 755 "$built/lib$lib.so" "$nixl_lib/telemetry_exporters/"
    done <<< "$plugin_libs"
    # The adapters NIXL loads: one file per plug-in and generation, each forwarding
    # to the plug-in of its name in telemetry_exporters.
    "${RUN[@]}" "$built/nixl-telemetry-adapters" stage "$nixl_lib/nixl_adapters" "${exporters[@]}"
}
