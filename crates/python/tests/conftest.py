"""Shared paths for the Python package's tests."""

import os
import pathlib

import pytest
from hypothesis import HealthCheck, settings

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[2]
DATA = HERE / "data"
TAO_DATA = REPO / "tests" / "data" / "tao_processor"
STDLIB_READER = REPO / "python" / "telemetry_reader.py"

# The hypothesis tests' profiles: `ci` (the default) runs a fixed number of
# examples with a fixed seed; `long` (HYPOTHESIS_PROFILE=long) a long random
# run. No example database: nothing is written into the work tree.
settings.register_profile(
    "ci", max_examples=150, derandomize=True, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.register_profile(
    "long", max_examples=20000, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def telemetry_reader():
    """The Rust reader binary: $NIXL_TELEMETRY_READER, or the workspace's build
    (scripts/test-python.sh builds it)."""
    given = os.environ.get("NIXL_TELEMETRY_READER")
    candidates = [pathlib.Path(given)] if given else [
        REPO / "target" / "debug" / "telemetry_reader",
        REPO / "target" / "release" / "telemetry_reader",
    ]
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    pytest.fail(
        "telemetry_reader not found (looked at %s); build it with "
        "`cargo build -p nixl-telemetry-cli --bin telemetry_reader` or run "
        "scripts/test-python.sh" % ", ".join(map(str, candidates))
    )
