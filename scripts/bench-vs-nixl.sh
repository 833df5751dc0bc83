#!/usr/bin/env bash
# What serving a real NIXL job's telemetry costs the node: NIXL 1.5.1's own Prometheus
# plug-in against NIXL's ring + our sidecar and against our plug-in through the adapter,
# the same job in each mode, interleaved, several times (scripts/bench_vs_nixl.py).
#
#   scripts/bench-vs-nixl.sh [--quick] [--instructions] [--json] [--raw FILE]
#
# --quick   5 rounds of 80,000 transfers (about 2-3 minutes); default 7 rounds of 200,000
# --instructions
#           instead of CPU time, count the telemetry's instructions under callgrind, which
#           the machine's load does not change: each mode once with 10,000 transfers and once
#           with 20,000 (--quick: 5,000 and 10,000), 11 scrapes a run in b, c and d (one every
#           tenth of the loop and a final one). Counted from the set-up job to the final
#           scrape: in the job, the calls into NIXL's telemetry (every function naming a
#           nixlTelemetry class) and into the exporter plug-ins, adapters and prometheus-cpp,
#           plus every instruction of threads those start (HTTP servers); in c, every
#           instruction of the sidecar. About 15 minutes (needs valgrind).
# --json    the summary as JSON (keys ring_sidecar_vs_nixl_added_cpu,
#           adapter_vs_nixl_added_cpu, lost_events, modes, setup; rounds with CPU time;
#           ring_sidecar_vs_nixl_added_instructions, adapter_vs_nixl_added_instructions
#           with --instructions, where the first two keys hold the same instruction ratios)
# --raw F   every run's figures (per-thread CPU or per-function instructions) into F
#
# Installs NIXL 1.5.1 (scripts/nixl-releases.sh install, reused when present) and builds
# nixl-telemetry, our Prometheus plug-in and the NIXL adapters in release mode.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
# shellcheck source=scripts/lib.sh
. "$HERE/lib.sh"

quick=0
extra=()
while [ $# -ge 1 ]; do
    case "$1" in
    --quick) quick=1 ;;
    --instructions) extra+=(--instructions) ;;
    --json) extra+=(--json) ;;
    --raw) extra+=(--raw "${2:?--raw needs a file}"); shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-vs-nixl.sh: unknown option '$1'; accepted: --quick, --instructions, --json, --raw FILE" >&2; exit 2 ;;
    esac
    shift
done
case "$quick ${extra[*]}" in
*--instructions*) [ "$quick" = 1 ] && args=(--transfers 5000) || args=(--transfers 10000)
    need_commands valgrind:valgrind ;;
1*) args=(--rounds 5 --transfers 80000) ;;
*) args=(--rounds 7 --transfers 200000) ;;
esac

bash "$HERE/nixl-releases.sh" install 1.5.1
echo "building nixl-telemetry, the Prometheus plug-in and the NIXL adapters (release) ..." >&2
cargo build --release --quiet --locked --manifest-path "$ROOT/Cargo.toml" -p nixl-telemetry-cli \
    -p nixl-telemetry-exporter-prometheus -p nixl-telemetry-nixl-adapters >&2
target="$(cargo metadata --format-version 1 --no-deps --manifest-path "$ROOT/Cargo.toml" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
exec python3 "$HERE/bench_vs_nixl.py" --bin-dir "$target/release" "${args[@]}" "${extra[@]}"
