#!/usr/bin/env bash
# The Python package's tests (crates/python): builds the abi3 wheel with maturin,
# installs it into a virtual environment under ${XDG_CACHE_HOME:-$HOME/.cache}/nixl-telemetry/
# (created once, then reused) together with the test tools and the reference TAO
# package (the differential tests' oracle), builds the Rust reader the reading
# tests compare with, and runs pytest. Extra arguments go to pytest, e.g.
#     HYPOTHESIS_PROFILE=long bash scripts/test-python.sh -k differential
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/python-venv.sh
. scripts/python-venv.sh

echo "== building telemetry_reader (the reading tests compare with it)"
cargo build --quiet --locked -p nixl-telemetry-cli --bin telemetry_reader
export NIXL_TELEMETRY_READER="$PWD/target/debug/telemetry_reader"

echo "== building and installing the wheel"
WHEELS="$PWD/target/wheels"
rm -f "$WHEELS"/nixl_telemetry-*.whl
"$VENV/bin/maturin" build --quiet --release --locked \
    --manifest-path crates/python/Cargo.toml --interpreter "$VENV/bin/python" --out "$WHEELS"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
    --force-reinstall "$WHEELS"/nixl_telemetry-*.whl

echo "== pytest crates/python/tests"
# Hypothesis keeps its caches there, not in the work tree.
export HYPOTHESIS_STORAGE_DIRECTORY="$CACHE/hypothesis"
status=0
"$VENV/bin/python" -m pytest crates/python/tests -q -p no:cacheprovider "$@" || status=$?
if [ "$status" -eq 5 ]; then
    echo "test-python.sh: pytest collected no tests (exit 5): that is a failure here" >&2
    exit 1
fi
exit "$status"
