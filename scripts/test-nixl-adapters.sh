#!/usr/bin/env bash
# The NIXL adapters (crates/nixl_adapters, docs/nixl-adapters.md) with the real NIXL
# releases, beyond the matrix's columns (d) and (e) (scripts/test-nixl-releases.sh):
#
#  * installed: scripts/install.sh into a temporary prefix, then the user's one command,
#    <prefix>/bin/nixl-telemetry-adapters link, on a hard-linked copy of the release's
#    Python packages (the shared cache is not touched); a job that sets only
#    NIXL_TELEMETRY_EXPORTER=csv (and its file) exports through it; unlink removes it all;
#  * hostile: the testkit plug-in fails, panics in flush, panics in create, inside NIXL:
#    transfers go on, the reasons are in NIXL's log, creation failures are NIXL's refusal;
#  * valgrind: loading, exporting and unloading in the release's process, no report with
#    a frame of an adapter or of our plug-in.
#
#   scripts/test-nixl-adapters.sh [VER...]     default: 1.0.0 1.5.1 (the two delivery modes)
#
# Releases are installed into the cache by scripts/nixl-releases.sh; valgrind comes from
# scripts/install-test-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
[ $# -ge 1 ] || set -- 1.0.0 1.5.1
bash scripts/nixl-releases.sh install "$@"
command -v valgrind >/dev/null || { echo "test-nixl-adapters.sh: valgrind is missing (scripts/install-test-deps.sh)" >&2; exit 2; }

echo "== building the plug-ins, the testkit plug-in and the adapters"
cargo build --quiet --locked -p nixl-telemetry-exporter-csv -p nixl-telemetry-exporter-otlp \
    -p nixl-telemetry-exporter-prometheus -p nixl-telemetry-exporter-testkit -p nixl-telemetry-nixl-adapters
target="$(cargo metadata --no-deps --format-version 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
bin="$target/debug"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$bin/nixl-telemetry-adapters" stage "$work/adapters" csv otlp prometheus >/dev/null

echo "== scripts/install.sh --prefix $work/prefix --profile dev"
bash scripts/install.sh --prefix "$work/prefix" --profile dev >/dev/null

check() {
    python3 scripts/nixl_adapters_check.py "$1" --releases-sh "$root/scripts/nixl-releases.sh" \
        --bin-dir "$bin" --staged "$work/adapters" --prefix "$work/prefix" --work "$work/runs" "$2"
}
failed=0
for v in "$@"; do
    for c in installed hostile valgrind; do
        echo "== $c $v"
        check "$c" "$v" || failed=1
    done
done
exit "$failed"
