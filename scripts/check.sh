#!/usr/bin/env bash
# The fast tier: what a contributor runs before every commit, and what .ci/run runs
# first. Formatting, lints, the API docs, the doc links and every Rust test of the
# workspace; it installs nothing (tests that need Prometheus, PostgreSQL, tmux or
# Chromium say so and skip when those are missing; scripts/test-all.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo doc (broken or private intra-doc links fail)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet

echo "== doc links (relative links and anchors of README, CONTRIBUTING, ARCHITECTURE, docs/)"
python3 scripts/check-links.py

echo "== python reader tests"
python3 -m unittest discover -s python/tests

echo "== cargo test"
cargo test --workspace --locked
