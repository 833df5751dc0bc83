#!/usr/bin/env bash
# Every test of the project, from a fresh machine with the Rust toolchain and Python:
# installs what the tests need (Prometheus, through apt-get), checks formatting and
# lints and the API docs (no broken links), runs the Python reader's tests, then every
# Rust test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-test-deps.sh

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo doc (broken or private intra-doc links fail)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet

echo "== python reader tests"
python3 -m unittest discover -s python/tests

echo "== python package tests (crates/python: wheel, pytest)"
bash scripts/test-python.sh

echo "== cargo test"
cargo test --workspace --locked
