#!/usr/bin/env bash
# The real Prometheus the Prometheus plug-in's tests drive.
#
#   bash scripts/prometheus-test-env.sh            install prometheus and promtool when
#                                                   missing (scripts/install-test-deps.sh:
#                                                   Debian's prometheus package), then
#                                                   print their versions
#   bash scripts/prometheus-test-env.sh run ADDR    also start a throw-away Prometheus on a
#                                                   free loopback port scraping ADDR
#                                                   (ip:port of an exporter) every 200 ms,
#                                                   until interrupted
#
# Idempotent. Installing needs root (or sudo). The package may try to start its own
# system service; nothing here relies on it: the tests start their own instance on a
# free loopback port with a generated configuration (crates/cli/tests/it/prometheus_real_server.rs).
set -euo pipefail

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

bash "$(dirname "$0")/install-test-deps.sh"
echo "== $(prometheus --version 2>&1 | head -1)"
echo "== $(promtool --version 2>&1 | head -1)"

case "${1:-}" in
"") ;;
run)
    target="${2:?usage: $0 run IP:PORT}"
    case "$target" in
    127.*|\[::1\]*|localhost:*) ;;
    *) echo "prometheus-test-env: scrape loopback targets only (127.0.0.0/8 or [::1])" >&2; exit 2 ;;
    esac
    dir="$(mktemp -d)"
    trap 'rm -rf "$dir"' EXIT
    port="$(free_port)"
    cat >"$dir/prometheus.yml" <<EOF
global:
  scrape_interval: 200ms
  scrape_timeout: 200ms
scrape_configs:
  - job_name: nixl
    static_configs:
      - targets: ['$target']
EOF
    echo "== Prometheus at http://127.0.0.1:$port scraping $target (Ctrl-C stops it)"
    prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
        --web.listen-address="127.0.0.1:$port" --log.level=warn
    ;;
*)
    echo "usage: $0 [run IP:PORT]" >&2
    exit 2
    ;;
esac
