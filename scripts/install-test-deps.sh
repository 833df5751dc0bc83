#!/usr/bin/env bash
# Installs the programs the test suite drives for real, when they are missing:
# Prometheus and promtool (Debian's prometheus package), a C compiler for the C
# plug-in tests. Idempotent; needs root (or sudo) for apt-get.
set -euo pipefail

need=()
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v cc >/dev/null 2>&1 || need+=(gcc)
if [ ${#need[@]} -eq 0 ]; then
    exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi
echo "== installing: ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# --no-install-recommends keeps the install small; the tests start their own
# Prometheus instance, so the package's service is not used.
$sudo apt-get install -y -qq --no-install-recommends $(printf '%s\n' "${need[@]}" | sort -u) >/dev/null
