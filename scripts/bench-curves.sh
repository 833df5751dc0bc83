#!/usr/bin/env bash
# Cost curves, not points: the sidecar's CPU per event as its rings grow at a fixed
# total rate, and the service's records/s as its clients grow on SQLite and on
# PostgreSQL, each beside its floor; drawn as SVG.
#
#   scripts/bench-curves.sh [--quick] [--out DIR] [--plots DIR]
#
# --quick     shorter windows (the sidecar 4 s, the service 2 s); default 8 s and 4 s.
#             Either way every point is measured in 3 interleaved rounds.
# --out DIR   where curves-export.json and curves-service.json go
#             (default: target/bench-curves)
# --plots DIR where export-curve.svg and service-curve.svg go (default: the --out DIR)
#
# The sidecar: `export_bench curve` (200,000 events/s spread over 1, 16, 256 and
# 1,000 rings; the sidecar into prometheus, into nop, and the floor reader). The
# service: `service_curve` (1, 8 and 64 clients; SQLite, PostgreSQL with
# synchronous_commit on and off), run as `nixl-telemetry serve`. PostgreSQL: the
# server in NIXL_TELEMETRY_TEST_POSTGRES_URL, or else the throw-away cluster of
# scripts/test-service.sh --postgres-only, started here and removed at the end.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"

export_args=(--seconds 8 --repeat 3)
service_args=(--seconds 4 --repeat 3)
out="$ROOT/target/bench-curves"
plots=""
while [ $# -ge 1 ]; do
    case "$1" in
    --quick) export_args=(--seconds 4 --repeat 3); service_args=(--seconds 2 --repeat 3) ;;
    --out) out="${2:?--out needs a directory}"; shift ;;
    --plots) plots="${2:?--plots needs a directory}"; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-curves.sh: unknown option '$1'; accepted: --quick, --out DIR, --plots DIR" >&2; exit 2 ;;
    esac
    shift
done
mkdir -p "$out"
plots="${plots:-$out}"

echo "building nixl-telemetry, the Prometheus plug-in and the bench programs (release) ..." >&2
cargo build --release --quiet --locked --manifest-path "$ROOT/Cargo.toml" -p nixl-telemetry-cli \
    -p nixl-telemetry-exporter-prometheus -p nixl-telemetry-bench >&2
target="$(cargo metadata --format-version 1 --no-deps --manifest-path "$ROOT/Cargo.toml" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
bin="$target/release"

cluster_pid=""
cluster_log=""
stop_cluster() {
    if [ -n "$cluster_pid" ]; then
        # SIGTERM to its process group: its EXIT trap stops and removes the
        # cluster (SIGINT would not do: a background job ignores it).
        kill -TERM -- "-$cluster_pid" 2>/dev/null || true
        wait "$cluster_pid" 2>/dev/null || true
    fi
    [ -n "$cluster_log" ] && rm -f "$cluster_log"
}
trap stop_cluster EXIT

if [ -z "${NIXL_TELEMETRY_TEST_POSTGRES_URL:-}" ]; then
    cluster_log="$(mktemp)"
    setsid bash "$HERE/test-service.sh" --postgres-only >"$cluster_log" 2>&1 &
    cluster_pid=$!
    for _ in $(seq 1 600); do
        grep -q '^NIXL_TELEMETRY_TEST_POSTGRES_URL=' "$cluster_log" && break
        kill -0 "$cluster_pid" 2>/dev/null || { cat "$cluster_log" >&2; exit 1; }
        sleep 0.5
    done
    url="$(sed -n 's/^NIXL_TELEMETRY_TEST_POSTGRES_URL=//p' "$cluster_log")"
    [ -n "$url" ] || { cat "$cluster_log" >&2; echo "bench-curves.sh: the PostgreSQL cluster did not start" >&2; exit 1; }
    export NIXL_TELEMETRY_TEST_POSTGRES_URL="$url"
fi

echo "== machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "== the sidecar: CPU per event as the rings grow"
"$bin/export_bench" curve "${export_args[@]}" --json "$out/curves-export.json"
echo "== the service: records/s as the clients grow"
"$bin/service_curve" "${service_args[@]}" --json "$out/curves-service.json"
echo "== the curves as SVG"
"$bin/curves_plot" --export "$out/curves-export.json" --service "$out/curves-service.json" --out "$plots"
