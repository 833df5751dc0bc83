#!/usr/bin/env python3
"""Write a NIXL version-1 ring file full of synthetic events (for benchmarks).

    python3 python/tools/make_ring.py OUT [--capacity N] [--events K] [--trailer]

The ring gets capacity N (a power of two, default 1048576) and K unread events
(default N - 1, i.e. full) starting at slot 0. Events cycle through a handful of
realistic names and categories; timestamps advance by 7 us per event.
"""

import argparse
import struct
import sys

HEADER = struct.Struct("<QQiiQQ")
SLOT = struct.Struct("<Qi32s4xQ")
TRAILER = struct.Struct("<8sIIIIQQQQQ")

KINDS = [
    (5, b"agent_xfer_time"),
    (1, b"agent_tx_bytes"),
    (1, b"agent_tx_requests_num"),
    (5, b"agent_xfer_post_time"),
    (1, b"agent_rx_bytes"),
    (1, b"agent_rx_requests_num"),
    (0, b"agent_memory_registered"),
    (4, b"NIXL_ERR_BACKEND"),
    (3, b"ucx_rdma_writes"),
]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--capacity", type=int, default=1 << 20)
    parser.add_argument("--events", type=int, default=None)
    parser.add_argument("--trailer", action="store_true", help="append a 64-byte trailer")
    args = parser.parse_args(argv)
    cap = args.capacity
    if cap < 1 or cap & (cap - 1):
        parser.error("--capacity must be a power of two")
    count = cap - 1 if args.events is None else args.events
    if not 0 <= count < cap:
        parser.error("--events must be in [0, capacity)")
    start_us = 1_750_000_000_000_000
    pack = SLOT.pack
    with open(args.out, "wb") as f:
        f.write(HEADER.pack(count, 0, 1, 1, cap, cap - 1))
        chunk = []
        for i in range(cap):
            if i < count:
                cat, name = KINDS[i % len(KINDS)]
                chunk.append(pack(start_us + 7 * i, cat, name, (i * 4099) % 4194304 + 1))
            else:
                chunk.append(bytes(SLOT.size))
            if len(chunk) == 65536:
                f.write(b"".join(chunk))
                chunk = []
        f.write(b"".join(chunk))
        if args.trailer:
            f.write(TRAILER.pack(b"NXTLTRL\0", 1, 64, 0, 1, start_us, count, 0, 0, start_us))
    return 0


if __name__ == "__main__":
    sys.exit(main())
