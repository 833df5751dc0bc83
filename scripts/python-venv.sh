# Sourced by scripts/test-python.sh, scripts/test-service.sh and scripts/sanitizers.sh
# (python-asan): the project's Python test environment (scripts/lib.sh, environment
# "python-venv": maturin, pytest, hypothesis, prometheus_client, TAO's client and
# processor), created or repaired first. Sets CACHE and VENV.
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CACHE="$NIXL_TELEMETRY_CACHE"
VENV="$(dirname "$(dirname "$(python_env python-venv)")")"
