"""The PEP 517 build backend of the source distribution (the repository's
pyproject.toml names it).

`pip install nixl_telemetry-<v>.tar.gz` on a machine with a Rust toolchain and
g++ builds the same wheel as `scripts/build-wheel.sh --out DIR` (it runs that
script, with the build tools pip installed from `requires`): the commands, the
exporter plug-ins, the NIXL adapters and the Python package, linked against
glibc 2.28.

The source distribution holds the files git tracks (or, built from an unpacked
source distribution, the files there), a PKG-INFO and a COMMIT file naming the
commit, which every tool's --version prints.
"""

import io
import os
import pathlib
import re
import subprocess
import sys
import tarfile
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
NAME = "nixl_telemetry"


def _field(file, key):
    """The first `key = "value"` of a TOML file (no tomllib before Python 3.11)."""
    match = re.search(rf'^{key} = "([^"]*)"', (ROOT / file).read_text(), re.MULTILINE)
    if not match:
        raise RuntimeError(f"{file} has no {key} = \"...\" line")
    return match.group(1)


def _version():
    return _field("Cargo.toml", "version")


def _commit():
    if (ROOT / ".git").exists():
        out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT,
                             capture_output=True, text=True)
        if out.returncode == 0:
            return out.stdout.strip()
    commit = ROOT / "COMMIT"
    return commit.read_text().strip() if commit.exists() else "unknown"


def _sources():
    """The files of the source distribution, relative to the root."""
    if (ROOT / ".git").exists():
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
        names = [n for n in out.stdout.decode().split("\0") if n]
        return [n for n in names if (ROOT / n).is_file()]
    names = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        rel = pathlib.Path(dirpath).relative_to(ROOT)
        dirnames[:] = [d for d in dirnames
                       if not (rel == pathlib.Path(".") and d == "target") and d != "__pycache__"]
        names += [str(rel / f) for f in filenames if f not in ("PKG-INFO", "COMMIT")]
    return sorted(names)


def _pkg_info():
    lines = ["Metadata-Version: 2.1", f"Name: {_field('pyproject.toml', 'name')}",
             f"Version: {_version()}", f"Summary: {_field('pyproject.toml', 'description')}",
             f"Requires-Python: {_field('pyproject.toml', 'requires-python')}"]
    return "\n".join(lines) + "\n"


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_sdist(sdist_directory, config_settings=None):
    base = f"{NAME}-{_version()}"
    path = pathlib.Path(sdist_directory) / f"{base}.tar.gz"
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name in _sources():
            tar.add(ROOT / name, arcname=f"{base}/{name}", recursive=False)
        for name, text in (("PKG-INFO", _pkg_info()), ("COMMIT", _commit() + "\n")):
            data = text.encode()
            info = tarfile.TarInfo(f"{base}/{name}")
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return path.name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, NIXL_TELEMETRY_COMMIT=os.environ.get("NIXL_TELEMETRY_COMMIT")
                   or _commit())
        subprocess.run(["bash", str(ROOT / "scripts" / "build-wheel.sh"), "--out", out,
                        "--python", sys.executable], cwd=ROOT, env=env, check=True,
                       stdout=sys.stderr)
        wheels = list(pathlib.Path(out).glob(f"{NAME}-*.whl"))
        if len(wheels) != 1:
            raise RuntimeError(f"build-wheel.sh made {len(wheels)} wheels in {out}, expected one")
        target = pathlib.Path(wheel_directory) / wheels[0].name
        target.write_bytes(wheels[0].read_bytes())
        return target.name
