#!/usr/bin/env python3
"""One rank of the multi-process parity workload, run with NIXL's Python API.

The rank process holds two NIXL agents, ``initiator`` and ``target`` (backend
UCX, DRAM), each registering ``--region`` bytes; the initiator then makes
``--writes`` WRITE transfers of 4096 bytes and ``--reads`` READ transfers of
8192 bytes to the target, one after the other. When they are done it creates
``<--marker>`` and keeps both agents (and so their telemetry) alive until the
file ``<--marker>.stop`` appears or ``--hold`` seconds pass.

scripts/prometheus-mp/events_for_rank.py writes the same events for
``nixl-telemetry emit``; scripts/test-prometheus-mp.sh runs both and compares.
"""

import argparse
import os
import time


def transfer(agent, op, local, remote):
    handle = agent.initialize_xfer(op, local, remote, "target")
    state = agent.transfer(handle)
    deadline = time.monotonic() + 30
    while state == "PROC":
        if time.monotonic() > deadline:
            raise RuntimeError(f"{op} did not finish within 30 s")
        state = agent.check_xfer_state(handle)
    if state != "DONE":
        raise RuntimeError(f"{op} ended in state {state}")
    agent.release_xfer_handle(handle)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--writes", type=int, required=True)
    p.add_argument("--reads", type=int, required=True)
    p.add_argument("--region", type=int, default=65536)
    p.add_argument("--marker", required=True)
    p.add_argument("--hold", type=float, default=120)
    args = p.parse_args()

    import numpy as np
    from nixl_cu12 import nixl_agent, nixl_agent_config

    initiator = nixl_agent("initiator", nixl_agent_config(backends=["UCX"]))
    target = nixl_agent("target", nixl_agent_config(backends=["UCX"]))
    src = np.arange(args.region, dtype=np.uint8)
    dst = np.zeros(args.region, dtype=np.uint8)
    initiator.register_memory(
        initiator.get_reg_descs([(src.ctypes.data, args.region, 0, "")], "DRAM"))
    target.register_memory(
        target.get_reg_descs([(dst.ctypes.data, args.region, 0, "")], "DRAM"))
    initiator.add_remote_agent(target.get_agent_metadata())

    def descs(size):
        return (initiator.get_xfer_descs([(src.ctypes.data, size, 0)], "DRAM"),
                initiator.get_xfer_descs([(dst.ctypes.data, size, 0)], "DRAM"))

    local, remote = descs(4096)
    for _ in range(args.writes):
        transfer(initiator, "WRITE", local, remote)
    local, remote = descs(8192)
    for _ in range(args.reads):
        transfer(initiator, "READ", local, remote)

    with open(args.marker, "w", encoding="utf-8") as f:
        f.write(str(os.getpid()))
    deadline = time.monotonic() + args.hold
    while time.monotonic() < deadline and not os.path.exists(args.marker + ".stop"):
        time.sleep(0.1)


if __name__ == "__main__":
    main()
