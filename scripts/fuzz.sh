#!/usr/bin/env bash
# The fuzz targets of fuzz/ (cargo-fuzz: libFuzzer + AddressSanitizer), on the
# installed stable toolchain. See docs/testing.md ("Fuzzing").
#
#   bash scripts/fuzz.sh ci                     every target FUZZ_CI_SECONDS (default 5) s on its corpus (unoptimised build)
#   bash scripts/fuzz.sh long SECONDS [TARGET…] each target (default: all) SECONDS s, one after another
#   bash scripts/fuzz.sh build                  only build the targets
#   bash scripts/fuzz.sh list                   the targets
# FUZZ_NO_BUILD=1 runs the targets as already built.
#
# How it works on stable: cargo-fuzz passes `-Zsanitizer=address` and the
# `-Cpasses=sancov-module` / `-Cllvm-args=-sanitizer-coverage-*` flags, which a
# stable rustc accepts when RUSTC_BOOTSTRAP=1 is set; the stable toolchain ships
# the AddressSanitizer runtime (librustc-stable_rt.asan.a). cargo-fuzz is installed
# with `cargo install cargo-fuzz --locked` into ~/.cargo/bin when missing.
#
# Each run starts from the checked-in seeds (fuzz/corpus/TARGET, read only) and
# keeps what it finds under fuzz/target/corpus-run/TARGET; logs go to
# fuzz/target/logs, crashing inputs to fuzz/artifacts/TARGET/. Per input: a timeout
# of FUZZ_TIMEOUT (default 10) s counts as a hang, more than FUZZ_RSS_MB (default
# 2048) MB resident or a single allocation over FUZZ_MALLOC_MB (default 512) MB as
# out-of-memory. Any crash, hang or OOM fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# The sanitizer builds live in the fuzz workspace's own target directory, where the
# runs below find them, whatever target directory the caller set for the project.
export CARGO_TARGET_DIR=$root/fuzz/target

mode=${1:-ci}
export RUSTC_BOOTSTRAP=1
export PATH="$HOME/.cargo/bin:$PATH"
# The targets are built for the host triple; cargo-fuzz names it explicitly.
triple=$(rustc -vV | sed -n 's/^host: //p')
build_flags=(--sanitizer address --debug-assertions --target "$triple")
bin_dir=$root/fuzz/target/$triple/release
if [ "$mode" = ci ]; then
    # A few seconds per target need no optimised build, and an unoptimised one
    # builds in about half the time.
    build_flags+=(--dev)
    bin_dir=$root/fuzz/target/$triple/debug
fi

targets() {
    sed -n 's/^name = "\([a-z_]*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^nixl' || true
}

install() {
    if ! cargo fuzz --version >/dev/null 2>&1; then
        echo "== installing cargo-fuzz (cargo install cargo-fuzz --locked)"
        cargo install cargo-fuzz --locked
    fi
}

build() {
    if [ -n "${FUZZ_NO_BUILD:-}" ]; then return; fi
    install
    echo "== cargo fuzz build ${build_flags[*]}"
    (cd fuzz && cargo fuzz build "${build_flags[@]}")
}

# run TARGET SECONDS: fuzzes TARGET for SECONDS, prints one summary line; fails on a
# crash, hang or out-of-memory.
run() {
    local target=$1 seconds=$2
    local work=$root/fuzz/target/corpus-run/$target
    local artifacts=$root/fuzz/artifacts/$target/
    local log=$root/fuzz/target/logs/$target-${seconds}s.log
    mkdir -p "$work" "$artifacts" "$(dirname "$log")"
    local status=0
    # stdout is muted; stderr (libFuzzer's report, panic messages) is kept, except
    # for process_lines, whose code under test reports every rejected line there.
    local fd_mask=1
    [ "$target" != process_lines ] || fd_mask=3
    "$bin_dir/$target" "$work" "$root/fuzz/corpus/$target" \
        -max_total_time="$seconds" \
        -timeout="${FUZZ_TIMEOUT:-10}" \
        -rss_limit_mb="${FUZZ_RSS_MB:-2048}" \
        -malloc_limit_mb="${FUZZ_MALLOC_MB:-512}" \
        -artifact_prefix="$artifacts" \
        -close_fd_mask=$fd_mask \
        -print_final_stats=1 \
        ${FUZZ_ARGS:-} >"$log" 2>&1 || status=$?
    local execs cov ft corpus rss
    execs=$(sed -n -e 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
    cov=$(grep -a -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    ft=$(grep -a -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    corpus=$(grep -a -o 'corp: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    local verdict=ok
    if [ "$status" -ne 0 ]; then
        if grep -a -q 'ERROR: libFuzzer: timeout' "$log"; then verdict=HANG
        elif grep -a -q -e 'out-of-memory' -e 'malloc limit' "$log"; then verdict=OOM
        else verdict=CRASH
        fi
    fi
    printf '%-20s %6ss  execs=%-10s cov=%-6s ft=%-6s corpus=%-6s peak_rss_mb=%-5s %s\n' \
        "$target" "$seconds" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corpus:-?}" "${rss:-?}" "$verdict"
    if [ "$verdict" != ok ]; then
        echo "   log: $log; input: $(ls -t "$artifacts" | head -1)" >&2
        grep -a -m 20 -A1 -e 'panicked' -e 'ERROR:' -e 'SUMMARY' "$log" >&2 || true
        return 1
    fi
}

case $mode in
list) targets ;;
build) build ;;
ci)
    build
    failed=0
    for t in $(targets); do
        run "$t" "${FUZZ_CI_SECONDS:-5}" || failed=1
    done
    exit $failed
    ;;
long)
    seconds=${2:?usage: fuzz.sh long SECONDS [TARGET...]}
    shift 2
    list=("$@")
    [ ${#list[@]} -gt 0 ] || mapfile -t list < <(targets)
    build
    failed=0
    for t in "${list[@]}"; do
        run "$t" "$seconds" || failed=1
    done
    exit $failed
    ;;
*)
    echo "usage: $0 ci | long SECONDS [TARGET...] | build | list" >&2
    exit 2
    ;;
esac
