#!/usr/bin/env bash
# The wheel as a user installs it (docs/install.md):
#
#   scripts/test-wheel.sh [--wheel FILE] [VER...]     default releases: 1.5.1 1.0.1
#
# Builds the wheel with scripts/build-wheel.sh (or takes --wheel FILE), then for each
# NIXL release VER, in a fresh virtual environment whose PATH holds only that
# environment's bin/, /usr/bin and /bin (no cargo, no rustc), run from a directory
# outside the checkout with no PYTHONPATH:
#   * pip install --no-deps nixl-cu12==VER numpy, the wheel, and TAO's client;
#   * every command answers --version with the wheel's version and one commit, and
#     `import nixl_telemetry.tao` works;
#   * `nixl-telemetry export --exporter prometheus` (no plug-in directory, no variable)
#     serves the rings a real NIXL job writes on one endpoint, with the bytes and
#     requests the job moved;
#   * `nixl-telemetry-adapters link` (no options) makes that NIXL load our OTLP exporter:
#     the same job with NIXL_TELEMETRY_EXPORTER=otlp pushes the same figures to an OTLP
#     receiver (the OpenTelemetry project's protobuf definitions decode them);
#     `unlink` removes the links;
#   * `nixl-telemetry serve` stores what TAO's own client reports (first release only).
# Then the wheel alone under a second CPython (pyenv's 3.10 or 3.12, when there):
# versions, recording and reading a ring from Python, a Python host loading the wheel's csv
# plug-in with no setting, and the message of `link` without NIXL. Last, the source
# distribution (the repository's pyproject.toml) built by `pip wheel` with a Rust
# toolchain gives a wheel of the same name holding the same files.
# The OTLP receiver is found in the checkout (or give OTLP_RECEIVER=FILE). The time
# each part took is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

wheel=""
releases=()
while [ $# -gt 0 ]; do
    case "$1" in
        --wheel) [ $# -ge 2 ] || { echo "test-wheel.sh: --wheel needs a file" >&2; exit 2; }
                 wheel="$(realpath "$2")"; shift 2 ;;
        -*) echo "test-wheel.sh: unknown option '$1'; accepted: --wheel FILE, then NIXL releases" >&2; exit 2 ;;
        *) releases+=("$1"); shift ;;
    esac
done
[ ${#releases[@]} -gt 0 ] || releases=(1.5.1 1.0.1)

work="$(mktemp -d)"
cleanup() {
    local pid
    for pid in $(jobs -p); do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
timings=()
mark=$SECONDS
took() {
    timings+=("$1: $((SECONDS - mark)) s")
    mark=$SECONDS
}

if [ -z "$wheel" ]; then
    echo "== scripts/build-wheel.sh --out $work/dist"
    bash scripts/build-wheel.sh --out "$work/dist"
    wheel="$(ls "$work"/dist/nixl_telemetry-*.whl)"
    took "build-wheel.sh"
fi
[ -f "$wheel" ] || { echo "test-wheel.sh: no wheel at $wheel" >&2; exit 2; }
wheel_version="$(basename "$wheel" | cut -d- -f2)"

receiver="${OTLP_RECEIVER:-$(git ls-files -- '*otlp_receiver.py' | head -1)}"
[ -n "$receiver" ] && [ -f "$receiver" ] || { echo "test-wheel.sh: no OTLP receiver (otlp_receiver.py) in the checkout; give OTLP_RECEIVER=FILE" >&2; exit 2; }
receiver="$(realpath "$receiver")"
otlp_python="$(python_env otlp)"

# What the user's job and checks run: copies, so no directory of the checkout is on
# sys.path; the torch stand-in NIXL releases up to 1.3 import (scripts/nixl-releases.sh).
mkdir -p "$work/job" "$work/torch-stub"
cp scripts/nixl_workload.py scripts/wheel_user_check.py "$work/job/"
printf 'class Tensor:\n    pass\n' > "$work/torch-stub/torch.py"

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# user ENV CMD...: CMD in the user's environment ENV, from $work/job, with a clean
# environment: PATH is ENV/bin:/usr/bin:/bin, nothing else of ours.
user() {
    local env="$1"
    shift
    (cd "$work/job" && env -i HOME="$HOME" LANG=C.UTF-8 PATH="$env/bin:/usr/bin:/bin" \
        ${XDG_CACHE_HOME:+XDG_CACHE_HOME="$XDG_CACHE_HOME"} ${USER_ENV:-} "$@")
}

new_env() { # new_env DIR PYTHON: a fresh virtual environment
    "$2" -m venv "$1"
    if user "$1" sh -c 'command -v cargo || command -v rustc' >/dev/null; then
        echo "test-wheel.sh: cargo or rustc is on the user's PATH" >&2
        exit 1
    fi
}

# The job: 3 WRITEs of 4096 bytes and 2 READs of 8192 bytes from agent initiator.
job_args=(--writes 3 --write-size 4096 --reads 2 --read-size 8192 --settle 1.5)
expect=(initiator:agent_tx_bytes=12288 initiator:agent_tx_requests_num=3
        initiator:agent_rx_bytes=16384 initiator:agent_rx_requests_num=2)

tao_done=0
for v in "${releases[@]}"; do
    env_dir="$work/env-$v"
    echo "== NIXL $v: a fresh environment $env_dir"
    new_env "$env_dir" python3
    user "$env_dir" pip install --quiet --disable-pip-version-check --no-deps "nixl-cu12==$v" numpy
    user "$env_dir" pip install --quiet --disable-pip-version-check "$wheel"
    user "$env_dir" pip install --quiet --disable-pip-version-check --no-deps nvidia-tao-core==6.26.3
    user "$env_dir" pip install --quiet --disable-pip-version-check requests==2.32.3
    took "NIXL $v: environment and pip install"
    job_env="PYTHONPATH=$work/torch-stub"

    echo "== NIXL $v: --version, import nixl_telemetry.tao"
    user "$env_dir" python wheel_user_check.py versions "$wheel_version"

    echo "== NIXL $v: the job writes rings, nixl-telemetry export serves them (no plug-in directory)"
    rings="$work/rings-$v"
    mkdir -p "$rings"
    port="$(free_port)"
    user "$env_dir" nixl-telemetry export --dir "$rings" --exporter prometheus \
        --output-path "127.0.0.1:$port" --interval 100 2>"$work/export-$v.log" &
    export_pid=$!
    USER_ENV="$job_env NIXL_TELEMETRY_ENABLE=y NIXL_TELEMETRY_DIR=$rings" \
        user "$env_dir" python nixl_workload.py "${job_args[@]}" 2>"$work/job-rings-$v.log" ||
        { cat "$work/job-rings-$v.log" >&2; exit 1; }
    user "$env_dir" python wheel_user_check.py scrape "http://127.0.0.1:$port/metrics" \
        "$work/export-$v.prom" "${expect[@]}" || { cat "$work/export-$v.log" >&2; exit 1; }
    kill "$export_pid"
    wait "$export_pid" || true
        took "NIXL $v: export"

    echo "== NIXL $v: nixl-telemetry-adapters link, the job exports over OTLP"
    user "$env_dir" nixl-telemetry-adapters link | tee "$work/link-$v.txt"
    plugin_dir="$(user "$env_dir" nixl-telemetry-adapters detect | sed -n 's/^plug-in directory: //p')"
    [ -e "$plugin_dir/libtelemetry_exporter_otlp.so" ] ||
        { echo "test-wheel.sh: link made no libtelemetry_exporter_otlp.so in $plugin_dir" >&2; exit 1; }
    received="$work/otlp-$v.jsonl"
    "$otlp_python" "$receiver" --out "$received" >"$work/receiver-$v.out" 2>"$work/receiver-$v.log" &
    receiver_pid=$!
    for _ in $(seq 100); do grep -q '^PORT ' "$work/receiver-$v.out" && break; sleep 0.1; done
    otlp_port="$(sed -n 's/^PORT //p' "$work/receiver-$v.out")"
    [ -n "$otlp_port" ] || { echo "test-wheel.sh: the OTLP receiver did not start" >&2; cat "$work/receiver-$v.log" >&2; exit 1; }
    USER_ENV="$job_env NIXL_TELEMETRY_ENABLE=y NIXL_TELEMETRY_EXPORTER=otlp OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$otlp_port OTEL_METRIC_EXPORT_INTERVAL=200" \
        user "$env_dir" python nixl_workload.py "${job_args[@]}" 2>"$work/job-otlp-$v.log" ||
        { cat "$work/job-otlp-$v.log" >&2; exit 1; }
    user "$env_dir" python wheel_user_check.py otlp "$received" "${expect[@]}" ||
        { tail -20 "$work/job-otlp-$v.log" >&2; exit 1; }
    kill "$receiver_pid"
    wait "$receiver_pid" || true
    user "$env_dir" nixl-telemetry-adapters unlink
    if ls "$plugin_dir"/libtelemetry_exporter_otlp.so >/dev/null 2>&1; then
        echo "test-wheel.sh: unlink left $plugin_dir/libtelemetry_exporter_otlp.so" >&2
        exit 1
    fi
    took "NIXL $v: link, OTLP, unlink"

    if [ "$tao_done" = 0 ]; then
        echo "== nixl-telemetry serve takes TAO's client"
        token=TEVUIE1FIElO # the password TAO's client always sends
        USER_ENV="NIXL_TELEMETRY_METRICS_TOKEN=$token" user "$env_dir" nixl-telemetry serve \
            --listen 127.0.0.1:0 --store "sqlite:$work/serve.sqlite" 2>"$work/serve.log" &
        serve_pid=$!
        for _ in $(seq 100); do grep -q 'listening on' "$work/serve.log" && break; sleep 0.1; done
        url="$(grep -o 'listening on http://[0-9.:]*' "$work/serve.log" | sed 's/listening on //')"
        [ -n "$url" ] || { echo "test-wheel.sh: serve did not start" >&2; cat "$work/serve.log" >&2; exit 1; }
        user "$env_dir" python wheel_user_check.py tao "$url" "$token"
        kill "$serve_pid"
        wait "$serve_pid" || true
        tao_done=1
        took "serve with TAO's client"
    fi
done

second=""
for candidate in "$HOME"/.pyenv/versions/3.10.*/bin/python3 "$HOME"/.pyenv/versions/3.12.*/bin/python3 \
    "$HOME"/.pyenv/versions/3.13.*/bin/python3 /usr/bin/python3.10 /usr/bin/python3.12 /usr/bin/python3.13; do
    [ -x "$candidate" ] && [ "$("$candidate" -c 'import sys; print(sys.version_info[:2] != (3, 11))')" = True ] &&
        { second="$candidate"; break; }
done
if [ -z "$second" ]; then
    echo "== no second CPython (pyenv 3.10/3.12/3.13 or /usr/bin/python3.1x): that part is not run"
else
    echo "== the wheel under $("$second" --version) without NIXL"
    env_dir="$work/env-second"
    new_env "$env_dir" "$second"
    user "$env_dir" pip install --quiet --disable-pip-version-check "$wheel"
    user "$env_dir" python wheel_user_check.py versions "$wheel_version"
    # The job's rings were consumed by export: record one here, and read it back.
    user "$env_dir" python -c "import sys, nixl_telemetry as t; tel = t.Telemetry('second', dir=sys.argv[1]); tel.transfer_completed(120, True, 4096); tel.close(); events = t.read_ring(sys.argv[1] + '/second'); assert any(e.name == 'agent_tx_bytes' and e.value == 4096 for e in events), events; print(f'recorded and read back {len(events)} events')" "$work/rings-second"
    # A Python host loads the wheel's plug-ins with no plugin_dirs and no variable.
    user "$env_dir" python -c "import sys, nixl_telemetry as t; tel = t.Telemetry('py-host', exporter='csv', output_path=sys.argv[1]); tel.transfer_completed(120, True, 4096); tel.close(); text = open(sys.argv[1]).read(); assert 'agent_tx_bytes' in text and '4096' in text, text; print('the csv plug-in of the wheel, loaded from Python with no setting, wrote', len(text.splitlines()), 'lines')" "$work/py-host.csv"
    if user "$env_dir" nixl-telemetry-adapters link >"$work/link-none.out" 2>"$work/link-none.err"; then
        echo "test-wheel.sh: link succeeded in an environment without NIXL" >&2
        exit 1
    fi
    grep -q "has no NIXL package.*pip install nixl-cu12" "$work/link-none.err" ||
        { echo "test-wheel.sh: link without NIXL said:" >&2; cat "$work/link-none.err" >&2; exit 1; }
    echo "link without NIXL: $(cat "$work/link-none.err")"
    took "second CPython"
fi

echo "== the source distribution builds the same wheel (pip, with a Rust toolchain)"
mkdir -p "$work/sdist" "$work/from-sdist"
sdist="$work/sdist/$(python3 -c 'import sys; sys.path.insert(0, "scripts/wheel_backend"); import nixl_telemetry_build as b; print(b.build_sdist(sys.argv[1]))' "$work/sdist")"
# The checkout's cargo target directory: the dependencies are not compiled again.
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}" "$(python_env wheel-build)" -m pip wheel \
    --quiet --disable-pip-version-check --no-deps --wheel-dir "$work/from-sdist" "$sdist"
from_sdist="$(ls "$work"/from-sdist/nixl_telemetry-*.whl)"
[ "$(basename "$from_sdist")" = "$(basename "$wheel")" ] ||
    { echo "test-wheel.sh: the sdist built $(basename "$from_sdist"), not $(basename "$wheel")" >&2; exit 1; }
files() { python3 -c 'import sys, zipfile; print("\n".join(sorted(n for n in zipfile.ZipFile(sys.argv[1]).namelist() if not n.endswith("/RECORD"))))' "$1"; }
if ! diff <(files "$wheel") <(files "$from_sdist") > "$work/sdist.diff"; then
    echo "test-wheel.sh: the wheel built from the sdist holds other files:" >&2
    cat "$work/sdist.diff" >&2
    exit 1
fi
echo "$(basename "$sdist") built $(basename "$from_sdist"): $(files "$wheel" | wc -l) files, the same as build-wheel.sh's"
took "sdist"

echo "== test-wheel.sh passed ($(du -k "$wheel" | cut -f1) KiB wheel)"
printf '   %s\n' "${timings[@]}"
