#!/usr/bin/env bash
# Every test of the project, from a fresh machine with the Rust toolchain and Python:
# installs what the tests need (Prometheus, through apt-get), runs the fast tier
# (scripts/check.sh: formatting, lints, API docs, every Rust test), then the suites
# that drive real components (NIXL releases, PostgreSQL, a receiver, tmux, Chromium,
# sanitizers, fuzzing). Each suite installs what it uses (scripts/lib.sh), so each
# passes alone on an empty cache. As a fresh machine runs it:
#     XDG_CACHE_HOME=$(mktemp -d) bash .ci/run
#
# Suites that build into a directory of their own (the C API's install build, the
# wheel, the sanitizers, the fuzz targets; 0.2-2.2 GB each) leave it for the next run,
# unless the disk is short: with fewer than NIXL_TELEMETRY_KEEP_BUILDS_GB (default
# 30) GB free, builds keep no incremental data, and after such a suite its
# directory is removed, so the whole run fits on a small disk.
# NIXL_TELEMETRY_KEEP_BUILDS_GB=0 keeps everything; a large value saves all it can.
set -euo pipefail
cd "$(dirname "$0")/.."

keep_gb="${NIXL_TELEMETRY_KEEP_BUILDS_GB:-30}"
case "$keep_gb" in
    '' | *[!0-9]*)
        echo "test-all.sh: NIXL_TELEMETRY_KEEP_BUILDS_GB must be a whole number of GB, not '$keep_gb'" >&2
        exit 2
        ;;
esac

# The GB free on the disk holding the checkout.
free_gb() {
    df -P -BG . | awk 'NR == 2 { sub("G", "", $4); print $4 }'
}

# free_if_short DIR... — removes the DIRs when the disk holding the checkout is short.
free_if_short() {
    local free_gb dir
    free_gb="$(free_gb)"
    [ "$free_gb" -lt "$keep_gb" ] || return 0
    for dir in "$@"; do
        [ -e "$dir" ] || continue
        echo "== disk: $free_gb GB free (fewer than $keep_gb): removing $dir ($(du -sh "$dir" | cut -f1))"
        rm -rf "$dir"
    done
}

# On a short disk, cargo keeps no incremental compilation data either (about 1.8 GB
# of the debug build): every build of this run is made once.
if [ "$(free_gb)" -lt "$keep_gb" ]; then
    echo "== disk: $(free_gb) GB free (fewer than $keep_gb): CARGO_INCREMENTAL=0"
    export CARGO_INCREMENTAL=0
fi

bash scripts/install-test-deps.sh

# The fast tier first: formatting, lints, docs and every Rust test (scripts/check.sh).
bash scripts/check.sh

echo "== C API: install into a temporary prefix, pkg-config, CMake, valgrind"
bash scripts/test-capi.sh
free_if_short "${CAPI_TARGET_DIR:-target/capi-install}"

echo "== NIXL releases: compatibility matrix against the oldest and newest release"
bash scripts/test-nixl-releases.sh

echo "== NIXL adapters: installed with install.sh, failing exporters, valgrind, in NIXL 1.0.0 and 1.5.1"
bash scripts/test-nixl-adapters.sh

echo "== prometheus_mp parity with NIXL 1.5.1 (installs nixl-cu12 into the cache)"
bash scripts/test-prometheus-mp.sh

echo "== OTLP exporter against a real receiver (Python venv with opentelemetry-proto)"
bash scripts/test-otlp.sh

echo "== export sidecar: deployment examples; NIXL 1.0, 1.1, 1.3, 1.5 exported at once (Prometheus parity, OTLP)"
bash scripts/test-export.sh

echo "== Prometheus rules: promtool check/test rules on docs/grafana/*.rules.yml"
bash scripts/test-prometheus-rules.sh

# The wheel as a user installs it: a release build of every command, plug-in and
# adapter linked for glibc 2.28, then real NIXL releases in fresh environments, a
# second CPython, and the source distribution built by pip into the same wheel
# (NIXL_TELEMETRY_TEST_WHEEL=0 leaves it out of a local run).
if [ "${NIXL_TELEMETRY_TEST_WHEEL:-1}" = 1 ]; then
    echo "== wheel: built, installed in fresh environments beside NIXL 1.5.1 and 1.0.1, sdist (scripts/test-wheel.sh)"
    bash scripts/test-wheel.sh
    free_if_short target/x86_64-unknown-linux-gnu
else
    echo "== wheel: left out of this run (NIXL_TELEMETRY_TEST_WHEEL=0)"
fi

echo "== python package tests (crates/python: wheel, pytest)"
bash scripts/test-python.sh

echo "== service: SQLite, a throw-away PostgreSQL, TAO's client (scripts/test-service.sh)"
bash scripts/test-service.sh

echo "== sanitizers and models: loom models, ASan/LSan on the C API, ASan on the Python package (scripts/sanitizers.sh)"
bash scripts/sanitizers.sh loom asan python-asan
free_if_short target/loom target/loom-canary target/tsan target/asan target/lsan target/python-asan

echo "== fuzzing: every target a few seconds on its seed corpus (cargo-fuzz, libFuzzer + ASan)"
bash scripts/fuzz.sh ci
free_if_short fuzz/target

bash scripts/test-view.sh
