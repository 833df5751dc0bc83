#!/usr/bin/env bash
# The Prometheus rule files shipped beside the dashboards (docs/grafana/*.rules.yml:
# the NIXL half and the TAO service half), with Prometheus's own promtool
# (Debian's prometheus package, installed with apt-get when missing):
#   * `promtool check rules` on each rule file;
#   * `promtool test rules` on each unit test file (docs/grafana/*.rules.test.yml);
#   * every alert of a rule file has, in its test file, a case where it fires and a
#     case where it stays quiet (`exp_alerts: []`).
#
#   bash scripts/test-prometheus-rules.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/lib.sh
. scripts/lib.sh
need_commands promtool:prometheus

failed=0
rule_files=()
for file in docs/grafana/*.rules.yml; do
    rule_files+=("$file")
done
[ ${#rule_files[@]} -gt 0 ] || { echo "no rule files under docs/grafana" >&2; exit 1; }

for rules in "${rule_files[@]}"; do
    tests="${rules%.yml}.test.yml"
    echo "== $rules"
    promtool check rules "$rules" || failed=1
    if [ ! -f "$tests" ]; then
        echo "FAIL: $rules has no unit tests ($tests)" >&2
        failed=1
        continue
    fi
    # Rule files in a test file are relative to it.
    (cd "$(dirname "$tests")" && promtool test rules "$(basename "$tests")") || failed=1
    # Each alert: a case that expects it to fire, and one that expects silence.
    alerts="$(sed -n 's/^ *- alert: *\([A-Za-z0-9_:]*\).*/\1/p' "$rules")"
    [ -n "$alerts" ] || { echo "FAIL: $rules has no alert" >&2; failed=1; }
    cases="$(awk '
        /^ *(- )?alertname: / { sub(/^ *(- )?alertname: */, ""); name = $0; next }
        /^ *exp_alerts: *\[\] *$/ { if (name != "") print name, "quiet"; name = ""; next }
        /^ *exp_alerts: *$/ { if (name != "") print name, "fires"; name = ""; next }
    ' "$tests")"
    for alert in $alerts; do
        for outcome in fires quiet; do
            if ! grep -qx "$alert $outcome" <<<"$cases"; then
                echo "FAIL: $tests has no case where $alert $outcome" >&2
                failed=1
            fi
        done
    done
done

if [ "$failed" -ne 0 ]; then
    echo "FAIL: Prometheus rules" >&2
    exit 1
fi
echo "== Prometheus rules: every rule file checked, every alert fires and stays quiet as its tests expect"
