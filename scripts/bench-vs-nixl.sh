#!/usr/bin/env bash
# What serving a real NIXL job's telemetry costs the node: NIXL 1.5.1's own Prometheus
# plug-in against NIXL's ring + our sidecar and against our plug-in through the adapter,
# the same job in each mode, interleaved, several times (scripts/bench_vs_nixl.py).
#
#   scripts/bench-vs-nixl.sh [--quick] [--json] [--raw FILE]
#
# --quick   5 rounds of 80,000 transfers (about 2-3 minutes); default 7 rounds of 200,000
# --json    the summary as JSON (keys ring_sidecar_vs_nixl_added_cpu,
#           adapter_vs_nixl_added_cpu, lost_events, modes, rounds, setup)
# --raw F   every run's figures (per-thread CPU included) into F
#
# Installs NIXL 1.5.1 (scripts/nixl-releases.sh install, reused when present) and builds
# nixl-telemetry, our Prometheus plug-in and the NIXL adapters in release mode.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"

args=(--rounds 7 --transfers 200000)
extra=()
while [ $# -ge 1 ]; do
    case "$1" in
    --quick) args=(--rounds 5 --transfers 80000) ;;
    --json) extra+=(--json) ;;
    --raw) extra+=(--raw "${2:?--raw needs a file}"); shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-vs-nixl.sh: unknown option '$1'; accepted: --quick, --json, --raw FILE" >&2; exit 2 ;;
    esac
    shift
done

bash "$HERE/nixl-releases.sh" install 1.5.1
echo "building nixl-telemetry, the Prometheus plug-in and the NIXL adapters (release) ..." >&2
cargo build --release --quiet --locked --manifest-path "$ROOT/Cargo.toml" -p nixl-telemetry-cli \
    -p nixl-telemetry-exporter-prometheus -p nixl-telemetry-nixl-adapters >&2
target="$(cargo metadata --format-version 1 --no-deps --manifest-path "$ROOT/Cargo.toml" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
exec python3 "$HERE/bench_vs_nixl.py" --bin-dir "$target/release" "${args[@]}" "${extra[@]}"
