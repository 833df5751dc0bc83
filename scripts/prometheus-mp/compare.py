#!/usr/bin/env python3
"""Compares two Prometheus text expositions of the same multi-process workload:
NIXL's prometheus_mp plug-in's and ours.

    compare.py NIXL_SCRAPE OURS_SCRAPE

Series are matched by name and (agent_name, local_rank, le, status): pid and
agent_instance are labels of both, but their values differ between two runs
(other processes; our emit processes hold one agent each). Checked, and
printed as a table:

* every family NIXL exposes is ours too, with the same type (prometheus-cpp's
  own `exposer_*` families too, whose values are the servers' own and are not
  compared);
* every NIXL series has its counterpart, with exactly the same label names;
* no series of a shared family that NIXL lacks (the default bucket bounds are
  NIXL's);
* the same value, except where the value is a measured time (time sums, last
  times, and buckets below +Inf of the time histograms), where NIXL measures
  real transfers; the observation counts of those histograms must match.

Exits 1 on any other difference.
"""

import re
import sys

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
IGNORED_FAMILIES = ("exposer_",)
# Labels only ours may add to a shared family: none since NIXL parity.
OURS_ONLY_LABELS = set()
RUN_SPECIFIC_LABELS = {"pid", "agent_instance"}
TIMED = {
    "agent_xfer_time_total", "agent_xfer_post_time_total",
    "agent_xfer_time", "agent_xfer_post_time",
    "agent_xfer_time_us_sum", "agent_xfer_post_time_us_sum",
}
# Bucket bounds only ours may have: none since our defaults are NIXL 1.5.1's.
EXPECTED_EXTRA_BOUNDS = set()
TIME_HISTOGRAMS = ("agent_xfer_time_us_bucket", "agent_xfer_post_time_us_bucket")


def parse(path):
    types, samples = {}, {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split(" ", 3)
                types[name] = kind
                continue
            if not line or line.startswith("#"):
                continue
            m = SAMPLE.match(line)
            if not m:
                raise SystemExit(f"{path}: cannot parse {line!r}")
            name, labels, value = m.group(1), dict(LABEL.findall(m.group(2) or "")), m.group(3)
            if name.startswith(IGNORED_FAMILIES):
                continue
            key = (name,) + tuple(labels.get(k, "") for k in ("agent_name", "local_rank", "le", "status"))
            if key in samples:
                raise SystemExit(f"{path}: two series for {key}")
            samples[key] = (set(labels), float(value) if value not in ("Nan", "NaN") else value)
    return types, samples


def family_of(sample, types):
    """The family a sample belongs to, as its # TYPE line names it."""
    if sample in types:
        return sample
    for suffix in ("_bucket", "_sum", "_count"):
        base = sample[: -len(suffix)] if sample.endswith(suffix) else None
        if base and types.get(base) in ("histogram", "summary"):
            return base
    return None


def timed(key):
    name, le = key[0], key[3]
    return name in TIMED or (name in TIME_HISTOGRAMS and le != "+Inf")


def main():
    nixl_types, nixl = parse(sys.argv[1])
    our_types, ours = parse(sys.argv[2])
    problems, rows, explained = [], [], []
    # Every family NIXL declares, its HTTP library's exposer_* among them
    # (their samples are the server's own measurements: not compared).
    for family, kind in sorted(nixl_types.items()):
        if our_types.get(family) != kind:
            problems.append(f"family {family}: NIXL type {kind}, ours {our_types.get(family)}")
    extra = sorted(f for f in our_types if f not in nixl_types)
    same = timed_count = 0
    for key, (labels, value) in sorted(nixl.items()):
        if key not in ours:
            problems.append(f"missing series {key}")
            continue
        our_labels, our_value = ours[key]
        if labels != our_labels - OURS_ONLY_LABELS:
            problems.append(f"{key}: NIXL labels {sorted(labels)}, ours {sorted(our_labels)}")
        if timed(key):
            timed_count += 1
        elif value != our_value:
            problems.append(f"{key}: NIXL {value}, ours {our_value}")
        else:
            same += 1
    missing_in_nixl = [k for k in ours if family_of(k[0], nixl_types) and k not in nixl]
    rows.append(f"| NIXL families (without exposer_*) | {sum(1 for f in nixl_types if not f.startswith(IGNORED_FAMILIES))} |")
    rows.append(f"| NIXL series matched, equal value | {same} |")
    rows.append(f"| NIXL series matched, measured time (value not compared) | {timed_count} |")
    rows.append(f"| our families NIXL does not have | {', '.join(extra) or 'none'} |")
    rows.append(f"| our series of shared families NIXL does not have | {len(missing_in_nixl)} |")
    for key in sorted(missing_in_nixl):
        if key[3] in EXPECTED_EXTRA_BOUNDS:
            explained.append(key)
        else:
            problems.append(f"series of a shared family only ours has: {key}")
    if EXPECTED_EXTRA_BOUNDS:
        rows.append(f"| of which our extra bucket bound(s) {', '.join(sorted(EXPECTED_EXTRA_BOUNDS))} | {len(explained)} |")
    print("| check | result |\n| --- | --- |")
    print("\n".join(rows))
    if problems:
        print("\nDIFFERENCES:\n" + "\n".join(problems), file=sys.stderr)
        sys.exit(1)
    print("\nparity: every NIXL family, label set and value is ours too; differences listed above")


if __name__ == "__main__":
    main()
