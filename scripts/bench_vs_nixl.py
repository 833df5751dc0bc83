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

The `job` subcommand is the job itself (run with the NIXL release's Python).
"""

import argparse
import json
import os
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
    started = time.perf_counter()
    for _ in range(args.transfers):
        transfer(initiator, "WRITE", local, remote, "target")
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

def protocol_line(proc, log):
    """The job's next READY or LOOP line; NIXL's own log lines on stdout go to the log."""
    while True:
        line = proc.stdout.readline()
        if not line or line.startswith(("READY", "LOOP ")):
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
            proc.stdin.write("exit\n")
            proc.stdin.flush()
            rc = proc.wait(timeout=60)
            if rc != 0:
                raise RuntimeError(f"mode {mode}: the job exited {rc} (log {log.name})")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if sidecar:
                sidecar.send_signal(signal.SIGTERM)
                sidecar.wait(timeout=30)
            log.close()
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


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "job":
        p = argparse.ArgumentParser(prog="bench_vs_nixl.py job")
        p.add_argument("--transfers", type=int, required=True)
        p.add_argument("--size", type=int, required=True)
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
    a = p.parse_args()
    if a.rounds < 1 or a.transfers < 1 or a.size < 1:
        p.error("--rounds, --transfers and --size must be >= 1")
    bench = Bench(a)
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


if __name__ == "__main__":
    sys.exit(main())
