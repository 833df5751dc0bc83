#!/usr/bin/env bash
# The OTLP exporter's tests against a real receiver: prepares a Python virtual
# environment with the OpenTelemetry project's `opentelemetry-proto` and
# `protobuf` packages (reused when present), builds the plug-in, then runs
# every test of the crate, the receiver tests included (they are #[ignore]d
# in a plain `cargo test`, since they need this environment).
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/lib.sh
. scripts/lib.sh
python="$(python_env otlp)"

echo "== OTLP exporter tests (receiver: $python)"
cargo build -p nixl-telemetry-exporter-otlp --locked
NIXL_OTLP_TEST_PYTHON="$python" cargo test -p nixl-telemetry-otlp -p nixl-telemetry-exporter-otlp --locked -- --include-ignored
