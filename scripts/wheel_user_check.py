#!/usr/bin/env python3
"""The checks scripts/test-wheel.sh runs inside the user's environment, with that
environment's Python and nothing from the checkout on any search path.

    wheel_user_check.py versions WHEEL_VERSION
        every command answers --version with "<name> <version> (commit <12 hex>)", the
        Python package has the same version, nixl_telemetry.tao imports
    wheel_user_check.py scrape URL OUT EXPECT...
        fetches URL until every EXPECT (agent:family=value) is a sample of it, then
        writes the text to OUT
    wheel_user_check.py otlp RECEIVED EXPECT...
        the OTLP receiver's JSON lines: the last point of each family for each agent
        (agent:family=value, family without _total) has that value
    wheel_user_check.py tao URL TOKEN
        TAO's own client (nvidia_tao_core.telemetry) reports a job to URL, and the
        service's GET /api/v1/metrics shows it
"""

import json
import re
import subprocess
import sys
import time
import urllib.request

DEADLINE_SECONDS = 30


def versions(wheel_version):
    import nixl_telemetry
    import nixl_telemetry.tao  # noqa: F401

    line = re.compile(r"^(\S+) (\S+) \(commit ([0-9a-f]{12})\)$")
    commits = set()
    for tool in ("nixl-telemetry", "telemetry_reader", "nixl-telemetry-adapters"):
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, check=True)
        m = line.match(out.stdout.strip())
        if not m or m.group(1) != tool or m.group(2) != wheel_version:
            sys.exit(f"{tool} --version: {out.stdout.strip()!r}, want '{tool} {wheel_version} "
                     f"(commit <12 hex digits>)'")
        commits.add(m.group(3))
        print(out.stdout.strip())
    if nixl_telemetry.__version__ != wheel_version:
        sys.exit(f"nixl_telemetry.__version__ is {nixl_telemetry.__version__}, the wheel's {wheel_version}")
    m = line.match(f"nixl_telemetry {nixl_telemetry.__build__}")
    if not m:
        sys.exit(f"nixl_telemetry.__build__ is {nixl_telemetry.__build__!r}")
    commits.add(m.group(3))
    if len(commits) != 1:
        sys.exit(f"the tools name different commits: {sorted(commits)}")
    print(f"nixl_telemetry {nixl_telemetry.__build__} (import nixl_telemetry.tao: ok)")


def expectations(args):
    """agent:family=value -> {(agent, family): value}."""
    want = {}
    for arg in args:
        m = re.fullmatch(r"([^:]+):(\w+)=(\d+)", arg)
        if not m:
            sys.exit(f"expectation {arg!r}: accepted is agent:family=value")
        want[(m.group(1), m.group(2))] = float(m.group(3))
    return want


def samples(text):
    """{(agent, family without _total): value} of a Prometheus text page."""
    got = {}
    for line in text.splitlines():
        m = re.match(r"^(\w+)\{([^}]*)\} (\S+)$", line)
        if not m:
            continue
        agent = re.search(r'agent_name="([^"]*)"', m.group(2))
        if agent:
            family = m.group(1).removesuffix("_total")
            got[(agent.group(1), family)] = float(m.group(3))
    return got


def scrape(url, out, args):
    want = expectations(args)
    deadline = time.monotonic() + DEADLINE_SECONDS
    text, got = "", {}
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                text = response.read().decode()
        except OSError:
            text = ""
        got = samples(text)
        if all(got.get(key) == value for key, value in want.items()):
            with open(out, "w", encoding="utf-8") as f:
                f.write(text)
            for (agent, family), value in sorted(want.items()):
                print(f"{url}: {family}{{agent_name={agent!r}}} = {value:g}")
            return
        time.sleep(0.5)
    sys.exit(f"{url}: never showed {want}; last samples {got}\n{text[-2000:]}")


def otlp(received, args):
    want = expectations(args)
    deadline = time.monotonic() + DEADLINE_SECONDS
    last = {}
    while time.monotonic() < deadline:
        last = {}
        try:
            with open(received, encoding="utf-8") as f:
                entries = [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            entries = []
        for entry in entries:
            for point in entry.get("points", []):
                agent = point.get("attributes", {}).get("agent_name")
                key = (agent, point["metric"].removesuffix("_total"))
                if "value" in point and (key not in last or point["time"] >= last[key][0]):
                    last[key] = (point["time"], point["value"])
        if all(key in last and last[key][1] == value for key, value in want.items()):
            for (agent, family), value in sorted(want.items()):
                print(f"OTLP receiver: {family}{{agent_name={agent!r}}} = {value:g}")
            return
        time.sleep(0.5)
    sys.exit(f"the OTLP receiver never got {want}; last points {last}")


def tao(url, token):
    import os

    os.environ["TAO_TELEMETRY_SERVER"] = url
    os.environ["TAO_TOOLKIT_VERSION"] = "6.26.3"
    os.environ["TELEMETRY_TIMEOUT"] = "10"
    for name in ("TELEMETRY_OPT_OUT", "TAO_CLIENT_TYPE", "TAO_AUTOML_TRIGGERED"):
        os.environ.pop(name, None)
    import requests

    statuses = []
    real_post = requests.post

    def observed_post(*args, **kwargs):
        response = real_post(*args, **kwargs)
        statuses.append(response.status_code)
        return response

    requests.post = observed_post
    from nvidia_tao_core.telemetry.telemetry import send_telemetry_data

    send_telemetry_data(network="dino", action="train",
                        gpu_data=[{"name": "NVIDIA A100-SXM4-80GB"}] * 8, num_gpus=8,
                        time_lapsed=3600, pass_status=True)
    if not statuses or any(status >= 300 for status in statuses):
        sys.exit(f"TAO's client posted to {url} with statuses {statuses}")
    request = urllib.request.Request(f"{url}/api/v1/metrics",
                                     headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        stored = json.loads(response.read())
    text = json.dumps(stored)
    if "dino" not in text:
        sys.exit(f"the service stored no metric of TAO's job: {text[:2000]}")
    print(f"TAO's client reported a job (HTTP {statuses}); the service holds {len(text)} bytes of metrics naming it")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    command, args = sys.argv[1], sys.argv[2:]
    if command == "versions" and len(args) == 1:
        versions(args[0])
    elif command == "scrape" and len(args) >= 2:
        scrape(args[0], args[1], args[2:])
    elif command == "otlp" and len(args) >= 1:
        otlp(args[0], args[1:])
    elif command == "tao" and len(args) == 2:
        tao(args[0], args[1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
