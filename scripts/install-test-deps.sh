#!/usr/bin/env bash
# Installs the programs the test suite drives for real, when they are missing:
# Prometheus and promtool (Debian's prometheus package), a C compiler for the C
# plug-in tests, g++ for the NIXL adapters (crates/nixl_adapters) and valgrind
# for their test in NIXL's process. Idempotent; needs root (or sudo) for apt-get.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
# --no-install-recommends keeps the install small; the tests start their own
# Prometheus instance, so the package's service is not used.
need_commands prometheus:prometheus promtool:prometheus cc:gcc g++:g++ valgrind:valgrind
