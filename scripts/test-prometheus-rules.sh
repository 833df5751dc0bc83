#!/usr/bin/env bash
# The Prometheus rule files shipped beside the dashboards (docs/grafana/*.rules.yml:
# the NIXL half and the TAO service half), with Prometheus's own promtool
# (Debian's prometheus package, installed with apt-get when missing):
#   * `promtool check rules` on each rule file;
#   * `promtool test rules` on each unit test file (docs/grafana/*.rules.test.yml);
#   * every alert of a rule file has, in its test file, a case where it fires and a
#     case where it stays quiet (`exp_alerts: []`);
#   * every metric name the rules use is one the code exposes.
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

# The rules name series that exist: each metric name of a rule file is one the
# code exposes (a unit test's input series could repeat a misspelt name).
check_names() {
    local rules="$1" pattern="$2" name base
    shift 2
    for name in $(grep -oE "$pattern" "$rules" | sort -u); do
        base="${name%_total}"
        if ! grep -qE "\"($name|$base)\"" "$@"; then
            echo "FAIL: $rules names $name, which none of $* exposes" >&2
            failed=1
        fi
    done
}
check_names docs/grafana/nixl-telemetry.rules.yml '\b(agent|export)_[a-z_]+_total\b' \
    crates/metrics/src/families.rs crates/export/src/own_series.rs
grep -q '"export_refused_"' crates/export/src/own_series.rs ||
    { echo "FAIL: the sidecar no longer names its refusals export_refused_<cause>" >&2; failed=1; }
check_names docs/grafana/tao-service.rules.yml '\btao_[a-z_]+\b' crates/service/src/http/*.rs

if [ "$failed" -ne 0 ]; then
    echo "FAIL: Prometheus rules" >&2
    exit 1
fi
echo "== Prometheus rules: every rule file checked, every alert fires and stays quiet as its tests expect"
