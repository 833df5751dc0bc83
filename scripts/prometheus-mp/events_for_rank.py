#!/usr/bin/env python3
"""The events of one agent of nixl_rank.py, as `nixl-telemetry emit` input.

    events_for_rank.py initiator|target --writes W --reads R [--region B]

The initiator: one registration of B bytes, W sending transfers of 4096 bytes
and R receiving ones of 8192 bytes (each with a transfer time and a post
time); the target: one registration. Times are fixed here (40 us per
transfer, 5 us per post); NIXL measures real ones, so only the time values
differ between the two runs (docs/compatibility.md).
"""

import argparse
import json


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("agent", choices=["initiator", "target"])
    p.add_argument("--writes", type=int, required=True)
    p.add_argument("--reads", type=int, required=True)
    p.add_argument("--region", type=int, default=65536)
    args = p.parse_args()
    lines = [{"memory_registered": args.region}]
    if args.agent == "initiator":
        for write, count, size in ((True, args.writes, 4096), (False, args.reads, 8192)):
            for _ in range(count):
                lines.append({"xfer": {"us": 40, "write": write, "bytes": size}})
                lines.append({"post_time": 5})
    for line in lines:
        print(json.dumps(line))


if __name__ == "__main__":
    main()
