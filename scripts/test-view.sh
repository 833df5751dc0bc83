#!/usr/bin/env bash
# `nixl-telemetry top` in a real terminal (tmux) and `nixl-telemetry report`'s
# page in a real browser (headless Chromium): installs Debian's tmux and
# chromium when they are missing, then runs the tests that drive them. In a
# plain `cargo test` these tests skip, saying so, when the tools are missing;
# here NIXL_VIEW_TESTS_REQUIRED makes a missing tool a failure.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/lib.sh
. scripts/lib.sh
need_commands tmux:tmux chromium:chromium

echo "== top under tmux, report in headless Chromium"
NIXL_VIEW_TESTS_REQUIRED=1 cargo test -p nixl-telemetry-cli --locked \
    --test it -- top_tmux report_chromium
