#!/usr/bin/env bash
# The compatibility matrix against the oldest and the newest NIXL release (the real
# wheels from PyPI, installed under ${XDG_CACHE_HOME:-$HOME/.cache}/nixl-telemetry/nixl
# and reused): our readers read their rings, their readers read ours, and (1.5.x) our
# Prometheus plug-in exposes what theirs does. Needs network access to PyPI on the first
# run (about 130 MB). Every release: scripts/nixl-releases.sh matrix (docs/compatibility.md).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || set -- 1.0.0 1.5.1
exec bash scripts/nixl-releases.sh matrix "$@"
