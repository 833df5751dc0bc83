# Sourced by scripts/test-python.sh and scripts/sanitizers.sh (python-asan):
# creates (once) the Python package's test environment under
# ${XDG_CACHE_HOME:-$HOME/.cache}/nixl-telemetry/python-venv and installs the
# test tools and the reference TAO package (the differential tests' oracle)
# into it. Sets CACHE and VENV.
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/nixl-telemetry"
VENV="$CACHE/python-venv"

if [ ! -x "$VENV/bin/python" ]; then
    echo "== creating $VENV"
    mkdir -p "$CACHE"
    "${PYTHON:-python3}" -m venv "$VENV"
fi
echo "== installing the test tools into $VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "maturin>=1.9,<2" pytest hypothesis prometheus_client
# The reference implementation of nvidia_tao_core.telemetry (pure Python; its
# processor needs no other package, hence --no-deps).
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
    "nvidia-tao-core==6.26.3"
