#!/usr/bin/env bash
# Parity of our prometheus_mp plug-in with NIXL 1.5.1's own
# libtelemetry_exporter_prometheus_mp.so, on one multi-process workload:
#
#   bash scripts/test-prometheus-mp.sh
#
# Installs nixl-cu12 1.5.1 (CPU is enough) into a virtual environment under
# ${XDG_CACHE_HOME:-$HOME/.cache}/nixl-telemetry/nixl-mp/1.5.1 (reused when
# present), then runs two ranks (LOCAL_RANK 0 and 1) of
# scripts/prometheus-mp/nixl_rank.py under NIXL's plug-in, and the same
# agents' events (scripts/prometheus-mp/events_for_rank.py) through
# `nixl-telemetry emit` under ours, each run on its own directory and port;
# scrapes both endpoints and compares them (scripts/prometheus-mp/compare.py).
# The Rust tests of the plug-in run with `cargo test` (test-all.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"

# shellcheck source=scripts/lib.sh
. scripts/lib.sh
venv="$(dirname "$(dirname "$(python_env nixl-mp/1.5.1)")")"
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
nixl_plugins="$site/.nixl_cu12.mesonpy.libs/plugins"
test -f "$nixl_plugins/libtelemetry_exporter_prometheus_mp.so"

echo "== building nixl-telemetry and the prometheus_mp plug-in"
cargo build -q --locked -p nixl-telemetry-cli -p nixl-telemetry-exporter-prometheus-mp
target="${CARGO_TARGET_DIR:-$root/target}/debug"

work="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/plugins"
cp "$target/libtelemetry_exporter_prometheus_mp.so" "$work/plugins/"

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# scrape PORT OUT: waits until the endpoint shows the four agents' sending
# and receiving totals, lets one more flush pass, and keeps that scrape.
scrape() {
    python3 - "$1" "$2" <<'PY'
import sys, time, urllib.request
port, out = sys.argv[1], sys.argv[2]
url = f"http://127.0.0.1:{port}/metrics"
deadline = time.monotonic() + 60
while True:
    try:
        text = urllib.request.urlopen(url, timeout=5).read().decode()
        lines = [l for l in text.splitlines() if l.startswith("agent_tx_requests_num_total{")]
        total = sum(float(l.rsplit(" ", 1)[1]) for l in lines)
        if len(lines) == 4 and total == 2 + 3:
            time.sleep(1.0)
            text = urllib.request.urlopen(url, timeout=5).read().decode()
            open(out, "w").write(text)
            break
    except OSError:
        pass
    if time.monotonic() > deadline:
        sys.exit(f"{url} did not show the four agents within 60 s")
    time.sleep(0.2)
PY
}

common_env() {
    echo NIXL_TELEMETRY_ENABLE=y NIXL_TELEMETRY_EXPORTER=prometheus_mp \
        NIXL_TELEMETRY_MULTIPROC_DIR="$1" NIXL_TELEMETRY_PROMETHEUS_PORT="$2" \
        NIXL_TELEMETRY_PROMETHEUS_LOCAL=y
}

echo "== NIXL 1.5.1's prometheus_mp: two ranks, agents initiator and target in each"
port="$(free_port)"
for r in 0 1; do
    env $(common_env "$work/nixl-run" "$port") LOCAL_RANK="$r" \
        NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR="$nixl_plugins" \
        "$venv/bin/python" scripts/prometheus-mp/nixl_rank.py \
        --writes $((2 + r)) --reads $((1 + r)) --marker "$work/nixl-$r" \
        >"$work/nixl-$r.log" 2>&1 &
    pids+=($!)
done
scrape "$port" "$work/nixl.txt"
touch "$work/nixl-0.stop" "$work/nixl-1.stop"

echo "== ours: the same agents' events through nixl-telemetry emit"
port="$(free_port)"
for r in 0 1; do
    for agent in initiator target; do
        python3 scripts/prometheus-mp/events_for_rank.py "$agent" \
            --writes $((2 + r)) --reads $((1 + r)) >"$work/$agent-$r.jsonl"
        env $(common_env "$work/our-run" "$port") LOCAL_RANK="$r" \
            NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR="$work/plugins" \
            "$target/nixl-telemetry" emit --agent "$agent" --hold 120 \
            --events "$work/$agent-$r.jsonl" >"$work/ours-$agent-$r.log" 2>&1 &
        pids+=($!)
    done
done
scrape "$port" "$work/ours.txt"

echo "== comparing"
python3 scripts/prometheus-mp/compare.py "$work/nixl.txt" "$work/ours.txt"
