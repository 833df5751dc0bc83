#!/usr/bin/env bash
# Sanitizers and models of the concurrency and the C API (docs/testing.md,
# "Sanitizers and models").
#
#   scripts/sanitizers.sh [loom] [tsan] [asan] [lsan] [python-asan]
#                                     (no argument: the first four)
#
#  loom  the loom models of the staging queue (the shipped code, built with
#        --cfg loom) and of the ring's publish/consume protocol:
#        RUSTFLAGS="--cfg loom" cargo test -p nixl-telemetry --release --lib loom
#        (LOOM_MAX_PREEMPTIONS bounds the search when set; unbounded by default).
#  tsan  ThreadSanitizer on the ring's and the staging's concurrency tests
#        (ring_concurrency, the staging unit tests; not collector_accounting,
#        whose Mutex-guarded state TSan cannot follow into an uninstrumented std),
#        with the stable toolchain's runtime (RUSTC_BOOTSTRAP=1 -Zsanitizer=thread).
#        The standard library stays uninstrumented (no rust-src, so no
#        -Zbuild-std): scripts/tsan-suppressions.txt silences the reports that
#        causes, all inside std and the test harness.
#  asan  AddressSanitizer: libnixl_telemetry built with -Zsanitizer=address,
#        the C API's bad-input, threads and fork programs built with gcc
#        -fsanitize=address against it and run with LeakSanitizer on; and the
#        C API crate's Rust unit tests under -Zsanitizer=address.
#  lsan  LeakSanitizer alone (-Zsanitizer=leak) on the C API crate's and the
#        staging's Rust unit tests.
#  python-asan  AddressSanitizer on the Python package: the extension (and the
#        crates it links) built with -Zsanitizer=address, its pytest suite run
#        by the test environment's CPython with gcc's ASan runtime preloaded
#        (LD_PRELOAD; leak detection off: CPython keeps memory to its exit);
#        the RSS test is left out (ASan's quarantine holds freed memory).
#        The planted fault: an instrumented Rust library reading past a heap
#        buffer, loaded into that same CPython through ctypes.
#
# Each mode first checks that its tool reports a planted error (a model or a
# program with a known bug must fail), so a tool that silently checks nothing
# fails the script. Builds go to target/{loom,loom-canary,tsan,asan,lsan,python-asan}. Installs gcc
# with apt-get when missing (its libasan is the C programs' runtime).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
host="x86_64-unknown-linux-gnu"

modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(loom tsan asan lsan)
for mode in "${modes[@]}"; do
    case "$mode" in
        loom | tsan | asan | lsan | python-asan) ;;
        *)
            echo "sanitizers.sh: unknown mode '$mode' (accepted: loom, tsan, asan, lsan, python-asan)" >&2
            exit 2
            ;;
    esac
done

fail() {
    echo "sanitizers.sh: FAILED: $*" >&2
    exit 1
}

work="$(mktemp -d "${TMPDIR:-/tmp}/nixl-telemetry-sanitizers.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# The programs under test must see no telemetry settings but ours.
for var in $(env | sed -n 's/^\(NIXL_TELEMETRY[A-Z_]*\|NIXL_PLUGIN_DIR\)=.*/\1/p'); do
    unset "$var"
done

runtime_present() {
    [ -e "$(rustc --print sysroot)/lib/rustlib/$host/lib/librustc-stable_rt.$1.a" ] \
        || fail "the toolchain ships no librustc-stable_rt.$1.a"
}

# A C program with a known bug must make the sanitizer fail with `expect`.
canary() {
    local name="$1" expect="$2" source="$3"
    printf '%s\n' "$source" > "$work/$name.c"
    gcc -g -fsanitize=address "$work/$name.c" -o "$work/$name" || fail "gcc -fsanitize=address $name.c"
    if ASAN_OPTIONS=detect_leaks=1 "$work/$name" > "$work/$name.out" 2>&1; then
        fail "the planted $name was not reported: the sanitizer checks nothing here"
    fi
    grep -q "$expect" "$work/$name.out" || fail "the planted $name: $(head -5 "$work/$name.out")"
}

# A Rust program with a known bug, built with -Zsanitizer=`sanitizer`, must
# make the sanitizer fail with `expect` (TSAN_OPTIONS and the suppressions
# in force, so they cannot hide a race in our own code).
rust_canary() {
    local name="$1" sanitizer="$2" expect="$3" source="$4"
    printf '%s\n' "$source" > "$work/$name.rs"
    RUSTC_BOOTSTRAP=1 rustc --edition 2021 -g --target "$host" -Zsanitizer="$sanitizer" \
        -Cunsafe-allow-abi-mismatch=sanitizer -o "$work/$name" "$work/$name.rs" \
        || fail "rustc -Zsanitizer=$sanitizer $name.rs"
    if "$work/$name" > "$work/$name.out" 2>&1; then
        fail "the planted $name was not reported: the sanitizer checks nothing here"
    fi
    grep -q "$expect" "$work/$name.out" || fail "the planted $name: $(head -5 "$work/$name.out")"
}

run_loom() {
    echo "== sanitizers: loom models (staging queue, ring protocol)"
    # A planted bug first: the queue publishing its head with a relaxed store
    # must be reported (the models are built from a copy of the crate).
    local copy="$work/loom-canary"
    mkdir -p "$copy/crates"
    cp -r Cargo.toml Cargo.lock "$copy/"
    cp -r crates/telemetry crates/abi crates/testsupport "$copy/crates/"
    # Only the crates the model needs: a workspace of those three (the members
    # list may span lines: everything from `members = [` to its `]` goes).
    python3 - "$copy/Cargo.toml" <<'TOML'
import re, sys
path = sys.argv[1]
text = open(path).read()
text, found = re.subn(r'(?ms)^members = \[.*?\]$',
                      'members = ["crates/telemetry", "crates/abi", "crates/testsupport"]', text, count=1)
if found != 1:
    sys.exit("the workspace's members list was not found in Cargo.toml: update the loom canary")
text = re.sub(r'(?m)^(exclude|default-members) = .*\n', '', text)
open(path, "w").write(text)
TOML
    python3 - "$copy/crates/telemetry/src/staging/queue.rs" <<'EOF'
import sys
path = sys.argv[1]
text = open(path).read()
release = "head.store(self.head, Ordering::Release);"
if text.count(release) != 1:
    sys.exit("the queue's release store of head was not found once: update the planted bug")
open(path, "w").write(text.replace(release, "head.store(self.head, Ordering::Relaxed);"))
EOF
    if (cd "$copy" && RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR="$root/target/loom-canary" \
        cargo test -q -p nixl-telemetry --release --lib loom_push_drain > "$work/loom-canary.out" 2>&1); then
        fail "loom did not report the planted relaxed store of the queue's head"
    fi
    grep -q "Causality violation" "$work/loom-canary.out" \
        || fail "the planted loom bug: $(tail -20 "$work/loom-canary.out")"
    RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
        cargo test -p nixl-telemetry --release --lib loom || fail "the loom models"
}

run_tsan() {
    echo "== sanitizers: ThreadSanitizer (ring and staging concurrency tests)"
    runtime_present tsan
    local sysroot
    sysroot="$(rustc --print sysroot)"
    if [ ! -e "$sysroot/lib/rustlib/src/rust/library/Cargo.lock" ]; then
        echo "   (no rust-src component: std stays uninstrumented; suppressions in scripts/tsan-suppressions.txt)"
    fi
    export TSAN_OPTIONS="suppressions=$root/scripts/tsan-suppressions.txt halt_on_error=1"
    rust_canary race thread "ThreadSanitizer: data race" \
        'struct Shared(*mut u64);
unsafe impl Send for Shared {}
fn main() {
    let counter = Box::into_raw(Box::new(0u64));
    let other = Shared(counter);
    let t = std::thread::spawn(move || {
        let other = other;
        unsafe { *other.0 += 1 }
    });
    unsafe { *counter += 1 };
    t.join().unwrap();
}'
    local flags=(RUSTC_BOOTSTRAP=1 "RUSTFLAGS=-Zsanitizer=thread -Cunsafe-allow-abi-mismatch=sanitizer"
        CARGO_TARGET_DIR=target/tsan)
    env "${flags[@]}" cargo test -p nixl-telemetry --target "$host" --lib -- staging:: \
        || fail "TSan: the staging unit tests"
    # collector_accounting is not run: its state sits behind std's Mutex,
    # whose contended path is uninstrumented, so every guarded access is
    # reported (crates/bench/results/reliability.md has the report).
    env "${flags[@]}" cargo test -p nixl-telemetry --target "$host" \
        --test it ring_concurrency || fail "TSan: ring_concurrency"
}

install_gcc() {
    # shellcheck source=scripts/lib.sh
    . scripts/lib.sh
    need_commands gcc:gcc
    need_packages libc6-dev
}

build_c_program() {
    local name="$1" lib="$2"
    gcc -std=c11 -Wall -Wextra -Werror -g -fsanitize=address -fno-omit-frame-pointer \
        -Iinclude -Icrates/capi/tests/c -o "$work/$name" "crates/capi/tests/c/$name.c" \
        -L"$lib" -lnixl_telemetry -pthread || fail "gcc -fsanitize=address $name.c"
}

run_asan() {
    echo "== sanitizers: AddressSanitizer + LeakSanitizer (C API)"
    runtime_present asan
    install_gcc
    canary heap-overflow "AddressSanitizer: heap-buffer-overflow" \
        '#include <stdlib.h>
int main(void) { char *p = malloc(8); p[8] = 1; free(p); return 0; }'
    canary leak "LeakSanitizer: detected memory leaks" \
        '#include <stdlib.h>
void *kept;
int main(void) { kept = malloc(64); kept = 0; return 0; }'

    local flags=(RUSTC_BOOTSTRAP=1 "RUSTFLAGS=-Zsanitizer=address -Cunsafe-allow-abi-mismatch=sanitizer"
        CARGO_TARGET_DIR=target/asan)
    env "${flags[@]}" cargo build -p nixl-telemetry-capi --target "$host" || fail "the ASan build of the C API"
    local lib="$work/lib"
    mkdir -p "$lib"
    ln -s "$root/target/asan/$host/debug/libnixl_telemetry_capi.so" "$lib/libnixl_telemetry.so"
    ln -s "$root/target/asan/$host/debug/libnixl_telemetry_capi.so" "$lib/libnixl_telemetry.so.1"
    export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=1"
    # fork: its children leave through _exit (what they inherited is kept on
    # purpose, and a child's exit-time leak check would report it).
    for program in bad_inputs threads "fork _exit"; do
        read -r program extra <<< "$program"
        build_c_program "$program" "$lib"
        # shellcheck disable=SC2086 # $extra is zero or one word
        LD_LIBRARY_PATH="$lib" "$work/$program" "$work/rings" $extra > "$work/$program.out" 2>&1 \
            || { cat "$work/$program.out"; fail "$program under ASan/LSan"; }
        cat "$work/$program.out"
    done
    env "${flags[@]}" cargo test -p nixl-telemetry-capi --target "$host" --lib \
        || fail "the C API's unit tests under ASan"
}

run_lsan() {
    echo "== sanitizers: LeakSanitizer alone (Rust unit tests of the C API and the staging)"
    runtime_present lsan
    rust_canary rust-leak leak "LeakSanitizer: detected memory leaks" \
        'fn main() {
    let mut kept = Box::new([1u8; 64]);
    kept[0] = 2;
    std::mem::forget(kept);
}'
    local flags=(RUSTC_BOOTSTRAP=1 "RUSTFLAGS=-Zsanitizer=leak -Cunsafe-allow-abi-mismatch=sanitizer"
        CARGO_TARGET_DIR=target/lsan)
    env "${flags[@]}" cargo test -p nixl-telemetry-capi --target "$host" --lib \
        || fail "the C API's unit tests under LSan"
    env "${flags[@]}" cargo test -p nixl-telemetry --target "$host" --lib -- staging:: \
        || fail "the staging unit tests under LSan"
}

run_python_asan() {
    echo "== sanitizers: AddressSanitizer (the Python package's pytest suite)"
    install_gcc
    local runtime
    runtime="$(gcc -print-file-name=libasan.so)"
    [ -e "$runtime" ] || fail "gcc has no shared ASan runtime (libasan.so)"
    # shellcheck source=scripts/python-venv.sh
    . scripts/python-venv.sh
    local python=("env" "LD_PRELOAD=$runtime" "ASAN_OPTIONS=detect_leaks=0:halt_on_error=1"
        "$VENV/bin/python")

    # The planted fault: an instrumented library read past its buffer in this CPython.
    printf '%s\n' '#[no_mangle]
pub extern "C" fn planted_overflow(index: usize) -> u8 {
    let buffer = vec![0u8; 8];
    // SAFETY: none: a read past the buffer, for ASan to report.
    unsafe { *buffer.as_ptr().add(index) }
}' > "$work/planted.rs"
    RUSTC_BOOTSTRAP=1 rustc --edition 2021 -g --crate-type cdylib --target "$host" \
        -Zsanitizer=address -Cunsafe-allow-abi-mismatch=sanitizer \
        -o "$work/libplanted.so" "$work/planted.rs" || fail "rustc -Zsanitizer=address planted.rs"
    if "${python[@]}" -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1]).planted_overflow(8)' \
        "$work/libplanted.so" > "$work/planted.out" 2>&1; then
        fail "the planted overflow was not reported: ASan checks nothing in this CPython"
    fi
    grep -q "AddressSanitizer: heap-buffer-overflow" "$work/planted.out" \
        || fail "the planted overflow: $(head -5 "$work/planted.out")"

    cargo build --quiet --locked -p nixl-telemetry-cli --bin telemetry_reader \
        || fail "building telemetry_reader"
    RUSTC_BOOTSTRAP=1 RUSTFLAGS="-Zsanitizer=address -Cunsafe-allow-abi-mismatch=sanitizer" \
        CARGO_TARGET_DIR=target/python-asan "$VENV/bin/maturin" build --quiet --locked \
        --target "$host" --manifest-path crates/python/Cargo.toml \
        --interpreter "$VENV/bin/python" --out "$work/wheel" || fail "the ASan build of the extension"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
        --target "$work/site" "$work/wheel"/nixl_telemetry-*.whl || fail "unpacking the ASan wheel"
    # Not `| grep -q`: grep would stop at the first match and nm, still writing,
    # would die of SIGPIPE, which pipefail reports as a failure.
    nm -D "$work/site/nixl_telemetry/_native.abi3.so" > "$work/native.symbols" \
        || fail "nm -D on the extension"
    grep -q __asan_report "$work/native.symbols" || fail "the extension is not instrumented"
    PYTHONPATH="$work/site" NIXL_TELEMETRY_READER="$root/target/debug/telemetry_reader" \
        HYPOTHESIS_STORAGE_DIRECTORY="$work/hypothesis" \
        "${python[@]}" -m pytest crates/python/tests -q -p no:cacheprovider \
        -k "not test_processors_used_on_a_worker_thread_leave_nothing_behind" \
        || fail "the Python package's tests under ASan"
}

for mode in "${modes[@]}"; do
    start=$SECONDS
    "run_${mode//-/_}"
    echo "== sanitizers: $mode passed in $((SECONDS - start)) s"
done
