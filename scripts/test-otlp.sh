#!/usr/bin/env bash
# The OTLP exporter's tests against a real receiver: prepares a Python virtual
# environment with the OpenTelemetry project's `opentelemetry-proto` and
# `protobuf` packages (reused when present), builds the plug-in, then runs
# every test of the crate, the receiver tests included (they are #[ignore]d
# in a plain `cargo test`, since they need this environment).
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${XDG_CACHE_HOME:-$HOME/.cache}/nixl-telemetry/otlp-venv"
python="$venv/bin/python"
check='import opentelemetry.proto.collector.metrics.v1.metrics_service_pb2, opentelemetry.proto.collector.logs.v1.logs_service_pb2'

if ! [ -x "$python" ] || ! "$python" -c "$check" >/dev/null 2>&1; then
    echo "== preparing $venv (opentelemetry-proto, protobuf)"
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
        # Debian ships venv support in a package of its own.
        sudo=""
        [ "$(id -u)" -ne 0 ] && sudo="sudo"
        minor="$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
        export DEBIAN_FRONTEND=noninteractive
        $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
        $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
            "python${minor}-venv" >/dev/null || \
            $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends python3-venv >/dev/null
        rm -rf "$venv"
        python3 -m venv "$venv"
    fi
    "$python" -m pip install --quiet --disable-pip-version-check opentelemetry-proto protobuf
    "$python" -c "$check"
fi

echo "== OTLP exporter tests (receiver: $python)"
cargo build -p nixl-telemetry-exporter-otlp --locked
NIXL_OTLP_TEST_PYTHON="$python" cargo test -p nixl-telemetry-otlp -p nixl-telemetry-exporter-otlp --locked -- --include-ignored
