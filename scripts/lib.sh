#!/usr/bin/env bash
# The one place where test scripts install what they use. Every scripts/*.sh that
# needs a Debian package or a Python environment gets it from here, so each script
# creates what it uses and passes when run alone on an empty cache
# (XDG_CACHE_HOME=$(mktemp -d) bash scripts/test-X.sh).
#
# Sourced:
#   . scripts/lib.sh
#   need_commands prometheus:prometheus cc:gcc     install PKG when COMMAND is missing
#   need_packages libc6-dev python3-venv            install each package not yet installed
#   py="$(python_env otlp)"                         the named environment's interpreter,
#                                                   created or repaired first
# Run (for Python scripts, which cannot source it):
#   bash scripts/lib.sh python-env NAME             prints the interpreter's path
#   bash scripts/lib.sh need-commands CMD:PKG...
#
# Environments live under ${XDG_CACHE_HOME:-$HOME/.cache}/nixl-telemetry/<name>; each
# holds a stamp of what was installed into it, so a changed list reinstalls it and a
# broken or half-made one is made anew. Installing needs root (or sudo) for apt-get and
# the package registries for pip.

NIXL_TELEMETRY_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/nixl-telemetry"

lib_die() {
    echo "scripts/lib.sh: $*" >&2
    exit 2
}

# apt-get install of the given Debian packages, quietly, waiting for a package manager
# that is already running instead of failing on its lock.
apt_install() {
    [ $# -gt 0 ] || return 0
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || lib_die "installing $* needs root or sudo"
        sudo="sudo"
    fi
    command -v apt-get >/dev/null 2>&1 || lib_die "installing $* needs apt-get (Debian or Ubuntu)"
    echo "== installing (apt-get): $*" >&2
    local apt=(-o DPkg::Lock::Timeout=600)
    # Finish an install an earlier run left half done; apt-get refuses to go past one.
    $sudo env DEBIAN_FRONTEND=noninteractive dpkg --configure -a
    if [ -z "${LIB_APT_UPDATED:-}" ]; then
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get "${apt[@]}" update -qq
        LIB_APT_UPDATED=1
    fi
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get "${apt[@]}" install -y -qq \
        --no-install-recommends "$@" >/dev/null
}

# need_commands CMD:PKG... — installs PKG for every CMD not on PATH, then checks that
# each command is there.
need_commands() {
    local pair cmd pkg missing=()
    for pair in "$@"; do
        cmd="${pair%%:*}"
        pkg="${pair#*:}"
        command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    # shellcheck disable=SC2046
    apt_install $(printf '%s\n' "${missing[@]}" | sort -u)
    for pair in "$@"; do
        cmd="${pair%%:*}"
        command -v "$cmd" >/dev/null 2>&1 || lib_die "$cmd is still missing after installing ${pair#*:}"
    done
}

# need_packages PKG... — installs every Debian package that dpkg does not list as installed.
need_packages() {
    local pkg missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    apt_install "${missing[@]}"
}

# The packages of each named environment (pip arguments; a line starting with
# "--no-deps" installs the rest of that line without dependencies).
python_env_spec() {
    case "$1" in
    otlp)
        # The OTLP receiver: the OpenTelemetry project's own protobuf definitions.
        echo "opentelemetry-proto protobuf"
        ;;
    yaml)
        # The deployment examples' YAML check.
        echo "pyyaml"
        ;;
    nixl-mp/1.5.1)
        # NIXL 1.5.1 for the prometheus_mp parity test, apart from the release cache
        # (scripts/nixl-releases.sh), since the test adds files beside its plug-ins.
        echo "--no-deps nixl-cu12==1.5.1 numpy"
        ;;
    wheel-build)
        # scripts/build-wheel.sh: maturin, Zig as the linker for glibc 2.28 (ziglang),
        # cargo-zigbuild for the commands and plug-ins, auditwheel and wheel to check
        # and complete the wheel.
        echo "maturin>=1.9,<2 ziglang cargo-zigbuild auditwheel wheel"
        ;;
    python-venv)
        # The Python package's tests, the service's TAO client tests and python-asan;
        # TAO's processor is pure Python and the differential tests' oracle.
        echo "maturin>=1.9,<2 pytest hypothesis prometheus_client requests==2.32.3"
        echo "--no-deps nvidia-tao-core==6.26.3"
        ;;
    *) lib_die "unknown Python environment '$1' (known: otlp, yaml, nixl-mp/1.5.1, wheel-build, python-venv)" ;;
    esac
}

# python_env NAME — prints the interpreter of the environment NAME, creating it, or
# making it anew when it is missing, broken or holds another list of packages.
python_env() {
    local name="$1" dir spec py line
    dir="$NIXL_TELEMETRY_CACHE/$name"
    spec="$(python_env_spec "$name")" || exit 2
    py="$dir/bin/python"
    if [ -x "$py" ] && "$py" -c 'import sys' >/dev/null 2>&1 &&
        [ "$(cat "$dir/.installed" 2>/dev/null)" = "$spec" ]; then
        echo "$py"
        return 0
    fi
    echo "== preparing the Python environment $dir" >&2
    rm -rf "$dir"
    mkdir -p "$NIXL_TELEMETRY_CACHE"
    if ! "${PYTHON:-python3}" -m venv "$dir" >/dev/null 2>&1; then
        # Debian ships venv's pip bootstrap in a package of its own.
        local minor
        minor="$("${PYTHON:-python3}" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
        need_packages "python${minor}-venv" 2>/dev/null || need_packages python3-venv
        rm -rf "$dir"
        "${PYTHON:-python3}" -m venv "$dir" >&2 || lib_die "cannot create a virtual environment in $dir"
    fi
    while IFS= read -r line; do
        [ -n "$line" ] || continue
        # shellcheck disable=SC2086
        "$py" -m pip install --quiet --disable-pip-version-check $line >&2 ||
            lib_die "pip install $line into $dir failed"
    done <<<"$spec"
    printf '%s' "$spec" >"$dir/.installed"
    echo "$py"
}

# Run as a command: the subcommands above for scripts that cannot source this file.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    case "${1:-}" in
    python-env) python_env "${2:?usage: $0 python-env NAME}" ;;
    need-commands) shift; need_commands "$@" ;;
    need-packages) shift; need_packages "$@" ;;
    *)
        echo "usage: $0 python-env NAME | need-commands CMD:PKG... | need-packages PKG..." >&2
        exit 2
        ;;
    esac
fi
