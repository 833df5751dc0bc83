#!/usr/bin/env python3
"""Serving a real NIXL job's telemetry: NIXL's own Prometheus plug-in against ours.

Run by scripts/bench-vs-nixl.sh. The same NIXL job (two agents in one process, UCX over
DRAM, `--transfers` WRITEs of `--size` bytes posted one after the other by a Python loop,
scripts/nixl_workload.py's `transfer`) runs in four modes, interleaved, `--rounds` times
(the order rotates each round):

  a  telemetry off;
  b  NIXL_TELEMETRY_EXPORTER=prometheus: NIXL's own plug-in inside the job;
  c  NIXL's ring (NIXL_TELEMETRY_ENABLE=y, NIXL_TELEMETRY_DIR) followed by our sidecar,
     `nixl-telemetry export --exporter prometheus` with our plug-in;
  d  NIXL loading our Prometheus plug-in through the adapter
     (`nixl-telemetry-adapters overlay`, NIXL_TELEMETRY_EXPORTER=nixl_telemetry_prometheus).

In b, c and d the endpoint is scraped every second with urllib while the job runs. For
each run: transfers per second of the loop, CPU time (utime + stime from /proc) of the
job and of the sidecar between the start of the loop and the final scrape, split per
thread name, the values served (initiator's tx bytes, tx requests, transfer-time count)
and the events lost (transfers the final scrape is missing, plus any drop counter served).

Added CPU of a mode = (job + sidecar CPU) minus the job's CPU in mode a of the same
round, per million transfers. The summary gives, per mode, medians and spreads (min..max)
of the added CPU and of the throughput ratio to a, and the ratios c/b and d/b per round.

With --instructions, each mode runs once with `--transfers` and once with twice as many,
under callgrind instead (CPU time on a shared machine varies more than the telemetry
costs): the telemetry's instructions in an idle window and in the loop window (scrapes at
fixed points of the loop, not every second, since valgrind slows the job), counted by
function and thread (`Bench.count`, scripts/callgrind_costs.py), give per mode the
instructions per transfer, per scrape and per idle second, and the ratios c/b and d/b.

The `job` subcommand is the job itself (run with the NIXL release's Python).
"""

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

RELEASE = "1.5.1"
MODES = ("a", "b", "c", "d")
MODE_NAMES = {
    "a": "telemetry off",
    "b": "NIXL's Prometheus plug-in in the job",
    "c": "NIXL's ring + our sidecar (our Prometheus plug-in)",
    "d": "our Prometheus plug-in in the job via the adapter",
}
# The same for every mode that records: room for a whole 100 ms flush interval of events.
BUFFER_SIZE = "65536"
SCRAPE_PERIOD = 1.0
# Seconds every mode waits after the loop before the final scrape and CPU sample.
SETTLE = 1.5
CLK_TCK = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- the job (NIXL's Python)

def end_job(mode, proc, log, timeout):
    """Asks the job to exit and fails unless it exits 0 within `timeout` s."""
    proc.stdin.write("exit\n")
    proc.stdin.flush()
    rc = proc.wait(timeout=timeout)
    if rc != 0:
        raise RuntimeError(f"mode {mode}: the job exited {rc} (log {log.name})")


def clean_up(proc, sidecar, log, sidecar_timeout):
    """Kills a job still running, stops the sidecar (SIGTERM), closes the log."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    if sidecar:
        sidecar.send_signal(signal.SIGTERM)
        sidecar.wait(timeout=sidecar_timeout)
    log.close()


def job(args):
    """Sets up two agents, waits for `go` on stdin, runs the loop, reports, waits for `exit`."""
    import numpy as np
    from nixl_cu12 import nixl_agent, nixl_agent_config
    from nixl_workload import transfer

    initiator = nixl_agent("initiator", nixl_agent_config(backends=["UCX"]))
    target = nixl_agent("target", nixl_agent_config(backends=["UCX"]))
    region = max(args.size, 4096)
    src = np.arange(region, dtype=np.uint8)
    dst = np.zeros(region, dtype=np.uint8)
    src_reg = initiator.get_reg_descs([(src.ctypes.data, region, 0, "")], "DRAM")
    dst_reg = target.get_reg_descs([(dst.ctypes.data, region, 0, "")], "DRAM")
    initiator.register_memory(src_reg)
    target.register_memory(dst_reg)
    initiator.add_remote_agent(target.get_agent_metadata())
    local = initiator.get_xfer_descs([(src.ctypes.data, args.size, 0)], "DRAM")
    remote = initiator.get_xfer_descs([(dst.ctypes.data, args.size, 0)], "DRAM")
    transfer(initiator, "WRITE", local, remote, "target")  # warm-up, outside the timing

    print("READY", flush=True)
    if sys.stdin.readline().strip() != "go":
        return 1
    # --ticks K: a TICK line every transfers/K transfers, on which the driver scrapes.
    every = max(1, args.transfers // args.ticks) if args.ticks else 0
    started = time.perf_counter()
    for i in range(1, args.transfers + 1):
        transfer(initiator, "WRITE", local, remote, "target")
        if every and i % every == 0 and i // every <= args.ticks:
            print("TICK", flush=True)
    seconds = time.perf_counter() - started
    if not (dst[: args.size] == src[: args.size]).all():
        raise RuntimeError("WRITE did not move the data")
    print("LOOP " + json.dumps({"transfers": args.transfers, "seconds": seconds}), flush=True)
    if sys.stdin.readline().strip() != "exit":
        return 1
    initiator.remove_remote_agent("target")
    initiator.deregister_memory(src_reg)
    target.deregister_memory(dst_reg)
    return 0


# ---------------------------------------------------------------- measuring

def thread_times(pid):
    """({thread name: CPU seconds of the live threads}, CPU seconds of the whole process)."""
    per = {}
    task = f"/proc/{pid}/task"
    for tid in os.listdir(task):
        try:
            with open(f"{task}/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # the thread ended between listdir and open
        name = stat[stat.index("(") + 1: stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        cpu = (int(fields[11]) + int(fields[12])) / CLK_TCK
        per[(tid, name)] = cpu
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    fields = stat[stat.rindex(")") + 2:].split()
    return per, (int(fields[11]) + int(fields[12])) / CLK_TCK


def thread_delta(before, after):
    """CPU per thread name between two samples (threads born in between count from 0)."""
    out = {}
    for key, cpu in after[0].items():
        name = normal_thread_name(key[1])
        out[name] = out.get(name, 0.0) + cpu - before[0].get(key, 0.0)
    out["(total, ended threads included)"] = after[1] - before[1]
    return out


def normal_thread_name(name):
    """Thread names with their numbers folded (civetweb-worker-3 -> civetweb-worker-N)."""
    stripped = name.rstrip("0123456789")
    return stripped + "N" if stripped != name else name


class Scraper(threading.Thread):
    """Fetches the endpoint every second until stopped; keeps the last text."""

    def __init__(self, url):
        super().__init__(daemon=True)
        self.url, self.stopping = url, threading.Event()
        self.ok = self.failed = 0
        self.last = ""

    def fetch(self):
        try:
            with urllib.request.urlopen(self.url, timeout=5) as r:
                self.last = r.read().decode("utf-8")
            self.ok += 1
            return self.last
        except OSError:
            self.failed += 1
            return None

    def run(self):
        while not self.stopping.wait(SCRAPE_PERIOD):
            self.fetch()


def served(text):
    """The initiator's values that the job implies, and any drop counters, from one scrape."""
    import nixl_matrix
    families = nixl_matrix.parse_exposition(text)
    out = {}
    wanted = {"agent_tx_bytes_total": "tx_bytes", "agent_tx_requests_num_total": "tx_requests",
              "agent_xfer_time_us_count": "xfer_time_count",
              "agent_memory_registered_total": "memory_registered"}
    for fam in families.values():
        for (name, labels), value in fam["samples"].items():
            labels = dict(labels)
            if name in wanted and labels.get("agent_name") == "initiator":
                out[wanted[name]] = value
            elif "dropped" in name or "lost" in name:
                out[name] = out.get(name, 0) + value
    return out


# ---------------------------------------------------------------- one run

def protocol_line(proc, log, ticks=False):
    """The job's next READY or LOOP line (or TICK when `ticks`); NIXL's own log lines on
    stdout go to the log."""
    wanted = ("READY", "LOOP ", "TICK") if ticks else ("READY", "LOOP ")
    while True:
        line = proc.stdout.readline()
        if not line or line.startswith(wanted):
            return line
        log.write(line)


class Bench:
    def __init__(self, a):
        import nixl_adapters_check
        self.a = a
        self.work = tempfile.mkdtemp(prefix="bench-vs-nixl-")
        self.python = nixl_adapters_check.nixl_python(RELEASE)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("NIXL_", "OTEL_"))}
        self.env["PYTHONPATH"] = HERE
        self.free_port = nixl_adapters_check.free_port
        checks = nixl_adapters_check.AdapterChecks(os.path.dirname(HERE), a.releases_sh, a.bin_dir,
                                                   self.env, self.work)
        self.nixl_plugins = os.path.join(checks.libdir(RELEASE), "plugins")
        proc = subprocess.run([checks.tool, "stage", checks.staged, "prometheus"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"nixl-telemetry-adapters stage: {proc.stderr.strip()}")
        self.overlay, self.generation = checks.make_overlay(RELEASE, "bench-vs-nixl")

    def close(self):
        shutil.rmtree(self.overlay, ignore_errors=True)
        shutil.rmtree(self.work, ignore_errors=True)

    def mode_env(self, mode, port, rings):
        env = dict(self.env)
        if mode == "a":
            return env
        env.update(NIXL_TELEMETRY_ENABLE="y", NIXL_TELEMETRY_BUFFER_SIZE=BUFFER_SIZE)
        if mode == "b":
            env.update(NIXL_TELEMETRY_EXPORTER="prometheus",
                       NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR=self.nixl_plugins,
                       NIXL_TELEMETRY_PROMETHEUS_PORT=str(port), NIXL_TELEMETRY_PROMETHEUS_LOCAL="y")
        elif mode == "c":
            env.update(NIXL_TELEMETRY_DIR=rings)
        else:
            env.update(NIXL_TELEMETRY_EXPORTER="nixl_telemetry_prometheus",
                       NIXL_PLUGIN_DIR=self.overlay, NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR=self.a.bin_dir,
                       NIXL_TELEMETRY_PROMETHEUS_PORT=str(port), NIXL_TELEMETRY_PROMETHEUS_LOCAL="y")
        return env

    def run(self, mode):
        port = self.free_port()
        rings = tempfile.mkdtemp(prefix="rings-", dir=self.work)
        log = open(os.path.join(self.work, f"job-{mode}.log"), "w")
        sidecar = None
        if mode == "c":
            sidecar = subprocess.Popen(
                [os.path.join(self.a.bin_dir, "nixl-telemetry"), "export", "--dir", rings,
                 "--exporter", "prometheus", "--plugin-dir", self.a.bin_dir, "--output-path",
                 f"127.0.0.1:{port}", "--grace", "600", "--quiet"],
                env=self.env, stdout=subprocess.DEVNULL, stderr=log)
        proc = subprocess.Popen([self.python, os.path.abspath(__file__), "job", "--transfers",
                                 str(self.a.transfers), "--size", str(self.a.size)],
                                env=self.mode_env(mode, port, rings), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=log, text=True)
        scraper = Scraper(f"http://127.0.0.1:{port}/metrics") if mode != "a" else None
        try:
            line = protocol_line(proc, log)
            if line.strip() != "READY":
                raise RuntimeError(f"mode {mode}: the job did not start: {line!r} (log {log.name})")
            before = thread_times(proc.pid)
            side_before = thread_times(sidecar.pid) if sidecar else None
            if scraper:
                scraper.start()
            proc.stdin.write("go\n")
            proc.stdin.flush()
            line = protocol_line(proc, log)
            if not line.startswith("LOOP "):
                raise RuntimeError(f"mode {mode}: the loop failed: {line!r} (log {log.name})")
            loop = json.loads(line[5:])
            # Every mode waits the same: NIXL's flush interval and the exporters catch up.
            time.sleep(SETTLE)
            values, scrapes, failed, late = {}, 0, 0, False
            if scraper:
                scraper.stopping.set()
                scraper.join()
                text = scraper.fetch()
                values = served(text) if text else {}
            after = thread_times(proc.pid)
            side_after = thread_times(sidecar.pid) if sidecar else None
            if scraper:
                # Not all served yet: late or lost? Ask again for at most 5 s (not timed).
                deadline = time.monotonic() + 5
                while values.get("tx_requests", 0) < self.a.transfers + 1 and time.monotonic() < deadline:
                    late = True
                    time.sleep(0.2)
                    text = scraper.fetch()
                    values = served(text) if text else {}
                scrapes, failed = scraper.ok, scraper.failed
            end_job(mode, proc, log, timeout=60)
        finally:
            clean_up(proc, sidecar, log, sidecar_timeout=30)
        job_threads = thread_delta(before, after)
        side_threads = thread_delta(side_before, side_after) if sidecar else {}
        result = {
            "mode": mode, "transfers": loop["transfers"], "loop_seconds": loop["seconds"],
            "transfers_per_s": loop["transfers"] / loop["seconds"],
            "job_cpu_s": job_threads["(total, ended threads included)"],
            "sidecar_cpu_s": side_threads.get("(total, ended threads included)", 0.0),
            "job_threads": job_threads, "sidecar_threads": side_threads,
            "scrapes": scrapes, "scrape_failures": failed, "served": values,
            "served_late": late,
        }
        if mode != "a":
            # The warm-up transfer is served too.
            want = self.a.transfers + 1
            got = values.get("tx_requests", 0)
            dropped = sum(v for k, v in values.items() if "dropped" in k or "lost" in k)
            result["lost_events"] = int(max(0, want - got) + dropped)
            result["served_complete"] = (got == want and values.get("tx_bytes") == want * self.a.size
                                         and values.get("xfer_time_count") == want)
        return result


    # ------------------------------------------------------------ --instructions

    def count(self, mode, transfers):
        """One run of `mode` under callgrind: the instructions of the telemetry, counted from
        when the job is set up until the final scrape (callgrind_control -z / -d)."""
        import callgrind_costs
        port = self.free_port()
        rings = tempfile.mkdtemp(prefix="rings-", dir=self.work)
        out = tempfile.mkdtemp(prefix=f"callgrind-{mode}-{transfers}-", dir=self.work)
        log = open(os.path.join(self.work, f"job-{mode}-{transfers}.log"), "w")
        sidecar = None
        if mode == "c":
            sidecar = subprocess.Popen(
                callgrind_command(os.path.join(out, "sidecar"), threads=False)
                + [os.path.join(self.a.bin_dir, "nixl-telemetry"), "export", "--dir", rings,
                   "--exporter", "prometheus", "--plugin-dir", self.a.bin_dir, "--output-path",
                   f"127.0.0.1:{port}", "--grace", "600", "--quiet"],
                env=self.env, stdout=subprocess.DEVNULL, stderr=log)
        proc = subprocess.Popen(
            callgrind_command(os.path.join(out, "job"), threads=True)
            + [self.python, os.path.abspath(__file__), "job", "--transfers", str(transfers),
               "--size", str(self.a.size), "--ticks", str(self.a.scrapes)],
            env=self.mode_env(mode, port, rings), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=log, text=True)
        scraper = Scraper(f"http://127.0.0.1:{port}/metrics") if mode != "a" else None
        pids = [proc.pid] + ([sidecar.pid] if sidecar else [])
        try:
            line = protocol_line(proc, log)
            if line.strip() != "READY":
                raise RuntimeError(f"mode {mode}: the job did not start: {line!r} (log {log.name})")
            if scraper:
                # The endpoint is up (the sidecar starts slowly under valgrind); not counted.
                deadline = time.monotonic() + 120
                while scraper.fetch() is None and time.monotonic() < deadline:
                    time.sleep(0.5)
            # The background: an idle window with the job set up and no transfer, no scrape.
            for pid in pids:
                callgrind_control("-z", pid)
            time.sleep(IDLE_WINDOW)
            for pid in pids:
                callgrind_control("-d", pid)
            for pid in pids:
                callgrind_control("-z", pid)
            zeroed = time.monotonic()
            scrapes = 0
            proc.stdin.write("go\n")
            proc.stdin.flush()
            while True:
                line = protocol_line(proc, log, ticks=True)
                if line.strip() == "TICK":
                    if scraper:
                        scraper.fetch()
                        scrapes += 1
                    continue
                if not line.startswith("LOOP "):
                    raise RuntimeError(f"mode {mode}: the loop failed: {line!r} (log {log.name})")
                break
            loop = json.loads(line[5:])
            time.sleep(INSTRUCTIONS_SETTLE)
            values = {}
            if scraper:
                text = scraper.fetch()
                scrapes += 1
                values = served(text) if text else {}
            complete_at_dump = values.get("tx_requests", 0) == transfers + 1
            for pid in pids:
                callgrind_control("-d", pid)
            window = time.monotonic() - zeroed
            if scraper:
                # Late or lost? Ask again (after the dump: not counted).
                deadline = time.monotonic() + 60
                while values.get("tx_requests", 0) < transfers + 1 and time.monotonic() < deadline:
                    time.sleep(1)
                    text = scraper.fetch()
                    values = served(text) if text else {}
            end_job(mode, proc, log, timeout=600)
        finally:
            clean_up(proc, sidecar, log, sidecar_timeout=120)
        def threads(prefix):
            files = [os.path.join(out, f) for f in sorted(os.listdir(out)) if f.startswith(prefix)]
            if not files:
                raise RuntimeError(f"mode {mode}: callgrind wrote no {prefix}* in {out}")
            return [thread_costs(callgrind_costs.Profile(f)) for f in files]

        result = {
            "mode": mode, "transfers": transfers, "loop_seconds": loop["seconds"],
            "idle_seconds": IDLE_WINDOW, "window_seconds": window,
            "idle_job": threads("job.1-"), "loop_job": threads("job.2-"),
            "idle_sidecar": threads("sidecar.1") if sidecar else [],
            "loop_sidecar": threads("sidecar.2") if sidecar else [],
            "scrapes": scrapes, "served": values, "complete_at_dump": complete_at_dump,
        }
        if mode != "a":
            want = transfers + 1
            got = values.get("tx_requests", 0)
            dropped = sum(v for k, v in values.items() if "dropped" in k or "lost" in k)
            result["lost_events"] = int(max(0, want - got) + dropped)
            result["served_complete"] = (got == want and values.get("tx_bytes") == want * self.a.size
                                         and values.get("xfer_time_count") == want)
        return result


# Objects whose every function is telemetry: the exporter plug-ins (NIXL's, our adapters,
# ours) and the prometheus-cpp libraries NIXL's plug-in brings.
TELEMETRY_OBJECT = re.compile(r"libtelemetry_exporter_|libnixl_telemetry_|nixl_cu12\.libs/lib(core|pull)-")
# Seconds every mode waits after the loop before the final scrape and the dump.
INSTRUCTIONS_SETTLE = 3.0
# Seconds of the idle window counted before the loop (the telemetry's background cost).
IDLE_WINDOW = 5.0


def thread_costs(prof):
    """One thread's figures: its body, its instructions, and its calls into telemetry."""
    return {"thread": prof.thread, "root": short_name(prof.root) if prof.root else "main",
            "root_is_telemetry": bool(prof.root and telemetry_function(*prof.root)),
            "total": prof.total,
            "entered": {short_name(k): v for k, v in prof.entered(telemetry_function).items()}}


def attribute(threads, base_roots):
    """({name: instructions}, total) of telemetry in a job's threads: every instruction of a
    thread whose body is telemetry or that mode a does not have (base_roots: the bodies of
    a's threads), and the calls into telemetry on the other threads."""
    where = {}
    for t in threads:
        if t["root_is_telemetry"] or t["root"] not in base_roots:
            where[f"thread {t['root']}"] = where.get(f"thread {t['root']}", 0) + t["total"]
        else:
            for name, cost in t["entered"].items():
                where[name] = where.get(name, 0) + cost
    return where, sum(where.values())


def telemetry_function(obj, fn):
    """NIXL's telemetry (every function naming a nixlTelemetry class: recording, staging,
    flushing, the ring and buffer exporters, the per-request statistics) or a telemetry
    object's function."""
    return "nixlTelemetry" in fn or bool(TELEMETRY_OBJECT.search(obj or ""))


def short_name(key):
    obj, fn = key
    name = fn.split("(")[0] if not fn.startswith("0x") else fn
    return f"{name} [{os.path.basename(obj or '?')}]"


def callgrind_command(out_file, threads):
    # --fair-sched=yes: threads take valgrind's one lock in turn, so a loop that polls a
    # transfer does not starve UCX's progress thread (scripts/nixl_adapters_check.py).
    return ["valgrind", "--tool=callgrind", "--fair-sched=yes",
            f"--separate-threads={'yes' if threads else 'no'}",
            "--compress-strings=no", "--compress-pos=no", "--vgdb=yes",
            f"--callgrind-out-file={out_file}"]


def callgrind_control(flag, pid):
    proc = subprocess.run(["callgrind_control", flag, str(pid)], capture_output=True, text=True,
                          timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"callgrind_control {flag} {pid}: {proc.stdout.strip()} {proc.stderr.strip()}")


# ---------------------------------------------------------------- summary

def spread(values):
    values = [v for v in values if v is not None]
    if not values:
        return {"median": None, "min": None, "max": None, "n": 0}
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "n": len(values)}


def summarise(rounds):
    modes = {}
    per_round = []
    for runs in rounds:
        base = runs["a"]
        entry = {}
        for mode in MODES[1:]:
            r = runs[mode]
            added = r["job_cpu_s"] + r["sidecar_cpu_s"] - base["job_cpu_s"] * r["transfers"] / base["transfers"]
            entry[mode] = {"added_cpu_s_per_million": added / r["transfers"] * 1e6,
                           "throughput_ratio": r["transfers_per_s"] / base["transfers_per_s"]}
        for other in ("c", "d"):
            b = entry["b"]["added_cpu_s_per_million"]
            entry[f"{other}/b"] = entry[other]["added_cpu_s_per_million"] / b if b > 0 else None
        per_round.append(entry)
    for mode in MODES:
        runs = [r[mode] for r in rounds]
        modes[mode] = {
            "name": MODE_NAMES[mode],
            "transfers_per_s": spread([r["transfers_per_s"] for r in runs]),
            "job_cpu_s_per_million": spread([r["job_cpu_s"] / r["transfers"] * 1e6 for r in runs]),
            "sidecar_cpu_s_per_million": spread([r["sidecar_cpu_s"] / r["transfers"] * 1e6 for r in runs]),
            "threads_cpu_s_per_million": thread_medians(runs, "job_threads"),
            "sidecar_threads_cpu_s_per_million": thread_medians(runs, "sidecar_threads"),
        }
        if mode != "a":
            modes[mode]["added_cpu_s_per_million"] = spread(
                [e[mode]["added_cpu_s_per_million"] for e in per_round])
            modes[mode]["throughput_ratio"] = spread([e[mode]["throughput_ratio"] for e in per_round])
            modes[mode]["lost_events"] = sum(r["lost_events"] for r in runs)
            modes[mode]["served_complete"] = all(r["served_complete"] for r in runs)
            modes[mode]["served_last"] = runs[-1]["served"]
            modes[mode]["scrapes"] = sum(r["scrapes"] for r in runs)
            modes[mode]["scrape_failures"] = sum(r["scrape_failures"] for r in runs)
    c_b = spread([e["c/b"] for e in per_round])
    d_b = spread([e["d/b"] for e in per_round])
    same = all(r["b"]["served"].get(k) == r["c"]["served"].get(k) == r["d"]["served"].get(k)
               for r in rounds for k in ("tx_bytes", "tx_requests", "xfer_time_count"))
    # The added CPU of a mode is resolved only when its spread over the rounds excludes 0;
    # otherwise the telemetry costs less than the run-to-run noise of this machine.
    resolved = {m: modes[m]["added_cpu_s_per_million"]["min"] > 0
                or modes[m]["added_cpu_s_per_million"]["max"] < 0 for m in MODES[1:]}
    return {
        "ring_sidecar_vs_nixl_added_cpu": c_b,
        "adapter_vs_nixl_added_cpu": d_b,
        "lost_events": {m: modes[m]["lost_events"] for m in MODES[1:]},
        "values_equal_b_c_d": same,
        "added_cpu_resolved": resolved,
        "modes": modes,
        "rounds": per_round,
    }


def thread_medians(runs, key):
    names = sorted({n for r in runs for n in r[key]})
    return {n: statistics.median(r[key].get(n, 0.0) / r["transfers"] * 1e6 for r in runs) for n in names}


def fmt(v, digits=2):
    return "n/a" if v is None else f"{v:.{digits}f}"


def fmt_spread(s, digits=2):
    return f"{fmt(s['median'], digits)} ({fmt(s['min'], digits)}..{fmt(s['max'], digits)})"


def print_text(summary, a):
    out = sys.stdout
    m = summary["modes"]
    print(f"NIXL {RELEASE}, UCX over DRAM, {a.transfers} WRITEs of {a.size} B per run, "
          f"{a.rounds} rounds of a b c d (rotated), scrape every {SCRAPE_PERIOD:g} s; "
          f"median (min..max)", file=out)
    print(f"{'mode':<4} {'transfers/s':>24} {'job CPU s/M':>22} {'sidecar CPU s/M':>22} "
          f"{'added CPU s/M over a':>24} {'throughput / a':>20} {'lost':>5} served", file=out)
    for mode in MODES:
        s = m[mode]
        added = fmt_spread(s["added_cpu_s_per_million"]) if mode != "a" else "-"
        ratio = fmt_spread(s["throughput_ratio"], 3) if mode != "a" else "-"
        lost = str(s["lost_events"]) if mode != "a" else "-"
        ok = ("complete" if s["served_complete"] else "INCOMPLETE") if mode != "a" else "-"
        print(f"{mode:<4} {fmt_spread(s['transfers_per_s'], 0):>24} "
              f"{fmt_spread(s['job_cpu_s_per_million']):>22} "
              f"{fmt_spread(s['sidecar_cpu_s_per_million']):>22} {added:>24} {ratio:>20} "
              f"{lost:>5} {ok}", file=out)
    print(f"added CPU, c/b (ring + sidecar vs NIXL's plug-in): "
          f"{fmt_spread(summary['ring_sidecar_vs_nixl_added_cpu'])}", file=out)
    print(f"added CPU, d/b (adapter vs NIXL's plug-in):        "
          f"{fmt_spread(summary['adapter_vs_nixl_added_cpu'])}", file=out)
    unresolved = [m for m, ok in summary["added_cpu_resolved"].items() if not ok]
    if unresolved:
        print(f"added CPU of {', '.join(unresolved)}: its spread over the rounds includes 0, so it is "
              f"below this machine's run-to-run noise (a's own job CPU: "
              f"{fmt_spread(m['a']['job_cpu_s_per_million'])} s/M); c/b and d/b are then ratios of "
              f"noise (rounds where b added <= 0 are left out)", file=out)
    print(f"values served equal across b, c, d: {summary['values_equal_b_c_d']}; "
          f"last served by b: {m['b']['served_last']}", file=out)
    print("CPU per thread name, s per million transfers (median):", file=out)
    for mode in MODES:
        for key, who in (("threads_cpu_s_per_million", "job"),
                         ("sidecar_threads_cpu_s_per_million", "sidecar")):
            items = [(n, v) for n, v in m[mode][key].items() if abs(v) >= 0.005]
            if items:
                print(f"  {mode} {who}: " + ", ".join(f"{n} {v:.2f}" for n, v in
                                                      sorted(items, key=lambda x: -x[1])), file=out)


def instruction_figures(r, base_roots):
    """One run's telemetry instructions: in the idle window and in the loop window."""
    idle_where, idle_job = attribute(r["idle_job"], base_roots)
    loop_where, loop_job = attribute(r["loop_job"], base_roots)
    idle_side = sum(t["total"] for t in r["idle_sidecar"])
    loop_side = sum(t["total"] for t in r["loop_sidecar"])
    idle_rate = (idle_job + idle_side) / r["idle_seconds"]
    loop = loop_job + loop_side
    return {"idle_per_s": idle_rate, "loop": loop, "loop_job": loop_job, "loop_sidecar": loop_side,
            "net": loop - idle_rate * r["window_seconds"], "where": loop_where,
            "idle_where": idle_where, "idle_sidecar": idle_side}


def summarise_instructions(runs, transfers, native_rate):
    """runs[mode][n], n = transfers and 2 x transfers. Per mode: the background (instructions
    a second of the idle window), the cost per transfer (the difference of the two loops,
    the background of each loop window taken out, so the equal scrapes cancel), the cost
    per scrape (what is left of the smaller loop, over its scrapes), and these put together
    for a job posting `native_rate` transfers a second, scraped once a second."""
    small, big = transfers, 2 * transfers
    modes = {}
    for mode in MODES:
        f = {n: instruction_figures(runs[mode][n], {t["root"] for t in runs["a"][n]["idle_job"]
                                                    + runs["a"][n]["loop_job"]}) for n in (small, big)}
        per_transfer = (f[big]["net"] - f[small]["net"]) / (big - small)
        scrapes = runs[mode][small]["scrapes"]
        per_scrape = (f[small]["net"] - small * per_transfer) / scrapes if scrapes else 0.0
        idle = (f[small]["idle_per_s"] + f[big]["idle_per_s"]) / 2
        m = {"name": MODE_NAMES[mode],
             "per_transfer": per_transfer, "per_scrape": per_scrape, "idle_per_s": idle,
             "per_transfer_at_native_rate": per_transfer + (idle + per_scrape) / native_rate,
             "loop_instructions": {n: f[n]["loop"] for n in f},
             "loop_sidecar_instructions": {n: f[n]["loop_sidecar"] for n in f},
             "net_instructions": {n: f[n]["net"] for n in f},
             "scaling_2x": f[big]["net"] / f[small]["net"] if f[small]["net"] else None,
             "window_seconds": {n: runs[mode][n]["window_seconds"] for n in f},
             "scrapes_per_run": scrapes,
             "where_per_transfer": {k: v / big for k, v in
                                    sorted(f[big]["where"].items(), key=lambda x: -x[1])},
             "idle_where_per_s": {k: v / IDLE_WINDOW for k, v in
                                  sorted(f[big]["idle_where"].items(), key=lambda x: -x[1])},
             "sidecar_per_transfer": f[big]["loop_sidecar"] / big}
        if mode != "a":
            m["lost_events"] = sum(runs[mode][n]["lost_events"] for n in f)
            m["served_complete"] = all(runs[mode][n]["served_complete"] for n in f)
            m["complete_at_dump"] = all(runs[mode][n]["complete_at_dump"] for n in f)
            m["served_last"] = runs[mode][big]["served"]
        modes[mode] = m

    def ratio(other, key):
        b = modes["b"][key]
        return modes[other][key] / b if b else None

    ratios = {}
    rates = (native_rate / 10, native_rate, native_rate * 10)
    for other, key in (("c", "ring_sidecar_vs_nixl_added_instructions"),
                       ("d", "adapter_vs_nixl_added_instructions")):
        at_rates = [(modes[other]["per_transfer"] + (modes[other]["idle_per_s"] + modes[other]["per_scrape"]) / r)
                    / (modes["b"]["per_transfer"] + (modes["b"]["idle_per_s"] + modes["b"]["per_scrape"]) / r)
                    for r in rates]
        ratios[key] = {"median": at_rates[1], "min": min(at_rates), "max": max(at_rates), "n": 3,
                       "at_transfers_per_s": list(rates), "scrapes_per_s": 1,
                       "per_transfer": ratio(other, "per_transfer"),
                       "per_scrape": ratio(other, "per_scrape"),
                       "idle_per_s": ratio(other, "idle_per_s")}
    same = all(runs["b"][n]["served"].get(k) == runs["c"][n]["served"].get(k)
               == runs["d"][n]["served"].get(k)
               for n in (small, big) for k in ("tx_bytes", "tx_requests", "xfer_time_count"))
    measured = ("instructions of the telemetry (callgrind) at the native rate given, one scrape "
                "a second; min..max over a tenth of it and ten times it")
    return {
        "ring_sidecar_vs_nixl_added_cpu": dict(ratios["ring_sidecar_vs_nixl_added_instructions"],
                                               measured_by=measured),
        "adapter_vs_nixl_added_cpu": dict(ratios["adapter_vs_nixl_added_instructions"],
                                          measured_by=measured),
        **ratios,
        "lost_events": {m: modes[m]["lost_events"] for m in MODES[1:]},
        "values_equal_b_c_d": same,
        "modes": modes,
    }


def print_instructions(summary, a):
    out = sys.stdout
    m = summary["modes"]
    print(f"NIXL {RELEASE}, UCX over DRAM, {a.transfers} and {2 * a.transfers} WRITEs of {a.size} B "
          f"per run under callgrind, {a.scrapes + 1} scrapes a run in b, c, d; instructions of the "
          f"telemetry", file=out)
    print(f"{'mode':<4} {'per transfer':>12} {'per scrape':>12} {'idle per s':>12} "
          f"{'at ' + format(a.native_rate, ',') + '/s':>14} {'x2 scaling':>10} {'lost':>5} served",
          file=out)
    for mode in MODES:
        s = m[mode]
        print(f"{mode:<4} {s['per_transfer']:>12,.0f} {s['per_scrape']:>12,.0f} "
              f"{s['idle_per_s']:>12,.0f} {s['per_transfer_at_native_rate']:>14,.0f} "
              f"{fmt(s['scaling_2x'], 3):>10} {str(s.get('lost_events', '-')):>5} "
              f"{('complete' if s['served_complete'] else 'INCOMPLETE') if mode != 'a' else '-'}"
              f"{'' if mode == 'a' or s['complete_at_dump'] else ' (late: after the dump)'}",
              file=out)
    for key, label in (("ring_sidecar_vs_nixl_added_instructions", "c/b (ring + sidecar vs NIXL's plug-in)"),
                       ("adapter_vs_nixl_added_instructions", "d/b (adapter vs NIXL's plug-in)       ")):
        r = summary[key]
        print(f"{label}: {r['median']:.3f} at {a.native_rate:,} transfers/s and a scrape a second "
              f"({r['min']:.3f}..{r['max']:.3f} from a tenth to ten times that rate); per transfer "
              f"{fmt(r['per_transfer'], 3)}, per scrape {fmt(r['per_scrape'], 3)}, idle "
              f"{fmt(r['idle_per_s'], 3)}", file=out)
    print(f"values served equal across b, c, d: {summary['values_equal_b_c_d']}", file=out)
    print(f"where, instructions per transfer in the {2 * a.transfers}-transfer loop window "
          f"(scrapes and background included):", file=out)
    for mode in MODES:
        s = m[mode]
        items = [(k, v) for k, v in s["where_per_transfer"].items() if v >= 0.5][:8]
        if s["sidecar_per_transfer"]:
            items.append(("the sidecar (all its threads)", s["sidecar_per_transfer"]))
        if items:
            print(f"  {mode}: " + "; ".join(f"{k} {v:,.0f}" for k, v in items), file=out)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "job":
        p = argparse.ArgumentParser(prog="bench_vs_nixl.py job")
        p.add_argument("--transfers", type=int, required=True)
        p.add_argument("--size", type=int, required=True)
        p.add_argument("--ticks", type=int, default=0)
        return job(p.parse_args(sys.argv[2:]))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin-dir", required=True,
                   help="where nixl-telemetry, nixl-telemetry-adapters and our plug-ins are")
    p.add_argument("--releases-sh", default=os.path.join(HERE, "nixl-releases.sh"))
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--transfers", type=int, default=200000)
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--raw", help="write every run's figures to this JSON file")
    p.add_argument("--instructions", action="store_true",
                   help="count the telemetry's instructions under callgrind instead of CPU time: "
                        "each mode once at --transfers and once at twice as many")
    p.add_argument("--scrapes", type=int, default=10,
                   help="with --instructions: scrapes during the loop (one every transfers/N), "
                        "plus the final one")
    p.add_argument("--native-rate", type=int, default=30000,
                   help="with --instructions: transfers a second of the job outside valgrind, to put "
                        "the costs per transfer, per scrape (one a second) and idle together")
    a = p.parse_args()
    if a.rounds < 1 or a.transfers < 1 or a.size < 1:
        p.error("--rounds, --transfers and --size must be >= 1")
    bench = Bench(a)
    if a.instructions:
        return main_instructions(a, bench)
    rounds = []
    try:
        for i in range(a.rounds):
            order = MODES[i % 4:] + MODES[: i % 4]
            runs = {}
            for mode in order:
                runs[mode] = bench.run(mode)
                r = runs[mode]
                print(f"round {i + 1}/{a.rounds} {mode}: {r['transfers_per_s']:.0f} transfers/s, "
                      f"job {r['job_cpu_s']:.2f} s, sidecar {r['sidecar_cpu_s']:.2f} s CPU, "
                      f"lost {r.get('lost_events', '-')}", file=sys.stderr)
            rounds.append(runs)
    finally:
        bench.close()
    summary = summarise(rounds)
    summary["setup"] = {"release": RELEASE, "transfers": a.transfers, "size": a.size,
                        "rounds": a.rounds, "adapter_generation": bench.generation,
                        "buffer_size": int(BUFFER_SIZE), "scrape_period_s": SCRAPE_PERIOD,
                        "cpus": os.cpu_count(), "load_average": os.getloadavg()}
    if a.raw:
        with open(a.raw, "w") as f:
            json.dump(rounds, f, indent=1)
    if a.json:
        json.dump(summary, sys.stdout, indent=1)
        print()
    else:
        print_text(summary, a)
    return 0


def main_instructions(a, bench):
    runs = {m: {} for m in MODES}
    try:
        for n in (a.transfers, 2 * a.transfers):
            for mode in MODES:
                r = runs[mode][n] = bench.count(mode, n)
                print(f"{mode} x {n}: loop {r['loop_seconds']:.1f} s, {r['scrapes']} scrapes, "
                      f"whole job {sum(t['total'] for t in r['loop_job']):,} instructions in the "
                      f"loop window, lost {r.get('lost_events', '-')}", file=sys.stderr)
    finally:
        bench.close()
    if a.raw:
        with open(a.raw, "w") as f:
            json.dump(runs, f, indent=1)
    summary = summarise_instructions(runs, a.transfers, a.native_rate)
    summary["setup"] = {"release": RELEASE, "transfers": [a.transfers, 2 * a.transfers],
                        "size": a.size, "scrapes_per_run": a.scrapes + 1,
                        "adapter_generation": bench.generation, "buffer_size": int(BUFFER_SIZE),
                        "settle_s": INSTRUCTIONS_SETTLE, "idle_window_s": IDLE_WINDOW,
                        "native_rate": a.native_rate, "cpus": os.cpu_count(),
                        "load_average": os.getloadavg()}
    if a.json:
        json.dump(summary, sys.stdout, indent=1)
        print()
    else:
        print_instructions(summary, a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
