#!/usr/bin/env python3
"""The processor end to end beside TAO's own ``MetricProcessor`` loop, in one run.

    bench_vs_tao.py [--rounds N] [--seconds S] [--json]

Alternates, N rounds (default 5), between

* TAO 6.26.3's ``nvidia_tao_core.telemetry.processor.MetricProcessor.process``
  over the fixture corpus's records (already ``dict``s: TAO's loop is given its
  records parsed, which favours it), one processor and one dict kept across
  passes, for S seconds (default 2) of this process's CPU time; and
* ``cargo bench -p nixl-telemetry-processor --bench processor -- S "end to end"``:
  each line applied by ``MetricProcessor::process_line`` (its JSON read
  straight into the attributes), the four default builders, the metrics
  written as JSON once a pass (what ``nixl-telemetry process`` does), and its
  parse-only floor (``-- S "parse only"``) in the same round.

Each side's rate is records per second of CPU time (the machine may be shared:
wall time is printed too but the ratios use CPU time). Prints each round and
the median of the per-round ratios. Run it with the interpreter of
``bash scripts/lib.sh python-env python-venv`` (TAO installed ``--no-deps``).
"""

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
CORPUS = REPO / "tests" / "data" / "tao_processor" / "corpus.jsonl"
RATE = re.compile(r"^(?P<name>.+?):\s+(?P<wall>\d+) records/s wall,\s+(?P<cpu>\d+) records/s of CPU time")


def tao_rate(items, seconds):
    from nvidia_tao_core.telemetry.processor import MetricProcessor

    processor, metrics = MetricProcessor(), {}
    for record, now in items:  # warm: every key exists afterwards
        processor.process(metrics, record, {"now": now})
    passes = 0
    cpu0, wall0 = time.process_time(), time.perf_counter()
    while time.process_time() - cpu0 < seconds:
        for record, now in items:
            processor.process(metrics, record, {"now": now})
        passes += 1
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    n = passes * len(items)
    return {"cpu": n / cpu, "wall": n / wall}


def ours(seconds, which):
    out = subprocess.run(
        ["cargo", "bench", "-q", "-p", "nixl-telemetry-processor", "--bench", "processor",
         "--", str(seconds), which],
        cwd=REPO, check=True, capture_output=True, text=True,
    ).stdout
    rates = {}
    for line in out.splitlines():
        m = RATE.match(line)
        if m:
            rates[m["name"].strip()] = {"cpu": float(m["cpu"]), "wall": float(m["wall"])}
    if not rates:
        sys.exit(f"no rate in the bench's output:\n{out}")
    return rates


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    lines = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    items = [(line["record"], datetime.fromisoformat(line["now"])) for line in lines]
    ours(0.1, "end to end")  # build first, untimed
    rounds = []
    for r in range(args.rounds):
        tao = tao_rate(items, args.seconds)
        e2e = ours(args.seconds, "end to end")["end to end (default builders)"]
        floors = ours(args.seconds, "parse only")
        # The floor: the fastest parser into its own values (not into ours).
        others = {k: v for k, v in floors.items() if "ours" not in k and "Record::" not in k}
        fastest = max(v["cpu"] for v in others.values())
        row = {
            "tao_records_per_cpu_s": tao["cpu"],
            "ours_end_to_end_records_per_cpu_s": e2e["cpu"],
            "parse_only_ours_records_per_cpu_s": floors["parse only (ours)"]["cpu"],
            "parse_only_floor_records_per_cpu_s": fastest,
            "parse_only_record_records_per_cpu_s": floors["parse only (Record::parse)"]["cpu"],
            "parse_only_sonic_to_ours_records_per_cpu_s": floors["parse only (sonic-rs to ours)"]["cpu"],
            "parse_only_floor_parser": max(others, key=lambda k: others[k]["cpu"]),
            "end_to_end_vs_tao": e2e["cpu"] / tao["cpu"],
            "end_to_end_vs_parse_floor": fastest / e2e["cpu"],
        }
        rounds.append(row)
        if not args.json:
            print(f"round {r + 1}: TAO {tao['cpu']:,.0f} rec/s, ours end to end {e2e['cpu']:,.0f} rec/s "
                  f"({row['end_to_end_vs_tao']:.1f}x TAO), parse floor {fastest:,.0f} rec/s "
                  f"({row['parse_only_floor_parser']}; end to end is {row['end_to_end_vs_parse_floor']:.2f}x slower)",
                  flush=True)
    summary = {
        key: {"median": statistics.median(r[key] for r in rounds),
              "min": min(r[key] for r in rounds), "max": max(r[key] for r in rounds)}
        for key in ("end_to_end_vs_tao", "end_to_end_vs_parse_floor", "tao_records_per_cpu_s",
                    "ours_end_to_end_records_per_cpu_s", "parse_only_floor_records_per_cpu_s",
                    "parse_only_ours_records_per_cpu_s", "parse_only_record_records_per_cpu_s",
                    "parse_only_sonic_to_ours_records_per_cpu_s")
    }
    if args.json:
        print(json.dumps({"rounds": rounds, "summary": summary}, indent=2))
    else:
        for key, s in summary.items():
            print(f"{key}: median {s['median']:,.2f} (min {s['min']:,.2f}, max {s['max']:,.2f})")


if __name__ == "__main__":
    main()
