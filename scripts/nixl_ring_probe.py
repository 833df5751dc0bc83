#!/usr/bin/env python3
"""Write a probe ring in one of the NIXL ring layouts, for learning what a release's
own reader prints for every event type (or category) number.

Layouts (see docs/compatibility.md):
  v1     header + 56-byte slots: u64 timestamp_us, i32 category, char name[32], u32 pad, u64 value
  v2n    version 2 (NIXL 1.1): header + 48-byte slots: i32 category, char name[32], u32 pad, u64 value
  v2t    version 2 (NIXL 1.2): header + 16-byte slots: u32 category, u32 type, u64 value
  v3     version 3 (NIXL 1.3): header + 16-byte slots: u32 type, u32 pad, u64 value
  v4     version 4 (NIXL 1.4, 1.5): same slot as v3

Header (40 bytes, every version): u64 write_pos, u64 read_pos, i32 version,
i32 expected_version, u64 capacity, u64 mask.

Usage: nixl_ring_probe.py LAYOUT OUT --capacity N --slot SPEC [--slot SPEC ...]
  SPEC for v1/v2n: CATEGORY:NAME:VALUE (v1 uses --timestamp for every slot)
  SPEC for v2t:    CATEGORY:TYPE:VALUE
  SPEC for v3/v4:  TYPE:VALUE
"""

import argparse
import struct
import sys

LAYOUTS = {"v1": (1, 56), "v2n": (2, 48), "v2t": (2, 16), "v3": (3, 16), "v4": (4, 16)}


def slot_bytes(layout, spec, timestamp):
    parts = spec.split(":")
    try:
        if layout in ("v1", "v2n"):
            cat, name, value = int(parts[0]), parts[1].encode(), int(parts[2])
            name = name[:31].ljust(32, b"\0")
            if layout == "v1":
                return struct.pack("<QiI", timestamp, cat, 0)[:12] + name + struct.pack("<IQ", 0, value)
            return struct.pack("<i", cat) + name + struct.pack("<IQ", 0, value)
        if layout == "v2t":
            return struct.pack("<IIQ", int(parts[0]), int(parts[1]), int(parts[2]))
        return struct.pack("<IIQ", int(parts[0]), 0, int(parts[1]))
    except (IndexError, ValueError) as e:
        sys.exit(f"bad --slot {spec!r} for layout {layout}: {e}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("layout", choices=sorted(LAYOUTS))
    p.add_argument("out")
    p.add_argument("--capacity", type=int, default=64)
    p.add_argument("--timestamp", type=int, default=1_700_000_000_000_000)
    p.add_argument("--slot", action="append", default=[])
    a = p.parse_args()
    if a.capacity < 2 or a.capacity & (a.capacity - 1):
        sys.exit("--capacity must be a power of two >= 2")
    if len(a.slot) >= a.capacity:
        sys.exit(f"at most {a.capacity - 1} slots fit a ring of capacity {a.capacity}")
    version, size = LAYOUTS[a.layout]
    header = struct.pack("<QQiiQQ", len(a.slot), 0, version, version, a.capacity, a.capacity - 1)
    body = b"".join(slot_bytes(a.layout, s, a.timestamp) for s in a.slot)
    body = body.ljust(size * a.capacity, b"\0")
    with open(a.out, "wb") as f:
        f.write(header + body)


if __name__ == "__main__":
    main()
