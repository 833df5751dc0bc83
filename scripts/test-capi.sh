#!/usr/bin/env bash
# The C API's install-level tests (the rest is `cargo test -p nixl-telemetry-capi`):
#
#  1. installs cmake, pkg-config, gcc, g++ and valgrind with apt-get when missing;
#  2. installs nixl-telemetry into a temporary prefix with scripts/install.sh
#     and checks its layout (libraries and soname, headers, pkg-config file,
#     CMake package, plug-ins, tools);
#  3. builds examples/c with `cc $(pkg-config --cflags --libs nixl-telemetry)`
#     (and once against the static archive) and examples/cpp with CMake
#     (find_package(NixlTelemetry)), runs them, and reads their rings with the
#     installed telemetry_reader (and the Python reader);
#  4. a C++ host outside the prefix loads the installed CSV plug-in from the
#     directory the loader searches, with no search variable set;
#  5. the bad-input program and the multi-threaded recorder program, built
#     through pkg-config, under valgrind --error-exitcode=1 --leak-check=full;
#  6. `cargo install --path crates/cli` into a temporary root.
#
# Needs root (or sudo) only when something must be installed. Cargo builds go
# to target/capi-install (or $CAPI_TARGET_DIR): the install bakes the prefix
# into the build, which must not invalidate the workspace's own target.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

# --- 1. tools -----------------------------------------------------------------
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
need_commands cmake:cmake pkg-config:pkg-config cc:gcc c++:g++ valgrind:valgrind

work="$(mktemp -d "${TMPDIR:-/tmp}/nixl-telemetry-capi.XXXXXX")"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
export CARGO_TARGET_DIR="${CAPI_TARGET_DIR:-$root/target/capi-install}"
# The programs under test must see no telemetry settings but ours.
for var in $(env | sed -n 's/^\(NIXL_TELEMETRY[A-Z_]*\|NIXL_PLUGIN_DIR\)=.*/\1/p'); do
    unset "$var"
done

fail() {
    echo "test-capi: FAILED: $*" >&2
    exit 1
}

# Checks a ring with the installed Rust reader: event count and, in order,
# the names the first events must have. Usage: check_ring <ring> <count> [names...]
check_ring() {
    local ring="$1" want="$2"
    shift 2
    "$prefix/bin/telemetry_reader" --once --peek --json "$ring" > "$work/ring.jsonl" 2> "$work/reader.err" \
        || fail "telemetry_reader cannot read $ring: $(cat "$work/reader.err")"
    python3 - "$work/ring.jsonl" "$want" "$@" <<'EOF' || fail "ring $ring"
import json, sys
path, want, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
events = [json.loads(line) for line in open(path)]
if len(events) != want:
    sys.exit(f"{path}: {len(events)} events, want {want}")
got = [e["name"] for e in events[: len(names)]]
if got != names:
    sys.exit(f"first events {got}, want {names}")
EOF
}

# --- 2. install into a temporary prefix ----------------------------------------
echo "== test-capi: scripts/install.sh --prefix $prefix --profile dev"
bash scripts/install.sh --prefix "$prefix" --profile dev > "$work/install.log" \
    || { cat "$work/install.log"; fail "scripts/install.sh"; }
for f in lib/libnixl_telemetry.so.1 lib/libnixl_telemetry.so lib/libnixl_telemetry.a \
         include/nixl_telemetry.h include/nixl_telemetry.hpp include/nixl_telemetry_plugin.h \
         lib/pkgconfig/nixl-telemetry.pc lib/cmake/NixlTelemetry/NixlTelemetryConfig.cmake \
         lib/cmake/NixlTelemetry/NixlTelemetryConfigVersion.cmake \
         lib/nixl/telemetry_exporters/libtelemetry_exporter_csv.so \
         lib/nixl/telemetry_exporters/libtelemetry_exporter_prometheus.so \
         bin/nixl-telemetry bin/telemetry_reader; do
    [ -e "$prefix/$f" ] || fail "$prefix/$f was not installed"
done
# Every plug-in the workspace ships, no more, no less (test fixtures, marked
# `publish = false`, stay out of a user's prefix).
want_plugins="$(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
print(sorted("lib%s.so" % t["name"] for p in json.load(sys.stdin)["packages"] if p.get("publish") != []
             for t in p["targets"] if "cdylib" in t["kind"] and t["name"].startswith("telemetry_exporter_")))')"
got_plugins="$(cd "$prefix/lib/nixl/telemetry_exporters" && python3 -c 'import os; print(sorted(os.listdir(".")))')"
[ "$want_plugins" = "$got_plugins" ] || fail "installed plug-ins $got_plugins, want $want_plugins"
readelf -d "$prefix/lib/libnixl_telemetry.so.1" | grep 'SONAME.*\[libnixl_telemetry\.so\.1\]' >/dev/null \
    || fail "libnixl_telemetry.so.1 has no soname libnixl_telemetry.so.1"
"$prefix/bin/nixl-telemetry" --help > /dev/null || fail "the installed nixl-telemetry does not run"

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
[ "$(pkg-config --modversion nixl-telemetry)" = "$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)" ] \
    || fail "pkg-config --modversion nixl-telemetry"
[ "$(pkg-config --variable=plugindir nixl-telemetry)" = "$prefix/lib/nixl/telemetry_exporters" ] \
    || fail "pkg-config plugindir"

# --- 3. the C example through pkg-config, shared and static -------------------
echo "== test-capi: examples/c through pkg-config"
# shellcheck disable=SC2046 # pkg-config's words are separate arguments
cc -std=c11 -Wall -Wextra -Werror -o "$work/c_example" examples/c/transfer_loop.c \
    $(pkg-config --cflags --libs nixl-telemetry) || fail "cc examples/c/transfer_loop.c with pkg-config"
LD_LIBRARY_PATH="$prefix/lib" NIXL_TELEMETRY_ENABLE=1 NIXL_TELEMETRY_DIR="$work/rings" \
    "$work/c_example" c-example 200 > "$work/c.out" || fail "the C example"
grep -q "recorded=1003 delivered=1003 dropped=0" "$work/c.out" || fail "C example: $(cat "$work/c.out")"
check_ring "$work/rings/c-example" 1003 agent_memory_registered example_peer_connected \
    agent_xfer_post_time agent_xfer_time agent_tx_bytes agent_tx_requests_num example_completions
"$prefix/bin/telemetry_reader" --once --peek "$work/rings/c-example" > "$work/c.txt" 2> "$work/reader.err" \
    || fail "telemetry_reader text output: $(cat "$work/reader.err")"
grep -q '^Event: agent_rx_bytes$' "$work/c.txt" || fail "telemetry_reader text output lacks agent_rx_bytes"
python3 python/telemetry_reader.py --telemetry_path "$work/rings/c-example" --once --peek --json \
    > "$work/c-python.jsonl" 2> "$work/reader.err" || fail "the Python reader: $(cat "$work/reader.err")"
[ "$(wc -l < "$work/c-python.jsonl")" -eq 1003 ] || fail "the Python reader on the C example's ring"

# shellcheck disable=SC2046
cc -std=c11 -o "$work/c_example_static" examples/c/transfer_loop.c $(pkg-config --cflags nixl-telemetry) \
    "$prefix/lib/libnixl_telemetry.a" $(pkg-config --static --libs-only-l nixl-telemetry | sed 's/-lnixl_telemetry//') \
    || fail "static link against libnixl_telemetry.a"
readelf -d "$work/c_example_static" | grep 'libnixl_telemetry' >/dev/null && fail "the static example needs the shared library"
NIXL_TELEMETRY_ENABLE=1 NIXL_TELEMETRY_DIR="$work/rings" "$work/c_example_static" c-static 10 > /dev/null \
    || fail "the statically linked C example"
check_ring "$work/rings/c-static" 53 agent_memory_registered

# --- 3. the C++ example through CMake ----------------------------------------
echo "== test-capi: examples/cpp through CMake find_package(NixlTelemetry)"
cmake -S examples/cpp -B "$work/cpp-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
    > "$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; fail "cmake configure of examples/cpp"; }
cmake --build "$work/cpp-build" > "$work/cmake-build.log" 2>&1 \
    || { cat "$work/cmake-build.log"; fail "cmake --build examples/cpp"; }
"$work/cpp-build/transfer_loop" "$work/rings" cpp-example 300 > "$work/cpp.out" || fail "the C++ example"
grep -q "recorded=1202 delivered=1202 dropped=0" "$work/cpp.out" || fail "C++ example: $(cat "$work/cpp.out")"
check_ring "$work/rings/cpp-example" 1202 agent_memory_registered agent_xfer_time agent_tx_bytes \
    agent_tx_requests_num example_completions agent_xfer_time agent_rx_bytes

# --- 4. an installed plug-in, found where the loader searches ------------------
echo "== test-capi: the installed CSV plug-in, loaded by a host outside the prefix"
NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH="$work/events.csv" \
    "$work/cpp-build/transfer_loop" "$work/unused" cpp-csv 20 csv > "$work/csv.out" \
    || fail "the C++ example with the csv exporter: $(cat "$work/csv.out")"
grep -q "recorded=82 delivered=82" "$work/csv.out" || fail "csv: $(cat "$work/csv.out")"
[ "$(grep -c ',agent_xfer_time,' "$work/events.csv")" -eq 20 ] && [ "$(wc -l < "$work/events.csv")" -eq 83 ] \
    || fail "the CSV file lacks the events: $(head -3 "$work/events.csv")"

# --- 5. valgrind and threads ---------------------------------------------------
echo "== test-capi: bad inputs under valgrind, threads"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -g -o "$work/bad_inputs" crates/capi/tests/c/bad_inputs.c \
    $(pkg-config --cflags --libs nixl-telemetry) || fail "cc bad_inputs.c"
LD_LIBRARY_PATH="$prefix/lib" valgrind --quiet --error-exitcode=1 --leak-check=full \
    --errors-for-leak-kinds=definite,possible "$work/bad_inputs" "$work/rings" \
    > "$work/valgrind.out" 2>&1 || { cat "$work/valgrind.out"; fail "bad_inputs under valgrind"; }
check_ring "$work/rings/c-bad-inputs" 18 c_handle_event handle_name_longer_than_thirty_
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -o "$work/threads" crates/capi/tests/c/threads.c \
    $(pkg-config --cflags --libs nixl-telemetry) -pthread || fail "cc threads.c"
LD_LIBRARY_PATH="$prefix/lib" valgrind --quiet --error-exitcode=1 --leak-check=full \
    --errors-for-leak-kinds=definite,possible "$work/threads" "$work/rings" > "$work/valgrind.out" 2>&1 \
    || { cat "$work/valgrind.out"; fail "the threads program under valgrind"; }
check_ring "$work/rings/c-threads" 40000

# --- 6. cargo install of the tools alone ---------------------------------------
echo "== test-capi: cargo install --path crates/cli"
cargo install --quiet --locked --debug --path crates/cli --root "$work/cargo-root" \
    || fail "cargo install --path crates/cli"
"$work/cargo-root/bin/telemetry_reader" --once --peek --json "$work/rings/c-example" > "$work/c2.jsonl" \
    2> "$work/reader.err" || fail "the cargo-installed telemetry_reader: $(cat "$work/reader.err")"
[ "$(wc -l < "$work/c2.jsonl")" -eq 1003 ] || fail "the cargo-installed telemetry_reader's output"
"$work/cargo-root/bin/nixl-telemetry" --help > /dev/null || fail "the cargo-installed nixl-telemetry"

echo "== test-capi: all passed"
