#!/usr/bin/env bash
# The compatibility matrix against the oldest and the newest NIXL release (the real
# wheels from PyPI, installed under ${XDG_CACHE_HOME:-$HOME/.cache}/nixl-telemetry/nixl
# and reused): our readers read their rings, their readers read ours, and (1.5.x) our
# Prometheus plug-in exposes what theirs does. Needs network access to PyPI on the first
# run (about 130 MB of downloads). Options are the matrix's (e.g. --only a,b: check only
# those columns); releases given replace 1.0.0 and 1.5.1. Every release:
# scripts/nixl-releases.sh matrix (docs/compatibility.md).
set -euo pipefail
cd "$(dirname "$0")/.."
have_release=0
for arg in "$@"; do
    case "$arg" in
    [0-9]*.[0-9]*.[0-9]*) have_release=1 ;;
    esac
done
[ "$have_release" = 1 ] || set -- "$@" 1.0.0 1.5.1
exec bash scripts/nixl-releases.sh matrix "$@"
