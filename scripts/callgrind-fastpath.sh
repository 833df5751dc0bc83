#!/usr/bin/env bash
# Instruction counts of the telemetry fast path under callgrind.
#
#   scripts/callgrind-fastpath.sh [N]      (default N = 100000)
#
# Builds the release bench binary, runs its `--callgrind N` mode under
# `valgrind --tool=callgrind`, and prints, for each loop of
# crates/bench/src/callgrind.rs, its inclusive instructions divided by N: the
# instructions of one call, loop overhead included (≈ 3-4 instructions).
# Instruction counts are repeatable where wall time on a shared 2-core machine
# is not: a regression of the fast path shows up here as a number.
set -euo pipefail
n="${1:-100000}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cargo build --release -q -p nixl-telemetry-bench
bin="$root/target/release/nixl-telemetry-bench"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" "$bin" --callgrind "$n" \
  >"$out/stdout" 2>"$out/valgrind.log" || { cat "$out/valgrind.log" >&2; exit 1; }
cat "$out/stdout"
callgrind_annotate --inclusive=yes --threshold=100 "$out/cg.out" >"$out/annotate.txt"
printf '%-28s %12s %10s\n' loop instructions per_call
for f in record_loop record_at_loop generic_loop transfer_loop clock_loop floor_loop two_agents_loop disabled_loop; do
  ir="$(grep -E "callgrind::callgrind_${f}[ ]|callgrind::callgrind_${f}\$" "$out/annotate.txt" \
        | head -1 | awk '{gsub(",", "", $1); print $1}')"
  if [ -z "$ir" ]; then
    printf '%-28s %12s %10s\n' "$f" "?" "?"
    continue
  fi
  awk -v f="$f" -v ir="$ir" -v n="$n" 'BEGIN { printf "%-28s %12d %10.1f\n", f, ir, ir / n }'
done
