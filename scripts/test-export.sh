#!/usr/bin/env bash
# `nixl-telemetry export` as people run it, and against the real NIXL releases:
#
# 1. the deployment examples of docs/deploy/: the systemd unit passes
#    `systemd-analyze verify` (Debian's systemd package, installed when missing), with
#    ExecStart pointed at the built binary; the Kubernetes example parses as YAML and
#    mounts one in-memory emptyDir as NIXL_TELEMETRY_DIR in both containers;
# 2. scripts/export_releases.py: NIXL 1.0.0, 1.1.0, 1.3.2 and 1.5.1 run the workload at
#    the same time into one directory while the sidecar exports it, to our Prometheus
#    plug-in (compared with NIXL 1.5.1's own plug-in) and to our OTLP plug-in (decoded by
#    a receiver built on opentelemetry-proto).
#
# Releases are installed into the cache as the compatibility matrix installs them
# (scripts/nixl-releases.sh); the OTLP receiver's virtual environment is the one of
# scripts/test-otlp.sh. Options: releases to run instead of the four above; --out DIR
# keeps the run's files.
set -euo pipefail
cd "$(dirname "$0")/.."

out=()
releases=()
while [ $# -gt 0 ]; do
    case "$1" in
    --out) out=(--out "${2:?--out needs a directory}"); shift 2 ;;
    *) releases+=("$1"); shift ;;
    esac
done
[ ${#releases[@]} -gt 0 ] || releases=(1.0.0 1.1.0 1.3.2 1.5.1)

# shellcheck source=scripts/lib.sh
. scripts/lib.sh

echo "== building nixl-telemetry and the Prometheus and OTLP plug-ins"
cargo build --locked -p nixl-telemetry-cli -p nixl-telemetry-exporter-prometheus \
    -p nixl-telemetry-exporter-otlp
bin="$PWD/target/debug/nixl-telemetry"

echo "== deployment examples (docs/deploy)"
need_commands systemd-analyze:systemd
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
sed "s#/usr/local/bin/nixl-telemetry#$bin#" docs/deploy/nixl-telemetry-export.service \
    >"$tmp/nixl-telemetry-export.service"
# Any remark (an unknown key, a command that cannot run) fails the check.
if ! verify="$(systemd-analyze verify "$tmp/nixl-telemetry-export.service" 2>&1)" || [ -n "$verify" ]; then
    echo "systemd-analyze verify docs/deploy/nixl-telemetry-export.service:" >&2
    echo "$verify" >&2
    exit 1
fi
# The descriptor limit the rings need is the unit's, not the system default.
if ! grep -q '^LimitNOFILE=[0-9]' docs/deploy/nixl-telemetry-export.service; then
    echo "docs/deploy/nixl-telemetry-export.service sets no LimitNOFILE=" >&2
    exit 1
fi
echo "systemd unit: systemd-analyze verify passes; LimitNOFILE set"
"$(python_env yaml)" - docs/deploy/kubernetes-sidecar.yaml <<'PY'
import sys
import yaml

with open(sys.argv[1]) as f:
    pod = yaml.safe_load(f)
spec = pod["spec"]
volume = next(v for v in spec["volumes"] if "emptyDir" in v)
assert volume["emptyDir"]["medium"] == "Memory", volume
containers = spec["containers"] + spec.get("initContainers", [])
assert len(containers) == 2, [c["name"] for c in containers]
for c in containers:
    env = {e["name"]: e["value"] for e in c["env"]}
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    assert mounts[volume["name"]] == env["NIXL_TELEMETRY_DIR"], (c["name"], mounts, env)
sidecar = next(c for c in containers if c.get("command", [None])[:2] == ["nixl-telemetry", "export"])
assert sidecar.get("restartPolicy") == "Always", "a native sidecar"
print("kubernetes example: parses; one in-memory emptyDir is NIXL_TELEMETRY_DIR in both containers")
PY

echo "== the OTLP receiver's environment (opentelemetry-proto)"
python="$(python_env otlp)"

echo "== NIXL ${releases[*]} at once into one directory, exported by the sidecar"
bash scripts/nixl-releases.sh install "${releases[@]}"
python3 scripts/export_releases.py --binary "$bin" --plugin-dir "$PWD/target/debug" \
    --otlp-python "$python" "${out[@]}" "${releases[@]}"
