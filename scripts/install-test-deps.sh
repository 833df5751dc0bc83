#!/usr/bin/env bash
# Installs the programs the test suite drives for real, when they are missing:
# Prometheus and promtool (Debian's prometheus package), a C compiler for the C
# plug-in tests, g++ for the NIXL adapters (crates/nixl_adapters) and valgrind
# for their test in NIXL's process. Idempotent; needs root (or sudo) for apt-get.
set -euo pipefail

need=()
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v cc >/dev/null 2>&1 || need+=(gcc)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v valgrind >/dev/null 2>&1 || need+=(valgrind)
if [ ${#need[@]} -eq 0 ]; then
    exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi
echo "== installing: $(printf '%s\n' "${need[@]}" | sort -u | tr '\n' ' ')"
export DEBIAN_FRONTEND=noninteractive
# Wait for a package manager that is already running (a machine's boot-time
# upgrades, say) instead of failing on its lock, and finish an install that an
# earlier run left half done, which apt-get would otherwise refuse to go past.
apt=(-o DPkg::Lock::Timeout=600)
$sudo dpkg --configure -a
$sudo apt-get "${apt[@]}" update -qq
# --no-install-recommends keeps the install small; the tests start their own
# Prometheus instance, so the package's service is not used.
$sudo apt-get "${apt[@]}" install -y -qq --no-install-recommends \
    $(printf '%s\n' "${need[@]}" | sort -u) >/dev/null
for tool in prometheus promtool cc g++ valgrind; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "install-test-deps: $tool is still missing after the install" >&2
        exit 1
    }
done
