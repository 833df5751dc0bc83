#!/usr/bin/env bash
# Soak: the demo at full rate for SECONDS (default 600) with everything that
# reads from it running at the same time, and the resources of every process
# sampled once a second.
#
#   bash scripts/soak.sh [SECONDS]
#
# Two demo processes run side by side (one process's telemetry goes either to
# rings or to a plug-in, never both):
#   * demo-ring: `nixl-telemetry demo --dir RINGS`, whose rings are drained by
#     the demo's own consuming reader (every 100 ms) and by an external
#     consuming reader, `nixl-telemetry read RINGS` (following, output to
#     /dev/null);
#   * demo-prom: `nixl-telemetry demo` with the Prometheus plug-in on a free
#     loopback port, scraped in a loop (`curl`, one scrape after the other).
# For demo-ring, demo-prom and the reader, VmRSS, open descriptors and threads
# are sampled every second into docs/soak.csv; docs/soak-rss.png plots them
# (gnuplot, installed from Debian when missing).
#
# Tolerance, after a warm-up of WARMUP seconds (default 60, or a tenth of a
# shorter run): the median RSS of the last minute (or last tenth) may exceed the
# median of the first minute after warm-up by at most 10 % + 4 MiB; the median
# descriptors and threads of the last minute may exceed those of the first
# minute after warm-up by at most 2 (scrape connections come and go: their
# peaks are reported, not judged). Anything more fails the script (exit 1), naming the process and
# the figures. The scrape loop must have scraped successfully at least once a
# second on average, and every process must still be alive at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_TO_RUN=${1:-600}
if ! [[ $SECONDS_TO_RUN =~ ^[0-9]+$ ]] || ((SECONDS_TO_RUN < 30)); then
    echo "soak.sh: invalid duration ${1:-}; accepted: whole seconds ≥ 30" >&2
    exit 2
fi
WARMUP=${WARMUP:-$((SECONDS_TO_RUN >= 600 ? 60 : SECONDS_TO_RUN / 10))}
WINDOW=$((SECONDS_TO_RUN >= 600 ? 60 : SECONDS_TO_RUN / 10))
OUT_CSV=${SOAK_CSV:-docs/soak.csv}
OUT_PNG=${SOAK_PNG:-docs/soak-rss.png}

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
need_commands gnuplot:gnuplot-nox

echo "== building (release)"
cargo build --release --quiet -p nixl-telemetry-cli -p nixl-telemetry-exporter-prometheus
TARGET_DIR=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
BIN=$TARGET_DIR/release/nixl-telemetry
PLUGIN_DIR=$TARGET_DIR/release
test -x "$BIN"
test -f "$PLUGIN_DIR/libtelemetry_exporter_prometheus.so"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/nixl-telemetry-soak-XXXXXX")
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# The demos are stopped with SIGINT once the samples are taken; this is only
# a bound in case the script itself is killed.
RUN_FOR=$((SECONDS_TO_RUN * 2 + 300))

echo "== demo-ring: rings in $WORK/rings, demo-prom: 127.0.0.1:$PORT, $SECONDS_TO_RUN s"
"$BIN" demo --duration "$RUN_FOR" --dir "$WORK/rings" >"$WORK/demo-ring.out" 2>&1 &
DEMO_RING=$!
PIDS+=("$DEMO_RING")
env NIXL_TELEMETRY_EXPORTER=prometheus \
    NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR="$PLUGIN_DIR" \
    NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH="127.0.0.1:$PORT" \
    "$BIN" demo --duration "$RUN_FOR" >"$WORK/demo-prom.out" 2>&1 &
DEMO_PROM=$!
PIDS+=("$DEMO_PROM")

# Wait (60 s at most) for the rings and the endpoint.
ready_by=$((SECONDS + 60))
until [[ -n $(ls "$WORK/rings" 2>/dev/null) ]] &&
    curl -sf --max-time 2 -o /dev/null "http://127.0.0.1:$PORT/metrics"; do
    if ((SECONDS > ready_by)); then
        echo "soak.sh: the demos did not start within 60 s:" >&2
        tail -5 "$WORK"/demo-*.out >&2
        exit 1
    fi
    sleep 0.1
done
echo "== started $(date -u +%T), sampling for $SECONDS_TO_RUN s"
"$BIN" read "$WORK/rings" >/dev/null 2>"$WORK/reader.err" &
READER=$!
PIDS+=("$READER")

(
    ok=0
    fail=0
    end=$((SECONDS + SECONDS_TO_RUN))
    while ((SECONDS < end)); do
        if curl -sf -o /dev/null --max-time 5 "http://127.0.0.1:$PORT/metrics"; then
            ok=$((ok + 1))
        else
            fail=$((fail + 1))
        fi
    done
    echo "$ok $fail" >"$WORK/scrapes"
) &
SCRAPER=$!
PIDS+=("$SCRAPER")

echo "t,process,rss_kib,fds,threads" >"$OUT_CSV"
sample() { # name pid t (bash only: no process started per sample)
    local key value unit rss="" threads="" fds
    [[ -r /proc/$2/status ]] || return 1
    while read -r key value unit; do
        case $key in
            VmRSS:) rss=$value ;;
            Threads:) threads=$value ;;
        esac
    done <"/proc/$2/status" || return 1
    [[ -n $rss && -n $threads ]] || return 1
    fds=(/proc/"$2"/fd/*)
    echo "$3,$1,$rss,${#fds[@]},$threads" >>"$OUT_CSV"
}
# t: whole seconds of wall-clock time since the start (a sample that comes
# late under load is recorded at its real time; a missed second is skipped).
usec() { local n=${EPOCHREALTIME/./}; echo "$((10#$n))"; }
start=$(usec)
t=0
while :; do
    t=$((t + 1))
    now=$(usec)
    behind=$(((now - start) / 1000000))
    ((behind >= t)) && t=$((behind + 1))
    ((t > SECONDS_TO_RUN)) && break
    wait_us=$((start + t * 1000000 - now))
    sleep "$((wait_us / 1000000)).$(printf %06d $((wait_us % 1000000)))"
    for p in "demo-ring:$DEMO_RING" "demo-prom:$DEMO_PROM" "reader:$READER"; do
        # A read of /proc can fail for a moment under load: the process has
        # ended only when it can no longer be signalled.
        if ! sample "${p%%:*}" "${p#*:}" "$t" && ! kill -0 "${p#*:}" 2>/dev/null; then
            status=0
            wait "${p#*:}" || status=$?
            echo "soak.sh: ${p%%:*} (pid ${p#*:}) ended after $t s with status $status; its output:" >&2
            cat "$WORK/${p%%:*}.out" "$WORK/reader.err" 2>/dev/null | tail -20 >&2
            exit 1
        fi
    done
done
wait "$SCRAPER"
read -r SCRAPES SCRAPE_FAILS <"$WORK/scrapes"
# Stop the demos (they run longer than the samples are taken) as Ctrl+C
# would; they print their totals and close their telemetry cleanly.
kill -INT "$DEMO_RING" "$DEMO_PROM"
for pid in "$DEMO_RING" "$DEMO_PROM"; do
    status=0
    wait "$pid" || status=$?
    if ((status != 0)); then
        echo "soak.sh: a demo (pid $pid) exited with status $status after Ctrl+C:" >&2
        tail -20 "$WORK"/demo-*.out >&2
        exit 1
    fi
done
kill "$READER" 2>/dev/null || true
if grep -qi "error" "$WORK/reader.err"; then
    echo "soak.sh: the reader reported an error:" >&2
    cat "$WORK/reader.err" >&2
    exit 1
fi

gnuplot <<EOF
set terminal pngcairo size 1000,600 font ",10"
set output "$OUT_PNG"
set datafile separator ","
set title "Soak: $SECONDS_TO_RUN s of the demo at full rate, Prometheus scraped in a loop, a consuming reader"
set xlabel "seconds"
set ylabel "RSS (MiB)"
set y2label "descriptors, threads"
set ytics nomirror
set y2tics
set yrange [0:*]
set y2range [0:*]
set key outside bottom center horizontal
plot "< grep ',demo-ring,' $OUT_CSV" using 1:(\$3/1024) with lines lw 2 title "demo-ring RSS", \
     "< grep ',demo-prom,' $OUT_CSV" using 1:(\$3/1024) with lines lw 2 title "demo-prom RSS", \
     "< grep ',reader,' $OUT_CSV" using 1:(\$3/1024) with lines lw 2 title "reader RSS", \
     "< grep ',demo-ring,' $OUT_CSV" using 1:4 axes x1y2 with steps dt 2 title "demo-ring fds", \
     "< grep ',demo-prom,' $OUT_CSV" using 1:4 axes x1y2 with steps dt 2 title "demo-prom fds", \
     "< grep ',demo-ring,' $OUT_CSV" using 1:5 axes x1y2 with steps dt 3 title "demo-ring threads", \
     "< grep ',demo-prom,' $OUT_CSV" using 1:5 axes x1y2 with steps dt 3 title "demo-prom threads"
EOF

for d in demo-ring demo-prom; do
    echo "== $d: end of its output"
    grep -v '^ *$' "$WORK/$d.out" | grep -iv "reader\|python3\|telemetry_reader" | tail -8
done
echo "scrapes: $SCRAPES ok, $SCRAPE_FAILS failed"

python3 - "$OUT_CSV" "$WARMUP" "$WINDOW" "$SECONDS_TO_RUN" "$SCRAPES" "$SCRAPE_FAILS" <<'EOF'
import csv, statistics, sys
path, warmup, window, duration, scrapes, fails = sys.argv[1], *map(int, sys.argv[2:])
rows = {}
for r in csv.DictReader(open(path)):
    rows.setdefault(r["process"], []).append((int(r["t"]), int(r["rss_kib"]), int(r["fds"]), int(r["threads"])))
failed = []
for name, samples in rows.items():
    early = [s for s in samples if warmup < s[0] <= warmup + window]
    late = [s for s in samples if s[0] > duration - window]
    after = [s for s in samples if s[0] > warmup]
    rss_early = statistics.median(s[1] for s in early)
    rss_late = statistics.median(s[1] for s in late)
    limit = rss_early * 1.10 + 4096
    fd_base, th_base = statistics.median(s[2] for s in early), statistics.median(s[3] for s in early)
    fd_late, th_late = statistics.median(s[2] for s in late), statistics.median(s[3] for s in late)
    fd_max, th_max = max(s[2] for s in after), max(s[3] for s in after)
    fd_end, th_end = samples[-1][2], samples[-1][3]
    print(f"{name}: RSS median {rss_early / 1024:.1f} MiB (after warm-up) -> {rss_late / 1024:.1f} MiB (last {window} s), "
          f"peak {max(s[1] for s in samples) / 1024:.1f} MiB; fds median {fd_base:g} -> {fd_late:g} (max {fd_max}, last {fd_end}); "
          f"threads median {th_base:g} -> {th_late:g} (max {th_max}, last {th_end})")
    if rss_late > limit:
        failed.append(f"{name}: RSS grew from {rss_early} KiB to {rss_late} KiB (limit {limit:.0f} KiB: +10 % + 4 MiB)")
    if fd_late > fd_base + 2:
        failed.append(f"{name}: open descriptors grew from a median of {fd_base:g} to {fd_late:g} (limit +2)")
    if th_late > th_base + 2:
        failed.append(f"{name}: threads grew from a median of {th_base:g} to {th_late:g} (limit +2)")
if scrapes < duration:
    failed.append(f"only {scrapes} successful scrapes in {duration} s (at least one a second expected)")
if fails:
    failed.append(f"{fails} scrapes failed")
for f in failed:
    print("soak.sh: FAIL:", f, file=sys.stderr)
sys.exit(1 if failed else 0)
EOF
echo "soak.sh: passed; samples in $OUT_CSV, plot in $OUT_PNG"
