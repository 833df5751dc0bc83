#!/usr/bin/env python3
"""Writes the captures `nixl-telemetry report`'s tests read (see README.md).

Deterministic: run it again and the files come out the same.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
T0 = 1_764_000_000_000_000  # 2025-11-24 16:00:00 UTC, in µs
MIB = 1 << 20

CATEGORIES = {"MEMORY": 0, "TRANSFER": 1, "ERROR": 4, "PERFORMANCE": 5, "SYSTEM": 6}


def line(ts, category, name, value, agent=None, timed=True):
    obj = {
        "timestamp_us": ts if timed else None,
        "category": category if timed else None,
        "category_id": CATEGORIES[category] if timed else None,
        "name": name,
        "value": value,
    }
    if agent is not None:
        obj["agent"] = agent
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def agent_lines(agent, timed, error_name):
    """One agent's run: 10 s, 100 transfers (the target's take twice as
    long), 4 errors (the initiator's), one loss report."""
    out = []
    ts = T0
    out.append(line(ts, "MEMORY", "agent_memory_registered", 16 * MIB, agent, timed))
    out.append(line(ts, "MEMORY", "agent_memory_registered", 16 * MIB, agent, timed))
    for i in range(100):
        # Transfer i completes at 100 ms × (i + 1): 10 per second.
        ts = T0 + 100_000 * (i + 1)
        write = i % 2 == 0
        size = 4096 if write else 8192
        xfer_us = 2 * (i + 1) if agent == "target" else i + 1
        out.append(line(ts, "PERFORMANCE", "agent_xfer_time", xfer_us, agent, timed))
        out.append(line(ts, "TRANSFER", "agent_tx_bytes" if write else "agent_rx_bytes", size, agent, timed))
        out.append(line(ts, "TRANSFER", "agent_tx_requests_num" if write else "agent_rx_requests_num", 1, agent, timed))
        if agent == "target":
            continue
        if i in (10, 20, 30):
            out.append(line(ts, "ERROR", error_name("NOT_FOUND"), 1, agent, timed))
        if i == 40:
            out.append(line(ts, "ERROR", error_name("BACKEND"), 1, agent, timed))
    ts = T0 + 10_000_000
    out.append(line(ts, "SYSTEM", "agent_telemetry_events_dropped", 5, agent, timed))
    out.append(line(ts, "MEMORY", "agent_memory_deregistered", 16 * MIB, agent, timed))
    return out


def interleave(a, b):
    """Round by round, as a directory reader prints agents."""
    out = []
    for i in range(0, max(len(a), len(b)), 10):
        out += a[i : i + 10] + b[i : i + 10]
    return out


def main():
    timed = interleave(
        agent_lines("initiator", True, lambda s: f"NIXL_ERR_{s}"),
        agent_lines("target", True, lambda s: f"NIXL_ERR_{s}"),
    )
    untimed = agent_lines(None, False, lambda s: f"agent_err_{s.lower()}")
    for name, lines in (("timed.jsonl", timed), ("untimed.jsonl", untimed)):
        with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
