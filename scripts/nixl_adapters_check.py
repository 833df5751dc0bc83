#!/usr/bin/env python3
"""Columns (d) and (e) of the NIXL-release matrix (scripts/nixl_matrix.py): our exporters
inside a real NIXL release, and our plain plug-ins where NIXL looks for its own.

(d) The release runs the workload (scripts/nixl_workload.py --errors 2) with
    NIXL_PLUGIN_DIR set to an overlay made by `nixl-telemetry-adapters overlay` (NIXL's own
    plug-ins and the adapters of the release's generation) and our plug-ins in
    NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR (target/debug), once per exporter:
    * otlp (OTEL_EXPORTER_OTLP_ENDPOINT at our receiver, which decodes with the
      OpenTelemetry project's `opentelemetry-proto`; NIXL_TELEMETRY_OTLP_EVENTS=1): every
      event of the release's own rings (same workload, (a)'s reference) arrives as a log
      record of its agent, in order, with its value (measured times: present); the last
      metric points hold the rings' sums of transfer bytes, request counts and
      registrations, and the two refused requests as agent_errors_total{status="not_found"};
    * csv (NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH): the file holds the rings' events (both
      agents append to it: compared as a multiset of category, name, value);
    * nixl_telemetry_prometheus (our Prometheus, NIXL_TELEMETRY_PROMETHEUS_PORT): scraped
      while the agents live, it shows every family NIXL's own Prometheus plug-in shows for
      the same workload (counters compared without their `_total`), with the same transfer,
      request, registration (and error) values for the agents NIXL's plug-in serves.
    No run may log an error of an adapter, and each must exit 0.
(e) Never misread: NIXL_PLUGIN_DIR at our plain plug-ins (target/debug, as a user might
    try): asking for csv is refused by NIXL ("Failed to find nixl_telemetry_plugin_init"),
    not a crash; with them beside NIXL's own plug-ins a job writing rings runs (NIXL
    0.10/1.0 open every libtelemetry_exporter_*.so of the directory at start and must pass
    over ours); and the adapters of each neighbouring generation, asked for, are refused by
    NIXL's own API version check, not a crash.
"""

import collections
import csv
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

NIXL_CACHE = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                          "nixl-telemetry", "nixl")
EXPORTERS = ("csv", "otlp", "prometheus")
GENERATIONS = ("nixl-0.9-1.0", "nixl-1.1", "nixl-1.2", "nixl-1.3-1.4", "nixl-1.5")
TIMING = ("agent_xfer_time", "agent_xfer_post_time")
SUMMED = ("agent_tx_bytes", "agent_rx_bytes", "agent_tx_requests_num", "agent_rx_requests_num",
          "agent_memory_registered", "agent_memory_deregistered")
CATEGORY_NUMBER = {"MEMORY": 0, "TRANSFER": 1, "CONNECTION": 2, "BACKEND": 3, "ERROR": 4,
                   "PERFORMANCE": 5, "SYSTEM": 6, "CUSTOM": 7}
CATEGORY_OF = {"agent_tx_bytes": 1, "agent_rx_bytes": 1, "agent_tx_requests_num": 1,
               "agent_rx_requests_num": 1, "agent_memory_registered": 0,
               "agent_memory_deregistered": 0, "agent_xfer_time": 5, "agent_xfer_post_time": 5,
               "agent_telemetry_events_dropped": 6}
ADAPTER_ERROR = re.compile(r"^E\d{4} .* (adapter|forwarder|our_plugin)\.cpp:\d+\]", re.M)
WORKLOAD_ARGS = ["--errors", "2"]


class Cell:
    """One matrix cell: a short text and, when it failed, the details."""

    def __init__(self, text, ok, details=""):
        self.text, self.ok, self.details = text, ok, details


def ours(name):
    """A ring event's name as our collector records it (typed errors -> NIXL_ERR_X)."""
    if name.startswith("agent_err_"):
        return "NIXL_ERR_" + name[len("agent_err_"):].upper()
    return name


def nixl_python(release):
    return os.path.join(NIXL_CACHE, release, "bin", "python")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(text, lines=8):
    return "\n".join(text.strip().splitlines()[-lines:])


class AdapterChecks:
    """Runs (d) and (e) for one release at a time."""

    def __init__(self, root, releases_sh, bin_dir, env, work):
        self.root, self.sh, self.bin_dir, self.env, self.work = root, releases_sh, bin_dir, env, work
        self.staged = os.path.join(work, "adapters")
        self.tool = os.path.join(bin_dir, "nixl-telemetry-adapters")
        self.receiver = os.path.join(root, "crates/exporters/otlp/tests/receiver/otlp_receiver.py")

    # ------------------------------------------------------------ set-up
    def prepare(self):
        """Stages the adapters and makes sure the receiver's Python is there."""
        proc = subprocess.run([self.tool, "stage", self.staged, *EXPORTERS], capture_output=True,
                              text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"nixl-telemetry-adapters stage: {proc.stderr.strip()}")
        # The receiver's environment comes from the one helper that makes every test
        # environment (created here when no earlier step made it).
        lib = os.path.join(self.root, "scripts", "lib.sh")
        proc = subprocess.run(["bash", lib, "python-env", "otlp"], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"scripts/lib.sh python-env otlp: {proc.stderr.strip()}")
        python = proc.stdout.strip().splitlines()[-1]
        self.otlp_python = python

    def libdir(self, release):
        out = subprocess.run(["bash", self.sh, "libdir", release], capture_output=True, text=True,
                             check=True)
        return out.stdout.strip()

    def make_overlay(self, release, name):
        """The overlay of NIXL's plug-ins and the release's adapters, beside NIXL's plug-ins."""
        place = os.path.join(self.libdir(release), f"plugins-{name}-{os.getpid()}")
        proc = subprocess.run([self.tool, "overlay", "--python", nixl_python(release), "--adapters", self.staged,
                               "--dir", place], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"nixl-telemetry-adapters overlay: {proc.stderr.strip()}")
        generation = re.search(r"exporter interface (\S+)", proc.stdout)
        return place, generation.group(1) if generation else "?"

    def workload(self, release, env, args=(), timeout=180):
        return subprocess.run(["bash", self.sh, "run", release, *WORKLOAD_ARGS, *args], env=env,
                              capture_output=True, text=True, timeout=timeout)

    def adapter_env(self, overlay, exporter, **extra):
        env = dict(self.env, NIXL_TELEMETRY_ENABLE="y", NIXL_TELEMETRY_EXPORTER=exporter,
                   NIXL_PLUGIN_DIR=overlay, NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR=self.bin_dir)
        env.update(extra)
        return env

    @staticmethod
    def run_problem(proc, what):
        """Why a run failed, or None."""
        if proc.returncode != 0:
            signal = f" (killed by signal {-proc.returncode})" if proc.returncode < 0 else ""
            return f"{what}: exit {proc.returncode}{signal}:\n{tail(proc.stderr)}"
        errors = ADAPTER_ERROR.findall(proc.stderr)
        if errors:
            return f"{what}: an adapter logged errors:\n" + "\n".join(
                l for l in proc.stderr.splitlines() if ADAPTER_ERROR.match(l))
        return None

    # ------------------------------------------------------------ (d)
    def column_d(self, release, references, nixl_prom, out_dir):
        if len(references) != 2:
            return Cell("no reference", False, "(a) produced no reference rings")
        try:
            overlay, generation = self.make_overlay(release, "nixl-telemetry-matrix")
        except RuntimeError as e:
            return Cell("FAIL: overlay", False, str(e))
        try:
            problems, passed = [], []
            for name, check in (("otlp", self.check_otlp), ("csv", self.check_csv),
                                ("prometheus", self.check_prometheus)):
                try:
                    problem = check(release, overlay, references, nixl_prom, out_dir)
                except (RuntimeError, OSError, subprocess.TimeoutExpired, ValueError) as e:
                    problem = f"{type(e).__name__}: {e}"
                if problem:
                    problems.append(f"{name}: {problem}")
                else:
                    passed.append(name)
        finally:
            shutil.rmtree(overlay, ignore_errors=True)
        if problems:
            return Cell(f"FAIL ({', '.join(p.split(':')[0] for p in problems)}; {generation})", False,
                        "\n".join(problems))
        return Cell(f"PASS {', '.join(passed)} ({generation})", True)

    def check_otlp(self, release, overlay, references, _nixl_prom, out_dir):
        received = os.path.join(out_dir, "otlp-received.jsonl")
        if os.path.exists(received):
            os.remove(received)
        receiver = subprocess.Popen([self.otlp_python, self.receiver, "--out", received],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = receiver.stdout.readline()
            if not line.startswith("PORT "):
                return f"the receiver did not start: {line!r} {receiver.stderr.read()}"
            port = int(line.split()[1])
            env = self.adapter_env(overlay, "otlp",
                                   OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}",
                                   OTEL_METRIC_EXPORT_INTERVAL="200", NIXL_TELEMETRY_OTLP_EVENTS="1")
            proc = self.workload(release, env)
            with open(os.path.join(out_dir, "otlp-workload.log"), "w", encoding="utf-8") as f:
                f.write(proc.stderr)
            problem = self.run_problem(proc, "workload")
            if problem:
                return problem
            # The last export happens when the agents go; allow the receiver a moment.
            deadline = time.monotonic() + 10
            while True:
                entries = read_jsonl(received)
                problem = compare_otlp(entries, references)
                if problem is None or time.monotonic() > deadline:
                    return problem
                time.sleep(0.2)
        finally:
            receiver.terminate()
            receiver.wait(timeout=10)

    def check_csv(self, release, overlay, references, _nixl_prom, out_dir):
        path = os.path.join(out_dir, "adapter.csv")
        if os.path.exists(path):
            os.remove(path)
        proc = self.workload(release, self.adapter_env(overlay, "csv",
                                                       NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH=path))
        with open(os.path.join(out_dir, "csv-workload.log"), "w", encoding="utf-8") as f:
            f.write(proc.stderr)
        problem = self.run_problem(proc, "workload")
        if problem:
            return problem
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
        if not rows or rows[0] != ["timestamp_us", "category", "event_name", "value"]:
            return f"{path}: no CSV header: {rows[:1]}"
        got = collections.Counter()
        for ts, category, name, value in rows[1:]:
            if int(ts) <= 0:
                return f"{path}: event {name} without a timestamp"
            got[(int(category), name, None if name in TIMING else int(value))] += 1
        want = collections.Counter()
        for agent_events in references.values():
            for _ts, category, name, value in agent_events:
                name = ours(name)
                number = CATEGORY_NUMBER.get(category) if category else None
                if number is None:
                    number = 4 if name.startswith("NIXL_ERR_") else CATEGORY_OF.get(name, 7)
                want[(number, name, None if name in TIMING else value)] += 1
        if got != want:
            return (f"{path} holds other events than the release's rings: missing "
                    f"{dict(want - got)}, extra {dict(got - want)}")
        return None

    def check_prometheus(self, release, overlay, references, nixl_prom, out_dir):
        if not nixl_prom or not os.path.exists(nixl_prom):
            nixl_prom = os.path.join(out_dir, "nixl.prom")
            proc = subprocess.run(["bash", self.sh, "prometheus", release, nixl_prom, *WORKLOAD_ARGS],
                                  env=self.env, capture_output=True, text=True, timeout=180)
            if proc.returncode != 0:
                return f"NIXL's own Prometheus plug-in: {tail(proc.stderr)}"
        port = free_port()
        ours_prom = os.path.join(out_dir, "adapter.prom")
        expect = [f'agent_memory_deregistered_total\\{{[^}}]*agent_name="{a}"[^}}]*\\}} [1-9]'
                  for a in references]
        env = self.adapter_env(overlay, "nixl_telemetry_prometheus",
                               NIXL_TELEMETRY_PROMETHEUS_PORT=str(port),
                               NIXL_TELEMETRY_PROMETHEUS_LOCAL="y")
        proc = self.workload(release, env, ["--scrape", f"http://127.0.0.1:{port}/metrics",
                                            "--scrape-out", ours_prom,
                                            *[f"--scrape-expect={e}" for e in expect]])
        with open(os.path.join(out_dir, "prometheus-workload.log"), "w", encoding="utf-8") as f:
            f.write(proc.stderr)
        problem = self.run_problem(proc, "workload")
        if problem:
            return problem
        with open(nixl_prom, encoding="utf-8") as f:
            nixl = f.read()
        with open(ours_prom, encoding="utf-8") as f:
            mine = f.read()
        return compare_families(nixl, mine)

    # ------------------------------------------------------------ (e)
    def column_e(self, release, out_dir):
        env = dict(self.env, NIXL_TELEMETRY_ENABLE="y", NIXL_TELEMETRY_EXPORTER="csv",
                   NIXL_PLUGIN_DIR=self.bin_dir,
                   NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH=os.path.join(out_dir, "plain.csv"))
        proc = self.workload(release, env)
        with open(os.path.join(out_dir, "plain-csv.log"), "w", encoding="utf-8") as f:
            f.write(proc.stderr)
        if proc.returncode < 0:
            return Cell(f"FAIL: killed by signal {-proc.returncode}", False, tail(proc.stderr))
        if "nixl_telemetry_plugin_init" not in proc.stderr or "Failed to load telemetry plugin: csv" not in proc.stderr:
            return Cell("FAIL: not refused", False,
                        f"exit {proc.returncode}; expected NIXL to refuse csv for lack of "
                        f"nixl_telemetry_plugin_init:\n{tail(proc.stderr)}")
        # Beside NIXL's own plug-ins, a job without our exporters still runs.
        place = os.path.join(self.libdir(release), f"plugins-nixl-telemetry-plain-{os.getpid()}")
        try:
            os.makedirs(place)
            nixl_plugins = os.path.join(self.libdir(release), "plugins")
            for name in os.listdir(nixl_plugins):
                os.symlink(os.path.realpath(os.path.join(nixl_plugins, name)), os.path.join(place, name))
            for name in EXPORTERS:
                file = f"libtelemetry_exporter_{name}.so"
                target = os.path.join(place, file)
                if not os.path.exists(target):
                    os.symlink(os.path.join(self.bin_dir, file), target)
            rings = os.path.join(out_dir, "plain-rings")
            os.makedirs(rings, exist_ok=True)
            env = dict(self.env, NIXL_TELEMETRY_ENABLE="y", NIXL_TELEMETRY_DIR=rings,
                       NIXL_PLUGIN_DIR=place)
            ring_run = self.workload(release, env)
        finally:
            shutil.rmtree(place, ignore_errors=True)
        with open(os.path.join(out_dir, "plain-rings.log"), "w", encoding="utf-8") as f:
            f.write(ring_run.stderr)
        if ring_run.returncode != 0 or not os.path.exists(os.path.join(rings, "initiator")):
            return Cell("FAIL: job with rings", False,
                        f"exit {ring_run.returncode}:\n{tail(ring_run.stderr)}")
        refused = []
        for other in self.neighbours(release):
            problem = self.wrong_generation(release, other, out_dir)
            if problem:
                return Cell(f"FAIL: {other}", False, problem)
            refused.append(other)
        return Cell(f"PASS (plain: refused, no crash, rings written; {', '.join(refused)}: refused)", True)

    def neighbours(self, release):
        """The generations next to the release's own."""
        detect = subprocess.run([self.tool, "detect", "--python", nixl_python(release)],
                                capture_output=True, text=True, check=True)
        own = re.search(r"exporter interface (\S+)", detect.stdout).group(1)
        at = GENERATIONS.index(own)
        return [GENERATIONS[i] for i in (at - 1, at + 1) if 0 <= i < len(GENERATIONS)]

    def wrong_generation(self, release, generation, out_dir):
        """The adapters of `generation` asked for by `release`: refused by its API check."""
        place = os.path.join(self.libdir(release), f"plugins-nixl-telemetry-wrong-{os.getpid()}")
        out = os.path.join(out_dir, f"wrong-{generation}.csv")
        try:
            os.makedirs(place)
            nixl_plugins = os.path.join(self.libdir(release), "plugins")
            for name in os.listdir(nixl_plugins):
                os.symlink(os.path.realpath(os.path.join(nixl_plugins, name)), os.path.join(place, name))
            for name in os.listdir(os.path.join(self.staged, generation)):
                os.symlink(os.path.join(self.staged, generation, name), os.path.join(place, name))
            proc = self.workload(release, self.adapter_env(place, "csv",
                                                           NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH=out))
        finally:
            shutil.rmtree(place, ignore_errors=True)
        with open(os.path.join(out_dir, f"wrong-{generation}.log"), "w", encoding="utf-8") as f:
            f.write(proc.stderr)
        if proc.returncode < 0:
            return f"killed by signal {-proc.returncode}:\n{tail(proc.stderr)}"
        if "Plugin API version mismatch" not in proc.stderr or os.path.exists(out):
            return (f"the {generation} adapter was not refused by NIXL's check (exit "
                    f"{proc.returncode}):\n{tail(proc.stderr)}")
        return None


def read_jsonl(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def compare_otlp(entries, references):
    """None when the receiver got every event and the sums of `references`; else why not."""
    records = collections.defaultdict(list)
    last = {}
    for entry in entries:
        for record in entry.get("records", []):
            attributes = record["attributes"]
            records[attributes.get("agent_name")].append((attributes.get("name"), attributes.get("value")))
        for point in entry.get("points", []):
            agent = point.get("attributes", {}).get("agent_name")
            key = (point["metric"], agent, point.get("attributes", {}).get("status"))
            if "value" in point and (key not in last or point["time"] >= last[key][0]):
                last[key] = (point["time"], point["value"])
    for agent, events in references.items():
        want = [(ours(name), None if name in TIMING else value) for _ts, _c, name, value in events]
        got = [(name, None if name in TIMING else value) for name, value in records.get(agent, [])]
        if got != want:
            return f"agent {agent}: log records {got} != the ring's events {want}"
        for family in SUMMED:
            total = sum(value for _ts, _c, name, value in events if name == family)
            have = last.get((f"{family}_total", agent, None))
            if have is None or have[1] != total:
                return (f"agent {agent}: {family}_total is {have and have[1]}, the ring's events "
                        f"sum to {total}")
        errors = sum(1 for _ts, _c, name, _v in events if ours(name) == "NIXL_ERR_NOT_FOUND")
        have = last.get(("agent_errors_total", agent, "not_found"))
        if errors and (have is None or have[1] != errors):
            return f"agent {agent}: agent_errors_total{{status=not_found}} is {have}, want {errors}"
    return None


def families(text):
    """{normalised family: {(agent_name, status): value}} and each family's type."""
    types, values = {}, collections.defaultdict(dict)
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
    def normal(name):
        base = name
        for suffix in ("_bucket", "_sum", "_count"):
            if base.endswith(suffix) and base[: -len(suffix)] in types:
                base = base[: -len(suffix)]
        if base not in types and base + "_total" in types:
            base += "_total"
        kind = types.get(base)
        if kind == "counter" and base.endswith("_total"):
            base = base[: -len("_total")]
        return base
    sample = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)')
    label = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
    for line in text.splitlines():
        m = sample.match(line)
        if not m or line.startswith("#"):
            continue
        labels = dict(label.findall(m.group(3) or ""))
        if "le" in labels or "quantile" in labels:
            continue
        values[normal(m.group(1))][(labels.get("agent_name"), labels.get("status"), m.group(1).endswith("_count"))] = float(m.group(4))
    fams = {normal(n) for n in types}
    return fams, values


def compare_families(nixl_text, our_text):
    """None when ours shows every family of NIXL's exposition, with equal counts."""
    nixl_fams, nixl_values = families(nixl_text)
    our_fams, our_values = families(our_text)
    missing = sorted(nixl_fams - our_fams)
    if missing:
        return f"families NIXL's plug-in shows and ours does not: {missing}"
    for family in list(SUMMED) + ["agent_errors"]:
        for key, value in nixl_values.get(family, {}).items():
            mine = our_values.get(family, {}).get(key)
            if mine != value:
                return f"{family}{key}: {value} in NIXL's exposition, {mine} in ours"
    return None


# ---------------------------------------------------------------- scripts/test-nixl-adapters.sh

def clean_env():
    env = dict(os.environ)
    for key in list(env):
        if key.startswith(("NIXL_", "OTEL_")):
            del env[key]
    return env


def csv_events(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))[1:]


def installed_flow(sh, prefix, release, work):
    """The user's way: <prefix>/bin/nixl-telemetry-adapters link into the plug-in directory
    of a NIXL installation (a hard-linked copy of the release's site-packages, so the shared
    cache is never touched), then a job that sets only NIXL_TELEMETRY_EXPORTER (and the
    CSV file); then unlink."""
    site = os.path.dirname(subprocess.run(
        ["bash", sh, "libdir", release], capture_output=True, text=True, check=True).stdout.strip())
    copy = os.path.join(work, f"site-{release}")
    shutil.rmtree(copy, ignore_errors=True)
    subprocess.run(["cp", "-al", site, copy], check=True)
    env = clean_env()
    env["PYTHONPATH"] = copy
    tool = os.path.join(prefix, "bin", "nixl-telemetry-adapters")
    # Found through Python like any job's NIXL: it must be the copy, or nothing is touched.
    detect = subprocess.run([tool, "detect", "--python", nixl_python(release)], env=env,
                            capture_output=True, text=True)
    if detect.returncode != 0 or f"NIXL in {os.path.realpath(copy)}/" not in detect.stdout:
        return f"detect did not find the copy {copy}: {detect.stdout.strip()} {detect.stderr.strip()}"
    link = subprocess.run([tool, "link", "--python", nixl_python(release)], env=env,
                          capture_output=True, text=True)
    if link.returncode != 0:
        return f"link: {link.stderr.strip()}"
    print(link.stdout.strip(), file=sys.stderr)
    plugins = os.path.join(copy, ".nixl_cu12.mesonpy.libs", "plugins")
    if not os.path.islink(os.path.join(plugins, "libtelemetry_exporter_otlp.so")):
        return f"link made no libtelemetry_exporter_otlp.so in {plugins}:\n{link.stdout}"
    out = os.path.join(work, f"installed-{release}.csv")
    if os.path.exists(out):
        os.remove(out)
    job = dict(env, NIXL_TELEMETRY_ENABLE="y", NIXL_TELEMETRY_EXPORTER="csv",
               NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH=out)
    proc = subprocess.run(["bash", sh, "run", release, *WORKLOAD_ARGS], env=job, capture_output=True,
                          text=True, timeout=180)
    problem = AdapterChecks.run_problem(proc, f"the job under {release}")
    if problem:
        return problem
    events = csv_events(out)
    if len(events) != 26:
        return f"{out}: {len(events)} events, the workload records 26"
    unlink = subprocess.run([tool, "unlink", "--python", nixl_python(release)], env=env,
                            capture_output=True, text=True)
    left = [n for n in os.listdir(plugins) if os.path.islink(os.path.join(plugins, n))]
    if unlink.returncode != 0 or left:
        return f"unlink: {unlink.stderr.strip()} (links left: {left})"
    shutil.rmtree(copy, ignore_errors=True)
    return None


def hostile(sh, bin_dir, staged, release, work):
    """Our exporter fails or panics inside NIXL: NIXL's transfers go on, the reasons reach
    NIXL's log, a failed creation is NIXL's refusal, never a crash. The testkit plug-in
    (crates/plugins/testkit) fails on demand."""
    checks = AdapterChecks(os.path.dirname(os.path.dirname(os.path.abspath(sh))), sh, bin_dir,
                           clean_env(), work)
    checks.staged = staged
    overlay, _ = checks.make_overlay(release, "nixl-telemetry-hostile")
    testkit = os.path.join(work, "testkit-adapters")
    subprocess.run([checks.tool, "stage", testkit, "testkit"], check=True, capture_output=True)
    try:
        os.symlink(os.path.join(testkit, staged_generation(overlay), "libtelemetry_exporter_testkit.so"),
                   os.path.join(overlay, "libtelemetry_exporter_testkit.so"))
        cases = [
            ("fail", 0, ["export_batch failed: testkit export fails as asked",
                         "flush failed: testkit flush fails as asked", "events lost since the last report"]),
            ("panic-flush", 0, ["flush: panicked: testkit panics in flush as asked",
                                "the exporter is disabled"]),
            # NIXL up to 1.3 goes on without telemetry, later releases refuse the agent.
            ("panic-create", None, ["cannot create the exporter of agent initiator",
                                    "panicked while being created",
                                    "Failed to create telemetry exporter"]),
        ]
        for mode, want_rc, messages in cases:
            env = checks.adapter_env(overlay, "testkit", NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH=mode)
            proc = checks.workload(release, env)
            with open(os.path.join(work, f"hostile-{release}-{mode}.log"), "w", encoding="utf-8") as f:
                f.write(proc.stderr)
            if proc.returncode != want_rc and not (want_rc is None and proc.returncode in (0, 1)):
                return f"testkit {mode}: exit {proc.returncode}, want {want_rc}:\n{tail(proc.stderr)}"
            if proc.returncode == 0 and "workload done" not in proc.stderr:
                return f"testkit {mode}: the transfers did not finish:\n{tail(proc.stderr)}"
            for message in messages:
                if message not in proc.stderr:
                    return f"testkit {mode}: {message!r} not in NIXL's log:\n{tail(proc.stderr, 20)}"
            for message in messages[:1]:
                if proc.stderr.count(message) > 2:
                    return f"testkit {mode}: {message!r} logged {proc.stderr.count(message)} times (once per agent)"
        problem = otlp_collector_down(checks, overlay, release, work)
        if problem:
            return problem
        problem = csv_file_per_agent(checks, overlay, release, work)
        if problem:
            return problem
    finally:
        shutil.rmtree(overlay, ignore_errors=True)
    return None


def otlp_collector_down(checks, overlay, release, work):
    """The OTLP plug-in inside NIXL sending to a port where nothing listens: its warnings
    reach NIXL's log through the adapter's log callback, the last one saying how many
    events never reached the collector; the transfers go on."""
    env = checks.adapter_env(overlay, "otlp",
                             OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{free_port()}",
                             OTEL_METRIC_EXPORT_INTERVAL="200", OTEL_EXPORTER_OTLP_TIMEOUT="500")
    proc = checks.workload(release, env)
    with open(os.path.join(work, f"hostile-{release}-otlp-down.log"), "w", encoding="utf-8") as f:
        f.write(proc.stderr)
    if proc.returncode != 0 or "workload done" not in proc.stderr:
        return f"otlp, collector down: exit {proc.returncode}:\n{tail(proc.stderr)}"
    prefix = "nixl-telemetry exporter plug-in otlp: "
    for message in ("OTLP export failed; retrying with backoff", "OTLP exporter stopped: 0 of"):
        if prefix + message not in proc.stderr:
            return f"otlp, collector down: {prefix + message!r} not in NIXL's log:\n{tail(proc.stderr, 20)}"
    stopped = re.search(r"OTLP exporter stopped: 0 of (\d+) events .* (\d+) did not", proc.stderr)
    if not stopped or int(stopped.group(2)) == 0 or stopped.group(1) != stopped.group(2):
        return f"otlp, collector down: no count of undelivered events:\n{tail(proc.stderr, 20)}"
    return None


def csv_file_per_agent(checks, overlay, release, work):
    """{agent} in NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH is each agent's name, as for the
    sidecar: the workload's two agents write two files."""
    out = os.path.join(work, f"per-agent-{release}")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    env = checks.adapter_env(overlay, "csv",
                             NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH=os.path.join(out, "{agent}.csv"))
    proc = checks.workload(release, env)
    with open(os.path.join(work, f"hostile-{release}-csv-per-agent.log"), "w", encoding="utf-8") as f:
        f.write(proc.stderr)
    problem = checks.run_problem(proc, "csv per agent")
    if problem:
        return problem
    files = sorted(os.listdir(out))
    if len(files) != 2 or any("{agent}" in f for f in files):
        return f"csv per agent: {out} holds {files}, want one file per agent"
    for name in files:
        if not csv_events(os.path.join(out, name)):
            return f"csv per agent: {name} holds no event"
    return None


def staged_generation(overlay):
    """The generation of the adapters in an overlay (from where its otlp link points)."""
    return os.path.basename(os.path.dirname(os.path.realpath(
        os.path.join(overlay, "libtelemetry_exporter_otlp.so"))))


def valgrind(sh, bin_dir, staged, release, work):
    """Loading, exporting (csv) and unloading under valgrind in the release's own process:
    no error and no leak of valgrind's has a frame in an adapter or in our plug-in."""
    checks = AdapterChecks(os.path.dirname(os.path.dirname(os.path.abspath(sh))), sh, bin_dir,
                           clean_env(), work)
    checks.staged = staged
    overlay, _ = checks.make_overlay(release, "nixl-telemetry-valgrind")
    xml = os.path.join(work, f"valgrind-{release}.xml")
    out = os.path.join(work, f"valgrind-{release}.csv")
    if os.path.exists(out):
        os.remove(out)
    try:
        env = checks.adapter_env(overlay, "csv", NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH=out,
                                 PYTHONMALLOC="malloc",
                                 PYTHONPATH=os.path.join(NIXL_CACHE, "torch-stub"))
        # --fair-sched=yes: valgrind runs one thread at a time, and by default the thread
        # that holds its lock may keep it. The workload's main thread polls a transfer's
        # state without sleeping, so UCX's progress thread could wait past the workload's
        # 30 s for a turn: on a fresh machine a WRITE of 1.5.1 and a READ of 1.0.0 timed
        # out so, with or without telemetry. Taking turns in order, the plain job (no
        # leak check) ends in about 20 s.
        proc = subprocess.run(["valgrind", "--fair-sched=yes", "--leak-check=full",
                               "--errors-for-leak-kinds=definite",
                               "--num-callers=40", "--xml=yes", f"--xml-file={xml}",
                               nixl_python(release),
                               os.path.join(os.path.dirname(os.path.abspath(sh)), "nixl_workload.py"),
                               *WORKLOAD_ARGS, "--settle", "2"],
                              env=env, capture_output=True, text=True, timeout=1200)
    finally:
        shutil.rmtree(overlay, ignore_errors=True)
    if proc.returncode != 0:
        return f"exit {proc.returncode}:\n{tail(proc.stderr)}"
    if len(csv_events(out)) != 26:
        return f"{out}: {len(csv_events(out))} events under valgrind, want 26"
    import xml.etree.ElementTree as ET
    ours = re.compile(r"libtelemetry_exporter_|nixl_adapter")
    found, total = [], 0
    for error in ET.parse(xml).getroot().iter("error"):
        total += 1
        frames = [(f.findtext("fn") or "?", f.findtext("obj") or "?") for f in error.iter("frame")]
        if any(ours.search(obj) for _fn, obj in frames):
            found.append(f"{error.findtext('kind')}: " + " <- ".join(fn for fn, _obj in frames[:8]))
    print(f"valgrind {release}: {total} reports in all (Python, UCX), {len(found)} with a frame of ours",
          file=sys.stderr)
    if found:
        return "valgrind reports in our code:\n" + "\n".join(found[:10])
    return None


def main():
    import argparse
    p = argparse.ArgumentParser(description="The adapters' checks of scripts/test-nixl-adapters.sh")
    p.add_argument("check", choices=["installed", "hostile", "valgrind"])
    p.add_argument("--releases-sh", required=True)
    p.add_argument("--bin-dir", required=True, help="target/debug: our plug-ins and the tool")
    p.add_argument("--staged", help="the adapters staged by nixl-telemetry-adapters stage")
    p.add_argument("--prefix", help="an installed prefix (installed)")
    p.add_argument("--work", required=True)
    p.add_argument("release")
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    if a.check == "installed":
        problem = installed_flow(a.releases_sh, a.prefix, a.release, a.work)
    elif a.check == "hostile":
        problem = hostile(a.releases_sh, a.bin_dir, a.staged, a.release, a.work)
    else:
        problem = valgrind(a.releases_sh, a.bin_dir, a.staged, a.release, a.work)
    if problem:
        print(f"FAIL {a.check} {a.release}: {problem}")
        return 1
    print(f"PASS {a.check} {a.release}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
