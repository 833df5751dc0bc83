#!/usr/bin/env python3
"""A deterministic NIXL workload: two agents in one process, UCX over DRAM.

Run it with a NIXL release's Python package on the path (``nixl_cu12``) and the
telemetry variables set (``NIXL_TELEMETRY_ENABLE=y`` plus ``NIXL_TELEMETRY_DIR`` for
rings, or ``NIXL_TELEMETRY_EXPORTER=prometheus`` ...). What it does, always in the same
order:

1. creates agent ``initiator`` and agent ``target`` (backend UCX; ``--agent-prefix P``
   names them ``Pinitiator`` and ``Ptarget``);
2. each registers one DRAM region of ``--region`` bytes;
3. the initiator loads the target's metadata;
4. ``--writes`` WRITE transfers of ``--write-size`` bytes, one after the other;
5. ``--reads`` READ transfers of ``--read-size`` bytes, one after the other;
6. ``--errors`` times (default 0), asks for a WRITE to an agent that does not exist,
   which NIXL refuses with NIXL_ERR_NOT_FOUND (recorded as an error event);
7. deregisters both regions (the initiator first);
8. sleeps ``--settle`` seconds (several telemetry flush intervals);
9. if ``--scrape URL`` is given, fetches it into ``--scrape-out`` (retrying until every
   ``--scrape-expect`` regular expression matches), while both agents are still alive;
10. exits (the agents are destroyed last).

Only the initiator posts transfers, so its ring holds the transfer events; both rings
hold the registration events.
"""

import argparse
import re
import sys
import time
import urllib.request


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--region", type=int, default=65536, help="bytes registered per agent")
    p.add_argument("--writes", type=int, default=3, help="number of WRITE transfers")
    p.add_argument("--write-size", type=int, default=4096, help="bytes per WRITE")
    p.add_argument("--reads", type=int, default=2, help="number of READ transfers")
    p.add_argument("--read-size", type=int, default=8192, help="bytes per READ")
    p.add_argument("--errors", type=int, default=0,
                   help="number of refused transfer requests (NIXL_ERR_NOT_FOUND)")
    p.add_argument("--agent-prefix", default="",
                   help="prefix of both agents' names (several runs into one ring directory)")
    p.add_argument("--settle", type=float, default=0.6, help="seconds to let telemetry flush")
    p.add_argument("--scrape", help="URL to fetch after the transfers (Prometheus /metrics)")
    p.add_argument("--scrape-out", help="file the scraped text is written to")
    p.add_argument("--scrape-expect", action="append", default=[],
                   help="regular expression that must match the scrape before it is kept "
                        "(repeatable)")
    args = p.parse_args()
    for name in ("region", "writes", "write_size", "reads", "read_size", "errors"):
        if getattr(args, name) < 0:
            p.error(f"--{name.replace('_', '-')} must be >= 0")
    if max(args.write_size, args.read_size) > args.region:
        p.error("--write-size and --read-size must not exceed --region")
    if bool(args.scrape) != bool(args.scrape_out):
        p.error("--scrape and --scrape-out go together")
    return args


def transfer(agent, op, local, remote, remote_name):
    handle = agent.initialize_xfer(op, local, remote, remote_name)
    state = agent.transfer(handle)
    deadline = time.monotonic() + 30
    while state == "PROC":
        if time.monotonic() > deadline:
            raise RuntimeError(f"{op} transfer did not finish within 30 s")
        state = agent.check_xfer_state(handle)
    if state != "DONE":
        raise RuntimeError(f"{op} transfer ended in state {state}")
    agent.release_xfer_handle(handle)


def scrape(url, out, expect):
    deadline = time.monotonic() + 20
    last_error = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                text = response.read().decode("utf-8")
            missing = [e for e in expect if not re.search(e, text)]
            if not missing:
                with open(out, "w", encoding="utf-8") as f:
                    f.write(text)
                return
            last_error = f"{missing[0]!r} does not match the exposition yet"
        except OSError as e:
            last_error = str(e)
        time.sleep(0.2)
    raise RuntimeError(f"scraping {url} failed: {last_error}")


def main():
    args = parse_args()
    import numpy as np
    from nixl_cu12 import nixl_agent, nixl_agent_config

    config = nixl_agent_config(backends=["UCX"])
    target_name = args.agent_prefix + "target"
    initiator = nixl_agent(args.agent_prefix + "initiator", config)
    target = nixl_agent(target_name, nixl_agent_config(backends=["UCX"]))

    src = np.arange(args.region, dtype=np.uint8)
    dst = np.zeros(args.region, dtype=np.uint8)
    src_addr, dst_addr = src.ctypes.data, dst.ctypes.data

    src_reg = initiator.get_reg_descs([(src_addr, args.region, 0, "")], "DRAM")
    dst_reg = target.get_reg_descs([(dst_addr, args.region, 0, "")], "DRAM")
    initiator.register_memory(src_reg)
    target.register_memory(dst_reg)

    initiator.add_remote_agent(target.get_agent_metadata())

    w_local = initiator.get_xfer_descs([(src_addr, args.write_size, 0)], "DRAM")
    w_remote = initiator.get_xfer_descs([(dst_addr, args.write_size, 0)], "DRAM")
    for _ in range(args.writes):
        transfer(initiator, "WRITE", w_local, w_remote, target_name)
    if args.writes and not (dst[: args.write_size] == src[: args.write_size]).all():
        raise RuntimeError("WRITE did not move the data")

    r_local = initiator.get_xfer_descs([(src_addr, args.read_size, 0)], "DRAM")
    r_remote = initiator.get_xfer_descs([(dst_addr, args.read_size, 0)], "DRAM")
    for _ in range(args.reads):
        transfer(initiator, "READ", r_local, r_remote, target_name)

    for _ in range(args.errors):
        try:
            initiator.initialize_xfer("WRITE", w_local, w_local, "no_such_agent")
        except Exception as e:  # NIXL raises its own exception types per status
            if "NIXL_ERR_NOT_FOUND" not in str(e):
                raise RuntimeError(f"expected NIXL_ERR_NOT_FOUND, got {e!r}") from e
        else:
            raise RuntimeError("a transfer to an unknown agent was accepted")

    initiator.remove_remote_agent(target_name)
    initiator.deregister_memory(src_reg)
    target.deregister_memory(dst_reg)
    time.sleep(args.settle)
    if args.scrape:
        scrape(args.scrape, args.scrape_out, args.scrape_expect)
    print(f"workload done: {args.writes} WRITE x {args.write_size} B, "
          f"{args.reads} READ x {args.read_size} B, region {args.region} B per agent",
          file=sys.stderr)


if __name__ == "__main__":
    main()
