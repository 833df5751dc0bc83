#!/usr/bin/env python3
"""read_ring of a full 65 536-slot ring, two builds of the package in one run.

Compares the installed package with another build unpacked in BASELINE (a
directory holding its `nixl_telemetry/`, e.g. a wheel of an earlier commit
extracted with `python -m zipfile -e WHEEL BASELINE`), alternating between
them in fresh processes, on the same version-1 ring; then times the installed
package on full rings of every other version (which a baseline reading only
version 1 cannot read):

    python crates/python/bench/bench_read_compare.py --baseline BASELINE

Every figure is the least CPU time of the reading thread over the repetitions.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

# Runs in a child: times read_ring (events and columns) of the ring in argv[1].
CHILD = r"""
import json, sys, time
import nixl_telemetry as nt

def best(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.thread_time()
        fn()
        times.append(time.thread_time() - start)
    return min(times)

ring, repeat = sys.argv[1], int(sys.argv[2])
n = len(nt.read_ring(ring, peek=True))
print(json.dumps({
    "module": nt._native.__file__,
    "events": n,
    "read_ring_ms": best(lambda: nt.read_ring(ring, peek=True), repeat) * 1e3,
    "columns_ms": best(lambda: nt.read_ring(ring, peek=True, columns=True), repeat) * 1e3,
}))
"""

# Writes a full ring of the given version (every event has a type in each).
WRITER = r"""
import sys
import nixl_telemetry as nt
directory, version = sys.argv[1], sys.argv[2]
with nt.Telemetry("full", dir=directory, buffer_size=65536, run_interval_ms=100000,
                  ring_version=version) as t:
    handles = [t.handle(c, n) for c, n in [
        (nt.Category.PERFORMANCE, "agent_xfer_time"),
        (nt.Category.TRANSFER, "agent_tx_bytes"),
        (nt.Category.TRANSFER, "agent_tx_requests_num"),
        (nt.Category.MEMORY, "agent_memory_registered"),
    ]]
    for i in range(65535):
        handles[i % 4].record(i)
"""


def run(code, args, pythonpath=None):
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, check=True,
                         capture_output=True, text=True)
    return out.stdout


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True,
                        help="directory holding the baseline build's nixl_telemetry/")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    results = {}
    with tempfile.TemporaryDirectory() as d:
        rings = {}
        for version in ["1", "2", "2-typed", "3", "4"]:
            vdir = os.path.join(d, "v" + version)
            os.mkdir(vdir)
            run(WRITER, [vdir, version])
            rings[version] = os.path.join(vdir, "full")
        both = {"baseline": [], "current": []}
        for _ in range(args.rounds):
            for name, path in [("baseline", args.baseline), ("current", None)]:
                both[name].append(json.loads(run(CHILD, [rings["1"], str(args.repeat)], path)))
        for name, runs in both.items():
            results["v1_" + name] = {
                "module": runs[0]["module"],
                "events": runs[0]["events"],
                "read_ring_ms": min(r["read_ring_ms"] for r in runs),
                "columns_ms": min(r["columns_ms"] for r in runs),
            }
        base, cur = results["v1_baseline"], results["v1_current"]
        results["v1_current_over_baseline"] = {
            "read_ring": cur["read_ring_ms"] / base["read_ring_ms"],
            "columns": cur["columns_ms"] / base["columns_ms"],
        }
        for version in ["2", "2-typed", "3", "4"]:
            results["v" + version + "_current"] = json.loads(
                run(CHILD, [rings[version], str(args.repeat)]))
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
