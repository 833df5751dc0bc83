#!/usr/bin/env python3
"""The compatibility matrix against real NIXL releases (run through scripts/nixl-releases.sh matrix).

For each release given:

(a) rings the release wrote (scripts/nixl-releases.sh write) are read by our Rust
    `telemetry_reader --once --peek --json` and by `python3 python/telemetry_reader.py`;
    both must give the events the release's own reader prints: names, values, order, and
    the timestamps and categories where the layout has them (null where it has none).
(b) a ring written by our `nixl-telemetry emit` with NIXL_TELEMETRY_RING_VERSION set for
    the release is read by the release's own reader, which must print exactly the events
    emitted (the events of the release's own initiator ring from (a)).
(c) 1.5.x only: the release's Prometheus plug-in and ours, fed the same workload, expose
    the same families, types, label sets, bucket boundaries and values (timing values and
    the HTTP server's exposer_* values are measured, so only their presence, counts and
    bucket boundaries are compared; HELP texts are reported as notes).
(d) the release itself loads our exporters through the adapters of its interface
    generation (crates/nixl_adapters): OTLP, CSV and our Prometheus each receive what the
    release's own rings hold for the same workload (scripts/nixl_adapters_check.py).
(e) our plain plug-ins in NIXL_PLUGIN_DIR, and the adapters of the neighbouring generations,
    are refused by the release, never misread.

A release whose reader crashes as shipped is compared against a repaired copy of that
reader (scripts/nixl_elf_repair.py) and the cell says so. Exit status 0 when every cell
passes, 1 otherwise. Details of every failing cell follow the table.
"""

import argparse
import datetime
import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nixl_adapters_check  # noqa: E402  (scripts/: columns (d) and (e))

# The value of NIXL_TELEMETRY_RING_VERSION that writes a release's layout with our writer.
RING_VERSION_FOR_RELEASE = {
    "0.10": "1",
    "1.0": "1",
    "1.1": "2",
    "1.2": "2-typed",
    "1.3": "3",
    "1.4": "4",
    "1.5": "4",
}
LAYOUT_FOR_RELEASE = {
    "0.10": "v1 (56-byte slots)",
    "1.0": "v1 (56-byte slots)",
    "1.1": "v2 named (48-byte slots)",
    "1.2": "v2 typed (16-byte slots)",
    "1.3": "v3 (16-byte slots)",
    "1.4": "v4 (16-byte slots)",
    "1.5": "v4 (16-byte slots)",
}
# Which fields a layout carries.
HAS_TIMESTAMP = {"0.10", "1.0"}
HAS_CATEGORY = {"0.10", "1.0", "1.1", "1.2"}
# Category of each typed event name (what NIXL 1.2 writes into its category field).
CATEGORY_OF_NAME = {
    "agent_tx_bytes": "TRANSFER",
    "agent_rx_bytes": "TRANSFER",
    "agent_tx_requests_num": "TRANSFER",
    "agent_rx_requests_num": "TRANSFER",
    "agent_memory_registered": "MEMORY",
    "agent_memory_deregistered": "MEMORY",
    "agent_xfer_time": "PERFORMANCE",
    "agent_xfer_post_time": "PERFORMANCE",
    "agent_telemetry_events_dropped": "SYSTEM",
}
CATEGORY_NAMES = ["MEMORY", "TRANSFER", "CONNECTION", "BACKEND", "ERROR", "PERFORMANCE",
                  "SYSTEM", "CUSTOM"]
AGENTS = ("initiator", "target")
# Workload options of every run: the defaults plus two refused requests (error events).
WORKLOAD_ARGS = ["--errors", "2"]


def emit_line(category, name, value):
    """One `nixl-telemetry emit` input line recording an event the way an agent would.

    Errors go through the error form (the status string), as an agent records them; the
    writer names them by the layout's rule (`NIXL_ERR_X` in version 1 and 1.1's version 2,
    the type of `agent_err_x` in the typed layouts)."""
    if value == 1 and (name.startswith("NIXL_ERR_") or name.startswith("agent_err_")):
        status = name if name.startswith("NIXL_ERR_") else "NIXL_ERR_" + name[len("agent_err_"):].upper()
        return json.dumps({"error": status})
    if category is None:
        category = CATEGORY_OF_NAME.get(name, "CUSTOM")
    return json.dumps({"category": category, "name": name, "value": value})


def series(release):
    return ".".join(release.split(".")[:2])


# One matrix cell: a short text and, when it failed, the details.
Cell = nixl_adapters_check.Cell


def run(cmd, env=None, timeout=300, check=False):
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return proc


def first_line(text):
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:160] if lines else "(no output)"


# ---------------------------------------------------------------- NIXL reader output

def parse_nixl_reader(text):
    """The events of a NIXL reader's stdout, as (timestamp, category, name, value)."""
    events, block = [], None
    for line in text.splitlines():
        if line == "=== NIXL Telemetry Event ===":
            block = {}
        elif line == "===========================" and block is not None:
            category = block.get("Category")
            if category is not None and category.startswith("NIXL_TELEMETRY_") and category != "NIXL_TELEMETRY_MAX":
                category = category[len("NIXL_TELEMETRY_"):]
            events.append((block.get("Timestamp"), category, block.get("Event name"),
                           int(block["Value"])))
            block = None
        elif block is not None and ": " in line:
            key, value = line.split(": ", 1)
            block[key] = value
    return events


def format_utc(timestamp_us):
    seconds, micros = divmod(timestamp_us, 1_000_000)
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S") + f".{micros:06d}"


def parse_our_json(text):
    """Our readers' --json lines, normalised like parse_nixl_reader (NIXL's spellings)."""
    events = []
    for line in text.splitlines():
        obj = json.loads(line)
        ts = obj.get("timestamp_us")
        category = obj.get("category")
        category_id = obj.get("category_id")
        if category is not None and category not in CATEGORY_NAMES:
            category = "NIXL_TELEMETRY_MAX" if category_id == 8 else "BAD_CATEGORY"
        name = obj["name"]
        if re.fullmatch(r"unknown_event_\d+", name):
            name = "unknown_event"  # NIXL prints unknown types without their number
        events.append((None if ts is None else format_utc(ts), category, name, obj["value"]))
    return events


def diff_events(expected, got, label_expected, label_got):
    if expected == got:
        return ""
    out = [f"{label_expected}: {len(expected)} events, {label_got}: {len(got)} events"]
    for i in range(max(len(expected), len(got))):
        e = expected[i] if i < len(expected) else None
        g = got[i] if i < len(got) else None
        if e != g:
            out.append(f"  event {i}: {label_expected} {e} != {label_got} {g}")
            if len(out) > 6:
                out.append("  ...")
                break
    return "\n".join(out)


class Matrix:
    def __init__(self, root, releases_sh, work):
        self.root, self.sh, self.work = root, releases_sh, work
        target = os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target"))
        self.bin_dir = os.path.join(target, "debug")
        self.env = dict(os.environ, TZ="UTC")
        for key in list(self.env):
            if key.startswith("NIXL_"):
                del self.env[key]

    def build(self):
        print("building telemetry_reader, nixl-telemetry, the plug-ins and the NIXL adapters ...",
              file=sys.stderr)
        run(["cargo", "build", "--quiet", "-p", "nixl-telemetry-cli", "-p",
             "nixl-telemetry-exporter-prometheus", "-p", "nixl-telemetry-exporter-csv", "-p",
             "nixl-telemetry-exporter-otlp", "-p", "nixl-telemetry-nixl-adapters", "--manifest-path",
             os.path.join(self.root, "Cargo.toml")], timeout=3600, check=True)

    def nixl_read(self, release, path):
        """(events, crashed_as_shipped, error) from the release's reader, repaired if needed."""
        proc = run(["bash", self.sh, "read", release, path], env=self.env)
        crashed = proc.returncode == 3
        if crashed:
            proc = run(["bash", self.sh, "read", "--repaired", release, path], env=self.env)
        if proc.returncode != 0:
            return None, crashed, first_line(proc.stderr)
        return parse_nixl_reader(proc.stdout), crashed, ""

    def our_read(self, which, path):
        if which == "rust":
            cmd = [os.path.join(self.bin_dir, "telemetry_reader"), "--once", "--peek", "--json",
                   "--quiet", path]
        else:
            cmd = [sys.executable, os.path.join(self.root, "python", "telemetry_reader.py"),
                   "--telemetry_path", path, "--once", "--peek", "--json", "--quiet"]
        proc = run(cmd, env=self.env)
        if proc.returncode != 0:
            return None, f"exit {proc.returncode}: {first_line(proc.stderr)}"
        try:
            return parse_our_json(proc.stdout), ""
        except (ValueError, KeyError) as e:
            return None, f"unparsable --json output: {e}"

    # ------------------------------------------------------------ (a)
    def column_a(self, release, rings):
        references, crashed = {}, False
        for agent in AGENTS:
            events, crash, error = self.nixl_read(release, os.path.join(rings, agent))
            crashed |= crash
            if events is None:
                cell = Cell(f"no reference: {error}", False, error)
                return {"rust": cell, "python": cell}, references
            references[agent] = events
        cells = {}
        for which in ("rust", "python"):
            problems = []
            for agent in AGENTS:
                ours, error = self.our_read(which, os.path.join(rings, agent))
                if ours is None:
                    problems.append(f"{agent}: {error}")
                    continue
                d = diff_events(references[agent], ours, "NIXL", "ours")
                if d:
                    problems.append(f"{agent}: {d}")
            suffix = " (ref: repaired reader)" if crashed else ""
            n = sum(len(e) for e in references.values())
            if problems:
                cells[which] = Cell("FAIL" + suffix, False, "\n".join(problems))
            else:
                cells[which] = Cell(f"PASS {n} events{suffix}", True)
        return cells, references

    # ------------------------------------------------------------ (b)
    def column_b(self, release, references, out_dir):
        ring_version = RING_VERSION_FOR_RELEASE[series(release)]
        reference = references.get("initiator")
        if not reference:
            return Cell("no reference events", False, "(a) produced no events to emit")
        lines = [emit_line(category, name, value) for _ts, category, name, value in reference]
        events_file = os.path.join(out_dir, "emit.jsonl")
        with open(events_file, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        ring_dir = os.path.join(out_dir, "our-rings")
        os.makedirs(ring_dir, exist_ok=True)
        env = dict(self.env, NIXL_TELEMETRY_ENABLE="y", NIXL_TELEMETRY_DIR=ring_dir,
                   NIXL_TELEMETRY_BUFFER_SIZE="64", NIXL_TELEMETRY_RING_VERSION=ring_version)
        proc = run([os.path.join(self.bin_dir, "nixl-telemetry"), "emit", "--agent", "ours",
                    "--events", events_file], env=env)
        ring = os.path.join(ring_dir, "ours")
        if proc.returncode != 0 or not os.path.exists(ring):
            return Cell(f"FAIL: emit (RING_VERSION={ring_version})", False,
                        f"nixl-telemetry emit with NIXL_TELEMETRY_RING_VERSION={ring_version}: "
                        f"exit {proc.returncode}: {first_line(proc.stderr)}")
        expected = list(reference)
        if series(release) in HAS_TIMESTAMP:
            # Our timestamps are our own: take them from our reader of the same file.
            ours, error = self.our_read("rust", ring)
            if ours is None or len(ours) != len(expected):
                return Cell("FAIL: our reader", False, f"reading our own ring: {error}")
            expected = [(o[0],) + e[1:] for o, e in zip(ours, expected)]
        got, crashed, error = self.nixl_read(release, ring)
        prefix = "reader crashes; repaired: " if crashed else ""
        if got is None:
            return Cell(prefix + "FAIL", False, f"release reader on our ring: {error}")
        d = diff_events(expected, got, "emitted", "NIXL reader")
        if d:
            return Cell(prefix + "FAIL", False, d)
        return Cell(prefix + f"PASS {len(got)} events", True)

    # ------------------------------------------------------------ (c)
    def column_c(self, release, references, out_dir):
        nixl_prom = os.path.join(out_dir, "nixl.prom")
        proc = run(["bash", self.sh, "prometheus", release, nixl_prom] + WORKLOAD_ARGS, env=self.env)
        if proc.returncode != 0:
            return Cell("FAIL: NIXL scrape", False, first_line(proc.stderr))
        our_text = ""
        for agent in AGENTS:
            text, error = self.our_prometheus(agent, references[agent], out_dir)
            if text is None:
                return Cell("FAIL: our scrape", False, error)
            our_text += text
        with open(os.path.join(out_dir, "ours.prom"), "w", encoding="utf-8") as f:
            f.write(our_text)
        with open(nixl_prom, encoding="utf-8") as f:
            nixl = parse_exposition(f.read())
        ours = parse_exposition(our_text)
        differences, notes, extra = compare_expositions(nixl, ours)
        report = os.path.join(out_dir, "prometheus-differences.txt")
        with open(report, "w", encoding="utf-8") as f:
            f.write("\n".join(differences + [f"note: {n}" for n in notes]
                              + [f"extra family of ours: {e}" for e in extra]) + "\n")
        if differences:
            return Cell(f"FAIL {len(differences)} differences", False,
                        "\n".join(differences[:40]) + (f"\n  ... (all in {report})" if len(differences) > 40 else ""))
        return Cell(f"PASS ({len(extra)} extra families of ours)", True)

    def our_prometheus(self, agent, reference, out_dir):
        lines = [emit_line(category, name, value) for _ts, category, name, value in reference]
        events_file = os.path.join(out_dir, f"prom-{agent}.jsonl")
        with open(events_file, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = dict(self.env, NIXL_TELEMETRY_ENABLE="y", NIXL_TELEMETRY_EXPORTER="prometheus",
                   NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR=self.bin_dir,
                   NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH=f"127.0.0.1:{port}")
        proc = subprocess.Popen([os.path.join(self.bin_dir, "nixl-telemetry"), "emit", "--agent",
                                 agent, "--events", events_file, "--hold", "20"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            expect = re.compile(r'agent_memory_deregistered_total\{[^}]*agent_name="%s"[^}]*\} [1-9]' % agent)
            deadline = time.monotonic() + 15
            last = "no answer"
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    return None, f"emit for {agent} exited {proc.returncode}: {first_line(proc.stderr.read())}"
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                        text = r.read().decode("utf-8")
                    if expect.search(text):
                        return text, ""
                    last = "deregistration not exposed yet"
                except OSError as e:
                    last = str(e)
                time.sleep(0.2)
            return None, f"our endpoint for {agent}: {last}"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# ---------------------------------------------------------------- Prometheus text

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\S+)?$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
# Families whose values are measured times: compare presence, counts and buckets only.
TIMING = ("agent_xfer_time", "agent_xfer_post_time")


def parse_exposition(text):
    """{family: {"type", "help", "samples": {(name, frozenset(labels)): value}}}"""
    families, types, helps = {}, {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
        elif line.startswith("# HELP "):
            parts = line.split(" ", 3)
            helps[parts[2]] = parts[3] if len(parts) > 3 else ""
        elif line and not line.startswith("#"):
            m = SAMPLE.match(line)
            if not m:
                continue
            name, labels, value = m.group(1), m.group(3) or "", float(m.group(4))
            family = name
            for suffix in ("_bucket", "_sum", "_count"):
                if name.endswith(suffix) and name[: -len(suffix)] in types:
                    family = name[: -len(suffix)]
            fam = families.setdefault(family, {"samples": {}})
            fam["samples"][(name, frozenset(LABEL.findall(labels)))] = value
    for family, fam in families.items():
        fam["type"] = types.get(family)
        fam["help"] = helps.get(family)
    for family in types:
        families.setdefault(family, {"samples": {}, "type": types[family], "help": helps.get(family)})
    return families


def is_timing_value(sample_name, labels):
    """Whether a sample's value is measured (so differs between runs): the transfer and
    post times, and everything of the HTTP server's own `exposer_*` families."""
    if sample_name.startswith("exposer_"):
        return True
    base = sample_name
    for suffix in ("_total", "_us_sum", "_us_bucket"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    if base not in TIMING:
        return False
    if sample_name.endswith("_us_bucket"):
        return dict(labels).get("le") != "+Inf"
    return True


def compare_expositions(nixl, ours):
    """(differences, notes, extra families of ours). HELP texts are notes, not differences."""
    differences, notes = [], []
    for family in sorted(nixl):
        n = nixl[family]
        if family not in ours:
            differences.append(f"family {family} ({n['type']}): missing in ours")
            continue
        o = ours[family]
        if n["type"] != o["type"]:
            differences.append(f"family {family}: type {n['type']} in NIXL, {o['type']} in ours")
        if n["help"] != o["help"]:
            notes.append(f"family {family}: HELP {n['help']!r} in NIXL, {o['help']!r} in ours")
        # Match samples on (name, labels NIXL has); extra labels of ours are a difference.
        our_by_key = {}
        extra_labels = set()
        for (name, labels), value in o["samples"].items():
            our_by_key.setdefault(name, []).append((dict(labels), value))
        reported_labels = False
        for (name, labels), value in sorted(n["samples"].items(), key=lambda kv: (kv[0][0], sorted(kv[0][1]))):
            want = dict(labels)
            match = None
            for have, v in our_by_key.get(name, []):
                if all(have.get(k) == val for k, val in want.items()):
                    match = (have, v)
                    break
            if match is None:
                differences.append(f"sample {name}{format_labels(want)}: missing in ours")
                continue
            have, v = match
            extra = set(have) - set(want)
            if extra and not reported_labels:
                extra_labels |= extra
                reported_labels = True
                differences.append(
                    f"family {family}: ours adds label(s) {', '.join(f'{k}={have[k]!r}' for k in sorted(extra))} "
                    f"(NIXL's label set: {', '.join(sorted(want))})")
            if not is_timing_value(name, labels) and not same_value(v, value):
                differences.append(f"sample {name}{format_labels(want)}: {fmt(value)} in NIXL, {fmt(v)} in ours")
        # Bucket boundaries: ours must not have buckets NIXL lacks.
        if n["type"] == "histogram":
            for agent in sorted({dict(l).get("agent_name") for (_, l) in n["samples"]}):
                nb = sorted_bounds(n, agent)
                ob = sorted_bounds(o, agent)
                if nb != ob:
                    differences.append(f"histogram {family} agent {agent}: bucket bounds NIXL {nb} ours {ob}")
    extra = sorted(f for f in ours if f not in nixl)
    return differences, notes, extra


def sorted_bounds(fam, agent):
    bounds = {dict(l)["le"] for (name, l) in fam["samples"] if name.endswith("_bucket") and dict(l).get("agent_name") == agent}
    return sorted(bounds, key=lambda b: float("inf") if b == "+Inf" else float(b))


def format_labels(labels):
    return "{" + ",".join(f'{k}="{labels[k]}"' for k in sorted(labels)) + "}"


def same_value(a, b):
    return a == b or (math.isnan(a) and math.isnan(b))


def fmt(value):
    if math.isfinite(value) and value == int(value):
        return str(int(value))
    return repr(value)


# ---------------------------------------------------------------- main

def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", required=True, help="the worktree whose readers, writer and plug-in are checked")
    p.add_argument("--out", help="keep every file of the run here (default: a temporary directory, removed)")
    p.add_argument("--no-build", action="store_true", help="use the binaries already built")
    p.add_argument("--only", default="a,b,c,d,e",
                   help="comma-separated columns to check and count: a, b, c, d, e (default all); "
                        "the others print 'not checked'")
    p.add_argument("releases", nargs="+")
    a = p.parse_args()
    only = set(a.only.split(","))
    if not only or not only <= {"a", "b", "c", "d", "e"}:
        p.error(f"--only takes a comma-separated subset of a,b,c,d,e; got {a.only!r}")
    skipped = Cell("not checked (--only)", True)
    sh = os.environ.get("NIXL_RELEASES_SH") or os.path.join(a.root, "scripts", "nixl-releases.sh")
    work = a.out or tempfile.mkdtemp(prefix="nixl-matrix-")
    os.makedirs(work, exist_ok=True)
    m = Matrix(a.root, sh, work)
    if not a.no_build:
        m.build()
    adapters = None
    if only & {"d", "e"}:
        adapters = nixl_adapters_check.AdapterChecks(a.root, sh, m.bin_dir, m.env, work)
        adapters.prepare()
    rows, failures = [], []
    for release in a.releases:
        if series(release) not in RING_VERSION_FOR_RELEASE:
            sys.exit(f"no layout known for release {release}")
        out_dir = os.path.join(work, release)
        os.makedirs(out_dir, exist_ok=True)
        rings = os.path.join(out_dir, "rings")
        print(f"== {release}", file=sys.stderr)
        proc = run(["bash", sh, "write", release, rings] + WORKLOAD_ARGS, env=m.env)
        if proc.returncode != 0:
            cell = Cell("FAIL: workload", False, first_line(proc.stderr))
            a_cells, refs, b_cell = {"rust": cell, "python": cell}, {}, cell
        else:
            # (a) also yields the reference events (b) and (c) need: it always runs.
            a_cells, refs = m.column_a(release, rings)
            if "a" not in only:
                a_cells = {"rust": skipped, "python": skipped}
            if "b" not in only:
                b_cell = skipped
            else:
                b_cell = m.column_b(release, refs, out_dir) if refs else Cell("no reference", False, "")
        if series(release) != "1.5":
            c_cell = Cell("n/a (1.5.x only)", True)
        elif "c" not in only:
            c_cell = skipped
        else:
            c_cell = m.column_c(release, refs, out_dir) if len(refs) == 2 else Cell("no reference", False, "")
        if "d" not in only:
            d_cell = skipped
        elif len(refs) != 2:
            d_cell = Cell("no reference", False, "(a) produced no reference rings")
        else:
            nixl_prom = os.path.join(out_dir, "nixl.prom") if "c" in only else None
            d_cell = adapters.column_d(release, refs, nixl_prom, out_dir)
        e_cell = adapters.column_e(release, out_dir) if "e" in only else skipped
        row = [release, LAYOUT_FOR_RELEASE[series(release)], a_cells["rust"], a_cells["python"], b_cell,
               c_cell, d_cell, e_cell]
        rows.append(row)
        for title, cell in zip(("(a) Rust reader", "(a) Python reader", "(b) its reader reads ours",
                                "(c) Prometheus", "(d) NIXL loads ours", "(e) never misread"), row[2:]):
            if not cell.ok:
                failures.append(f"{release} {title}: {cell.text}\n{cell.details}")
    header = ["release", "layout", "(a) our Rust reader", "(a) our Python reader",
              "(b) its reader reads ours", "(c) Prometheus parity", "(d) NIXL loads our exporters",
              "(e) never misread: our plain plug-ins, other generations"]
    table = [header] + [[r[0], r[1]] + [c.text for c in r[2:]] for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for i, row in enumerate(table):
        print("| " + " | ".join(cell.ljust(widths[j]) for j, cell in enumerate(row)) + " |")
        if i == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    if failures:
        print("\nFailing cells:\n")
        print("\n\n".join(failures))
    print(f"\nfiles of this run: {work}" if a.out else "", file=sys.stderr)
    if not a.out:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
