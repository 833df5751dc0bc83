#!/usr/bin/env bash
# Builds the nixl-telemetry wheel, the one `pip install` gives users:
#
#   scripts/build-wheel.sh --out DIR [--python PY]
#
# DIR/nixl_telemetry-<version>-cp310-abi3-manylinux_2_28_x86_64.whl holds
#   nixl_telemetry/                     the Python package (the abi3 extension
#                                       _native, nixl_telemetry.tao)
#   <name>.data/scripts/                nixl-telemetry, telemetry_reader,
#                                       nixl-telemetry-adapters: pip puts them
#                                       in the environment's bin/
#   <name>.data/data/lib/nixl/telemetry_exporters/
#                                       the exporter plug-ins: pip puts them in
#                                       <env>/lib/nixl/telemetry_exporters, where
#                                       the commands look (<exe dir>/../lib/...)
#   <name>.data/data/lib/nixl/nixl_adapters/<generation>/
#                                       the NIXL adapters, for
#                                       `nixl-telemetry-adapters link`
# (docs/install.md explains the layout). Everything is linked against glibc
# 2.28 with Zig (PyPI's ziglang, through maturin and cargo-zigbuild; no
# container), built with the `wheel` profile (release, no debug information),
# and checked with `auditwheel show` at the end. The tools come from the
# wheel-build environment of scripts/lib.sh, or with --python PY from PY's
# environment and PATH (the source distribution's build backend passes the
# interpreter pip runs it with); Rust, cargo and g++ from the host.
set -euo pipefail

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}

out=""
python=""
while [ $# -gt 0 ]; do
    case "$1" in
        --out) [ $# -ge 2 ] || { echo "build-wheel.sh: --out needs a directory" >&2; exit 2; }
               out="$2"; shift 2 ;;
        --out=*) out="${1#--out=}"; shift ;;
        --python) [ $# -ge 2 ] || { echo "build-wheel.sh: --python needs an interpreter" >&2; exit 2; }
                  python="$2"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "build-wheel.sh: unknown argument '$1'; accepted: --out DIR, --python PY, --help" >&2; exit 2 ;;
    esac
done
[ -n "$out" ] || { echo "build-wheel.sh: --out DIR is required (where the wheel goes)" >&2; exit 2; }
mkdir -p "$out"
out="$(cd "$out" && pwd)"

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
need_commands g++:g++
if [ -n "$python" ]; then
    py="$python"
    for tool in maturin cargo-zigbuild auditwheel; do
        command -v "$tool" >/dev/null ||
            { echo "build-wheel.sh: --python $py: $tool is not on PATH (pip installs it from the build requirements)" >&2; exit 1; }
    done
    tools="$(dirname "$(command -v maturin)")"
else
    py="$(python_env wheel-build)"
    tools="$(dirname "$py")"
fi
# maturin, cargo-zigbuild and `python3 -m ziglang` (how both find Zig) from there.
export PATH="$tools:$PATH"

# One commit for every part's --version, asked once: HEAD may move during a long build.
# A source distribution has no .git but a COMMIT file.
if [ -z "${NIXL_TELEMETRY_COMMIT:-}" ]; then
    if [ -e .git ] && command -v git >/dev/null; then
        NIXL_TELEMETRY_COMMIT="$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
    elif [ -f COMMIT ]; then
        NIXL_TELEMETRY_COMMIT="$(head -1 COMMIT)"
    else
        NIXL_TELEMETRY_COMMIT=unknown
    fi
fi
export NIXL_TELEMETRY_COMMIT

target=x86_64-unknown-linux-gnu
glibc=2.28
profile=wheel
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# shellcheck source=scripts/layout.sh
. scripts/layout.sh
shipped_plugins
packages=(-p nixl-telemetry-cli -p nixl-telemetry-nixl-adapters "${plugin_packages[@]}")

# The NIXL adapters are C++ sharing std::string with NIXL: compiled by GCC
# (libstdc++), linked by Zig against glibc 2.28 (crates/nixl_adapters/build.rs).
cat > "$work/cc-glibc-$glibc" <<SH
#!/bin/sh
exec "$py" -m ziglang cc -target x86_64-linux-gnu.$glibc "\$@"
SH
chmod +x "$work/cc-glibc-$glibc"

started=$SECONDS
echo "== building the commands and plug-ins (cargo zigbuild, glibc $glibc, profile $profile): ${packages[*]}"
NIXL_ADAPTERS_CXX=g++ NIXL_ADAPTERS_GLIBC_2_28_LINKER="$work/cc-glibc-$glibc" \
    cargo zigbuild --quiet --locked --profile "$profile" --target "$target.$glibc" "${packages[@]}"
bin="$target_dir/$target/$profile"

echo "== building the Python package (maturin, abi3, manylinux_2_28)"
maturin build --quiet --locked --profile "$profile" --zig --target "$target" \
    --compatibility "manylinux_${glibc/./_}" --manifest-path crates/python/Cargo.toml \
    --interpreter "$py" --out "$work/maturin"
built=("$work"/maturin/nixl_telemetry-*.whl)
[ ${#built[@]} -eq 1 ] || { echo "build-wheel.sh: maturin made ${#built[@]} wheels, expected one" >&2; exit 1; }

echo "== adding the commands, the plug-ins and the NIXL adapters"
"$py" -m wheel unpack --dest "$work/unpacked" "${built[0]}" >/dev/null
tree=("$work"/unpacked/nixl_telemetry-*)
tree="${tree[0]}"
data="$tree/$(basename "$tree").data"
RUN=()
stage_layout "$bin" "$data/scripts" "$data/data/lib/nixl" >/dev/null
# build.rs compiles the adapters with -g1 (as every build): no debug information in the wheel.
find "$data/data/lib/nixl/nixl_adapters" -name '*.so' -exec strip --strip-debug {} +
rm -f "$out"/nixl_telemetry-*.whl
"$py" -m wheel pack --dest-dir "$out" "$tree" >/dev/null
wheel=("$out"/nixl_telemetry-*.whl)
wheel="${wheel[0]}"

echo "== auditwheel show"
auditwheel show "$wheel" | tee "$work/auditwheel.txt"
# auditwheel names the most portable tag the wheel is consistent with.
tag="$(tr '\n' ' ' < "$work/auditwheel.txt" | grep -o '"manylinux_2_[0-9]*_x86_64"' | head -1 | tr -d '"')"
minor="${tag#manylinux_2_}"
minor="${minor%%_*}"
if [ -z "$tag" ] || [ "$minor" -gt "${glibc#2.}" ]; then
    echo "build-wheel.sh: auditwheel does not find the wheel consistent with manylinux_2_${glibc#2.} or older (it said: ${tag:-no manylinux tag})" >&2
    exit 1
fi
echo "== $wheel: $(du -k "$wheel" | cut -f1) KiB, consistent with $tag; built in $((SECONDS - started)) s"
