#!/usr/bin/env bash
# The real NIXL releases (PyPI package nixl-cu12), installed into a cache and driven from
# here: write rings with a deterministic workload, read rings with a release's own C++
# reader, scrape a release's Prometheus plug-in, and run the compatibility matrix against
# this worktree's readers, writer and Prometheus plug-in.
#
#   scripts/nixl-releases.sh install VER...           venv per release (reused when present)
#   scripts/nixl-releases.sh write VER DIR [ARGS]     workload -> rings DIR/initiator, DIR/target
#   scripts/nixl-releases.sh read [--repaired] VER PATH
#                                                     the release's reader on a COPY of PATH
#   scripts/nixl-releases.sh prometheus VER OUT [ARGS] workload with the release's Prometheus
#                                                     plug-in on a free loopback port; /metrics -> OUT
#   scripts/nixl-releases.sh run VER [ARGS]           the workload under VER with the caller's
#                                                     NIXL_* variables as they are
#   scripts/nixl-releases.sh libdir VER               the release's library directory (libnixl.so, plugins/)
#   scripts/nixl-releases.sh matrix [--out DIR] [--no-build] [--only a,b,c,d,e] [VER...]
#                                                     the compatibility matrix (default: every release)
#   scripts/nixl-releases.sh fixtures VER OUTDIR     small rings + the release reader's output
#   scripts/nixl-releases.sh list                     the known releases
#
# ARGS go to scripts/nixl_workload.py (e.g. --writes 5; `write` understands
# --agent-prefix=P, rings DIR/Pinitiator, DIR/Ptarget). Cache:
# ${XDG_CACHE_HOME:-$HOME/.cache}/nixl-telemetry/nixl/<VER>. Rings are written with
# NIXL_TELEMETRY_BUFFER_SIZE=${NIXL_TELEMETRY_BUFFER_SIZE:-64}.
#
# `read` exit status: 0 read (the reader polls until SIGINT; it gets one after
# NIXL_READ_SECONDS, default 2), 1 the reader reported an error (stderr shows it),
# 3 the reader crashed (the signal is named on stderr). Releases 1.2.0, 1.3.x and 1.4.0
# ship a reader that crashes in the dynamic loader before main; `--repaired` runs a copy
# whose program headers are repaired by scripts/nixl_elf_repair.py (see
# docs/compatibility.md).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
# shellcheck source=scripts/lib.sh
. "$HERE/lib.sh"
CACHE="$NIXL_TELEMETRY_CACHE/nixl"
RELEASES="0.10.0 0.10.1 1.0.0 1.0.1 1.1.0 1.2.0 1.3.0 1.3.1 1.3.2 1.4.0 1.4.1 1.5.0 1.5.1"

die() {
    echo "nixl-releases.sh: $*" >&2
    exit 2
}

check_release() {
    local v
    for v in $RELEASES; do
        [ "$v" = "$1" ] && return 0
    done
    die "unknown release '$1'; known: $RELEASES"
}

site_packages() {
    local d
    for d in "$CACHE/$1"/lib/python3*/site-packages; do
        [ -d "$d/nixl_cu12" ] && { echo "$d"; return 0; }
    done
    die "release $1 is not installed under $CACHE/$1 (run: $0 install $1)"
}

install_one() {
    local v="$1" d="$CACHE/$1" sp reader
    check_release "$v"
    if [ -x "$d/bin/python" ] &&
        "$d/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('nixl-cu12') != '$v')" 2>/dev/null; then
        echo "nixl $v: installed in $d (reused)" >&2
    else
        echo "nixl $v: installing into $d" >&2
        if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
            # Debian's python3 keeps venv's pip bootstrap in a separate package.
            need_packages python3-venv
        fi
        rm -rf "$d"
        python3 -m venv "$d"
        "$d/bin/pip" install --quiet --no-deps "nixl-cu12==$v" numpy
    fi
    sp="$(site_packages "$v")"
    reader="$sp/nixl_cu12.scripts/telemetry_reader"
    [ -f "$reader" ] || die "release $v has no telemetry_reader at $reader"
    chmod +x "$reader"
    if [ ! -x "$d/telemetry_reader.repaired" ]; then
        python3 "$HERE/nixl_elf_repair.py" "$reader" "$d/telemetry_reader.repaired" >"$d/telemetry_reader.repaired.txt"
        chmod +x "$d/telemetry_reader.repaired"
    fi
    # Releases up to 1.3 import torch only for isinstance checks: a stand-in is enough.
    mkdir -p "$CACHE/torch-stub"
    [ -f "$CACHE/torch-stub/torch.py" ] ||
        printf '"""Stand-in for torch: NIXL releases up to 1.3 only use isinstance(x, torch.Tensor)."""\n\n\nclass Tensor:\n    pass\n' >"$CACHE/torch-stub/torch.py"
}

libpath() {
    local sp
    sp="$(site_packages "$1")"
    echo "$sp/.nixl_cu12.mesonpy.libs:$sp/nixl_cu12.libs"
}

# Runs the workload under release $1 with the telemetry variables already exported.
run_workload() {
    local v="$1"
    shift
    PYTHONPATH="$CACHE/torch-stub${PYTHONPATH:+:$PYTHONPATH}" \
        "$CACHE/$v/bin/python" "$HERE/nixl_workload.py" "$@"
}

cmd_write() {
    [ $# -ge 2 ] || die "usage: write VER DIR [workload args]"
    local v="$1" dir="$2" arg prefix=""
    shift 2
    check_release "$v"
    site_packages "$v" >/dev/null
    for arg in "$@"; do
        case "$arg" in --agent-prefix=*) prefix="${arg#--agent-prefix=}" ;; esac
    done
    mkdir -p "$dir"
    # NIXL opens an existing ring without truncating it: start from no file.
    rm -f "$dir/${prefix}initiator" "$dir/${prefix}target"
    (
        unset NIXL_TELEMETRY_EXPORTER NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH
        export NIXL_TELEMETRY_ENABLE=y NIXL_TELEMETRY_DIR="$dir"
        export NIXL_TELEMETRY_BUFFER_SIZE="${NIXL_TELEMETRY_BUFFER_SIZE:-64}"
        run_workload "$v" "$@" >&2
    )
    [ -f "$dir/${prefix}initiator" ] && [ -f "$dir/${prefix}target" ] || die "release $v wrote no rings into $dir"
}

signal_name() {
    kill -l "$1" 2>/dev/null || echo "signal $1"
}

cmd_read() {
    local repaired=0
    if [ "${1:-}" = "--repaired" ]; then
        repaired=1
        shift
    fi
    [ $# -eq 2 ] || die "usage: read [--repaired] VER PATH"
    local v="$1" path="$2" sp reader tmp copy rc
    check_release "$v"
    [ -f "$path" ] || die "no ring file at $path"
    sp="$(site_packages "$v")"
    reader="$sp/nixl_cu12.scripts/telemetry_reader"
    if [ "$repaired" = 1 ]; then
        reader="$CACHE/$v/telemetry_reader.repaired"
        [ -x "$reader" ] || die "no repaired reader for $v (run: $0 install $v)"
        echo "nixl-releases.sh: release $v reader: repaired copy ($(cat "$CACHE/$v/telemetry_reader.repaired.txt"))" >&2
    fi
    tmp="$(mktemp -d)"
    # The reader consumes (advances read_pos) and deletes a file of another version:
    # it only ever sees a copy.
    mkdir "$tmp/ring"
    copy="$tmp/ring/$(basename "$path")"
    cp "$path" "$copy"
    set +e
    # Run in the copy's directory with its bare name, so what the reader prints as
    # "Telemetry path:" does not depend on the temporary directory.
    (cd "$tmp/ring" && LD_LIBRARY_PATH="$(libpath "$v")" timeout -k 5 -s INT "${NIXL_READ_SECONDS:-2}" \
        "$reader" "$(basename "$copy")" >"$tmp/stdout" 2>"$tmp/stderr")
    rc=$?
    set -e
    cat "$tmp/stdout"
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
        rm -rf "$tmp"
        return 0
    fi
    cat "$tmp/stderr" >&2
    rm -rf "$tmp"
    if [ "$rc" -gt 128 ]; then
        echo "CRASH: release $v telemetry_reader killed by SIG$(signal_name $((rc - 128))) (exit $rc)" >&2
        return 3
    fi
    echo "ERROR: release $v telemetry_reader exited with status $rc" >&2
    return 1
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

cmd_prometheus() {
    [ $# -ge 2 ] || die "usage: prometheus VER OUT [workload args]"
    local v="$1" out="$2" sp port
    shift 2
    check_release "$v"
    sp="$(site_packages "$v")"
    [ -f "$sp/.nixl_cu12.mesonpy.libs/plugins/libtelemetry_exporter_prometheus.so" ] ||
        die "release $v ships no Prometheus plug-in"
    port="$(free_port)"
    # Scrape once both deregistrations are exposed. The plug-ins of 0.10 to 1.1 serve only
    # the first agent of a process (the initiator), and 1.0 names the family without _total.
    local expect=('agent_memory_deregistered(_total)?\{[^}]*agent_name="initiator"[^}]*\} [1-9]')
    case "$v" in
    0.* | 1.0.* | 1.1.*) ;;
    *) expect+=('agent_memory_deregistered(_total)?\{[^}]*agent_name="target"[^}]*\} [1-9]') ;;
    esac
    (
        unset NIXL_TELEMETRY_DIR NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH
        export NIXL_TELEMETRY_ENABLE=y NIXL_TELEMETRY_EXPORTER=prometheus
        export NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR="$sp/.nixl_cu12.mesonpy.libs/plugins"
        export NIXL_TELEMETRY_PROMETHEUS_PORT="$port" NIXL_TELEMETRY_PROMETHEUS_LOCAL=y
        run_workload "$v" --scrape "http://127.0.0.1:$port/metrics" --scrape-out "$out" \
            "${expect[@]/#/--scrape-expect=}" "$@" >&2
    )
}

# Which probe layout the typed/named layouts of a release use (scripts/nixl_ring_probe.py).
probe_layout() {
    case "$1" in
    0.* | 1.0.*) echo v1 ;;
    1.1.*) echo v2n ;;
    1.2.*) echo v2t ;;
    1.3.*) echo v3 ;;
    *) echo v4 ;;
    esac
}

# Probe slots: every event type 0..23 and 0xFFFFFFFF (typed layouts), or every category
# -1..9 (named layouts), each with its own number as value.
probe_slots() {
    local t
    case "$1" in
    v1 | v2n) for t in -1 0 1 2 3 4 5 6 7 8 9; do printf -- '--slot=%s:probe_category_%s:%s ' "$t" "$t" "$((t + 100))"; done ;;
    v2t) for t in $(seq 0 23) 4294967295; do printf -- '--slot=%s:%s:%s ' "$((t % 10))" "$t" "$t"; done ;;
    *) for t in $(seq 0 23) 4294967295; do printf -- '--slot=%s:%s ' "$t" "$t"; done ;;
    esac
}

# fixtures VER OUTDIR: rings of the workload written by VER (capacity 32), what VER's own
# reader prints for each (TZ=UTC), and a probe ring of every event type or category with
# what the reader prints for it. A reader that crashes as shipped is run from its
# repaired copy, and the crash is recorded.
cmd_fixtures() {
    [ $# -eq 2 ] || die "usage: fixtures VER OUTDIR"
    local v="$1" out="$2" layout agent mode=""
    install_one "$v"
    mkdir -p "$out"
    NIXL_TELEMETRY_BUFFER_SIZE=32 cmd_write "$v" "$out"
    layout="$(probe_layout "$v")"
    # shellcheck disable=SC2046
    python3 "$HERE/nixl_ring_probe.py" "$layout" "$out/probe.ring" --capacity 32 $(probe_slots "$layout")
    rm -f "$out/reader-crash.txt"
    if ! (cmd_read "$v" "$out/target" >/dev/null 2>"$out/reader-crash.txt"); then
        grep '^CRASH' "$out/reader-crash.txt" >"$out/reader-crash.tmp" || true
        mv "$out/reader-crash.tmp" "$out/reader-crash.txt"
        mode="--repaired"
    else
        rm -f "$out/reader-crash.txt"
    fi
    for agent in initiator target probe.ring; do
        TZ=UTC cmd_read $mode "$v" "$out/$agent" >"$out/$agent.reader.txt" 2>/dev/null
    done
}

main() {
    [ $# -ge 1 ] || die "usage: $0 install|write|read|prometheus|run|libdir|matrix|fixtures|list ... ($0 --help)"
    local cmd="$1"
    if [ "$cmd" = -h ] || [ "$cmd" = --help ] || [ "$cmd" = help ]; then
        sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
        return 0
    fi
    shift
    case "$cmd" in
    install)
        [ $# -ge 1 ] || set -- $RELEASES
        local v
        for v in "$@"; do install_one "$v"; done
        ;;
    write) cmd_write "$@" ;;
    run)
        [ $# -ge 1 ] || die "usage: run VER [workload args]"
        check_release "$1"
        site_packages "$1" >/dev/null
        run_workload "$@"
        ;;
    libdir)
        [ $# -eq 1 ] || die "usage: libdir VER"
        check_release "$1"
        echo "$(site_packages "$1")/.nixl_cu12.mesonpy.libs"
        ;;
    read) cmd_read "$@" ;;
    prometheus) cmd_prometheus "$@" ;;
    matrix)
        local v opts=()
        while [ $# -ge 1 ] && [ "${1#-}" != "$1" ]; do
            case "$1" in
            --out) opts+=("$1" "${2:?--out needs a directory}"); shift 2 ;;
            --no-build) opts+=("$1"); shift ;;
            --only) opts+=("$1" "${2:?--only needs a list such as a,b}"); shift 2 ;;
            *) die "matrix options: --out DIR (keep the run's files), --no-build, --only a,b,c,d,e; got '$1'" ;;
            esac
        done
        [ $# -ge 1 ] || set -- $RELEASES
        for v in "$@"; do install_one "$v"; done
        NIXL_RELEASES_SH="$0" python3 "$HERE/nixl_matrix.py" --root "$ROOT" "${opts[@]}" "$@"
        ;;
    fixtures) cmd_fixtures "$@" ;;
    list) echo "$RELEASES" ;;
    *) die "unknown subcommand '$cmd'; accepted: install write read prometheus run libdir matrix fixtures list" ;;
    esac
}

main "$@"
