#!/usr/bin/env bash
# Every test of the project, from a fresh machine with the Rust toolchain and Python:
# installs what the tests need (Prometheus, through apt-get), runs the fast tier
# (scripts/check.sh: formatting, lints, API docs, every Rust test), then the suites
# that drive real components (NIXL releases, PostgreSQL, a receiver, tmux, Chromium,
# sanitizers, fuzzing). Each suite installs what it uses (scripts/lib.sh), so each
# passes alone on an empty cache. As a fresh machine runs it:
#     XDG_CACHE_HOME=$(mktemp -d) bash .ci/run
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-test-deps.sh

# The fast tier first: formatting, lints, docs and every Rust test (scripts/check.sh).
bash scripts/check.sh

echo "== C API: install into a temporary prefix, pkg-config, CMake, valgrind"
bash scripts/test-capi.sh

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
else
    echo "== wheel: left out of this run (NIXL_TELEMETRY_TEST_WHEEL=0)"
fi

echo "== python package tests (crates/python: wheel, pytest)"
bash scripts/test-python.sh

echo "== service: SQLite, a throw-away PostgreSQL, TAO's client (scripts/test-service.sh)"
bash scripts/test-service.sh

echo "== sanitizers and models: loom models, ASan/LSan on the C API, ASan on the Python package (scripts/sanitizers.sh)"
bash scripts/sanitizers.sh loom asan python-asan

echo "== fuzzing: every target a few seconds on its seed corpus (cargo-fuzz, libFuzzer + ASan)"
bash scripts/fuzz.sh ci

bash scripts/test-view.sh
