#!/usr/bin/env python3
"""`nixl-telemetry export` against the real NIXL releases (run by scripts/test-export.sh).

The releases given (default: 1.0.0, 1.1.0, 1.3.2, 1.5.1 — ring versions 1, 2 with names,
3 and 4) each run the NIXL workload (scripts/nixl_workload.py --errors 2) at the same time
into one ring directory, each agent pair under its own prefix (1.5.1's unprefixed, as in
the reference exposition), while the sidecar follows the directory:

1. with our Prometheus plug-in: every agent's series on one endpoint, with the values the
   workload implies; and NIXL 1.5.1's initiator exposed exactly as NIXL 1.5.1's own
   Prometheus plug-in exposes it on the same workload (`nixl-releases.sh prometheus`):
   families, types, label names, histogram bounds, error statuses, values that do not
   depend on measured time — the comparison of the compatibility matrix's column (c);
2. with our OTLP plug-in: the same events reach an OTLP/HTTP receiver that decodes them
   with the OpenTelemetry project's `opentelemetry-proto` (its python given by --otlp-python).

Exit status 0 when every check passes; each failure is printed.
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import nixl_matrix  # noqa: E402  the matrix's exposition parser and comparison

DEFAULT_RELEASES = ["1.0.0", "1.1.0", "1.3.2", "1.5.1"]
REFERENCE = "1.5.1"
WORKLOAD_ARGS = ["--errors", "2"]
# What the workload implies for every release (values independent of measured time).
INITIATOR = {
    "agent_tx_bytes_total": 3 * 4096,
    "agent_rx_bytes_total": 2 * 8192,
    "agent_tx_requests_num_total": 3,
    "agent_rx_requests_num_total": 2,
    "agent_memory_registered_total": 65536,
    "agent_memory_deregistered_total": 65536,
    "agent_xfer_time_us_count": 5,
    "agent_xfer_post_time_us_count": 5,
}
ERRORS = 2
TARGET = {"agent_memory_registered_total": 65536, "agent_memory_deregistered_total": 65536}


def prefix(release):
    return "" if release == REFERENCE else "r" + release.replace(".", "-") + "-"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_workloads(sh, releases, rings):
    """Every release's workload at once into `rings`; raises on a failure."""
    env = dict(os.environ, NIXL_TELEMETRY_BUFFER_SIZE="64")
    procs = []
    for release in releases:
        log = open(os.path.join(os.path.dirname(rings), f"workload-{release}.log"), "w")
        cmd = ["bash", sh, "write", release, rings, f"--agent-prefix={prefix(release)}"] + WORKLOAD_ARGS
        procs.append((release, subprocess.Popen(cmd, env=env, stdout=log, stderr=log), log))
    for release, proc, log in procs:
        rc = proc.wait(timeout=300)
        log.close()
        if rc != 0:
            with open(log.name) as f:
                raise RuntimeError(f"workload of {release} failed ({rc}):\n{f.read()[-2000:]}")


class Sidecar:
    def __init__(self, binary, rings, args, env, log):
        self.log = log
        self.proc = subprocess.Popen(
            [binary, "export", "--dir", rings, "--interval", "50"] + args,
            env=env, stdout=subprocess.DEVNULL, stderr=open(log, "w"))

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=30)
        with open(self.log) as f:
            text = f.read()
        if rc != 0:
            raise RuntimeError(f"the sidecar exited {rc}:\n{text}")
        return text


def clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith(("NIXL_", "OTEL_"))}


def sample(exposition, family, agent, extra=None):
    fam = family
    for suffix in ("_count", "_sum", "_bucket"):
        if family.endswith(suffix):
            fam = family[: -len(suffix)]
    for (name, labels), value in exposition.get(fam, {}).get("samples", {}).items():
        labels = dict(labels)
        if name == family and labels.get("agent_name") == agent and all(
                labels.get(k) == v for k, v in (extra or {}).items()):
            return value
    return None


def expected_values(releases):
    """(agent, family, labels, value) the workload implies."""
    out = []
    for release in releases:
        p = prefix(release)
        for family, value in INITIATOR.items():
            out.append((p + "initiator", family, None, value))
        out.append((p + "initiator", "agent_errors_total", {"status": "not_found"}, ERRORS))
        for family, value in TARGET.items():
            out.append((p + "target", family, None, value))
    return out


def prometheus_run(a, releases, work, failures):
    rings = os.path.join(work, "prometheus", "rings")
    os.makedirs(rings)
    port = free_port()
    env = clean_env()
    sidecar = Sidecar(a.binary, rings, ["--exporter", "prometheus", "--plugin-dir", a.plugin_dir,
                                        "--output-path", f"127.0.0.1:{port}", "--grace", "600"],
                      env, os.path.join(work, "prometheus", "export.log"))
    try:
        run_workloads(a.releases_sh, releases, rings)
        want = expected_values(releases)
        deadline = time.monotonic() + 30
        text, missing = "", want
        while time.monotonic() < deadline:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                text = r.read().decode()
            exposition = nixl_matrix.parse_exposition(text)
            missing = [w for w in want if sample(exposition, w[1], w[0], w[2]) != w[3]]
            if not missing:
                break
            time.sleep(0.2)
        with open(os.path.join(work, "prometheus", "sidecar.prom"), "w") as f:
            f.write(text)
        for agent, family, labels, value in missing:
            got = sample(nixl_matrix.parse_exposition(text), family, agent, labels)
            failures.append(f"prometheus: {family}{labels or ''} of {agent}: {got}, expected {value}")
        print(f"prometheus: {len(want) - len(missing)}/{len(want)} expected values exposed "
              f"for {2 * len(releases)} agents on one endpoint", file=sys.stderr)
    finally:
        log = sidecar.stop()
    if "warning" in log:
        failures.append("prometheus: the sidecar warned:\n" + log)
    if REFERENCE in releases:
        compare_with_nixl(a, text, work, failures)


def compare_with_nixl(a, ours_text, work, failures):
    """Column (c) of the matrix, for the sidecar: NIXL 1.5.1's own exposition of the same
    workload against the sidecar's, the initiator's samples (and the process-wide ones)."""
    nixl_file = os.path.join(work, "prometheus", "nixl-1.5.1.prom")
    proc = subprocess.run(["bash", a.releases_sh, "prometheus", REFERENCE, nixl_file] + WORKLOAD_ARGS,
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        failures.append(f"NIXL {REFERENCE}'s Prometheus run failed: {proc.stderr[-2000:]}")
        return
    with open(nixl_file) as f:
        nixl = nixl_matrix.parse_exposition(f.read())
    for fam in nixl.values():
        fam["samples"] = {k: v for k, v in fam["samples"].items()
                          if dict(k[1]).get("agent_name") in (None, "initiator")}
    ours = nixl_matrix.parse_exposition(ours_text)
    differences, notes, extra = nixl_matrix.compare_expositions(nixl, ours)
    with open(os.path.join(work, "prometheus", "differences.txt"), "w") as f:
        f.write("\n".join(differences + [f"note: {n}" for n in notes]
                          + [f"extra family of ours: {e}" for e in extra]) + "\n")
    families = sum(1 for f in nixl.values() if f["samples"])
    samples = sum(len(f["samples"]) for f in nixl.values())
    print(f"parity with NIXL {REFERENCE}'s plug-in, initiator: {families} families, {samples} samples, "
          f"{len(differences)} differences; extra families of ours: {', '.join(extra) or 'none'}",
          file=sys.stderr)
    for d in differences:
        failures.append(f"parity with NIXL {REFERENCE}: {d}")


def otlp_run(a, releases, work, failures):
    base = os.path.join(work, "otlp")
    rings = os.path.join(base, "rings")
    os.makedirs(rings)
    received = os.path.join(base, "received.jsonl")
    receiver = subprocess.Popen([a.otlp_python, a.otlp_receiver, "--out", received],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = receiver.stdout.readline()
        m = re.match(r"PORT (\d+)", line)
        if not m:
            failures.append(f"otlp: the receiver did not start: {line!r}")
            return
        port = int(m.group(1))
        sidecar = Sidecar(a.binary, rings, [
            "--exporter", "otlp", "--plugin-dir", a.plugin_dir, "--grace", "600",
            "--set", f"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:{port}",
            "--set", "OTEL_METRIC_EXPORT_INTERVAL=300",
            "--set", "OTEL_SERVICE_NAME=nixl-telemetry-export"],
            clean_env(), os.path.join(base, "export.log"))
        try:
            run_workloads(a.releases_sh, releases, rings)
            time.sleep(1.0)
        finally:
            log = sidecar.stop()
        if "warning" in log:
            failures.append("otlp: the sidecar warned:\n" + log)
        # The last value of each (metric, agent, status) the receiver decoded.
        last, resource = {}, {}
        with open(received) as f:
            for raw in f:
                entry = json.loads(raw)
                if entry.get("path") != "/v1/metrics" or "points" not in entry:
                    continue
                resource = entry.get("resource", resource)
                for p in entry["points"]:
                    attrs = p.get("attributes", {})
                    key = (p["metric"], attrs.get("agent_name"), attrs.get("status"))
                    last[key] = p.get("count") if p["type"] == "histogram" else p.get("value")
        want = expected_values(releases)
        ok = 0
        for agent, family, labels, value in want:
            metric = family[: -len("_count")] if family.endswith("_us_count") else family
            got = last.get((metric, agent, (labels or {}).get("status")))
            if got != value:
                failures.append(f"otlp: {metric}{labels or ''} of {agent}: {got}, expected {value}")
            else:
                ok += 1
        print(f"otlp: {ok}/{len(want)} expected values decoded by opentelemetry-proto "
              f"(resource {resource.get('service.name')}, one data point per agent)", file=sys.stderr)
    finally:
        receiver.terminate()
        receiver.wait(timeout=10)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--binary", required=True, help="the nixl-telemetry command")
    p.add_argument("--plugin-dir", required=True, help="where our plug-ins are")
    p.add_argument("--releases-sh", default=os.path.join(HERE, "nixl-releases.sh"))
    p.add_argument("--otlp-python", help="a python with opentelemetry-proto (no OTLP run without)")
    p.add_argument("--otlp-receiver", default=os.path.join(
        HERE, "..", "crates", "exporters", "otlp", "tests", "receiver", "otlp_receiver.py"))
    p.add_argument("--out", help="keep the run's files here")
    p.add_argument("releases", nargs="*", default=DEFAULT_RELEASES)
    a = p.parse_args()
    work = a.out or tempfile.mkdtemp(prefix="nixl-export-")
    os.makedirs(work, exist_ok=True)
    failures = []
    started = time.monotonic()
    try:
        prometheus_run(a, a.releases, work, failures)
        if a.otlp_python:
            otlp_run(a, a.releases, work, failures)
        else:
            failures.append("otlp: no --otlp-python given")
    except Exception as e:  # a failed step is a failed check, with its reason
        failures.append(f"{type(e).__name__}: {e}")
    print(f"releases {' '.join(a.releases)}: {len(failures)} failures "
          f"({time.monotonic() - started:.0f} s)", file=sys.stderr)
    for f in failures:
        print("FAIL " + f)
    if a.out:
        print(f"files of this run: {work}", file=sys.stderr)
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
