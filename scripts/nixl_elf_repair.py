#!/usr/bin/env python3
"""Repair a copy of a NIXL release's `telemetry_reader` that dies in the dynamic loader.

The readers shipped in NIXL 1.2.0, 1.3.x and 1.4.0 end with SIGSEGV before `main` for
any arguments: their `.dynamic` section lies outside the segment meant to hold it, on a
page that a read-only PT_LOAD segment also maps, so the loader's write of the debug
pointer into `.dynamic` faults. This writes a copy whose program headers are fixed in
two fields (nothing else changes): the first PT_LOAD is extended to cover `.dynamic`,
and every PT_LOAD sharing a page with `.dynamic` gets PF_W.

Usage: nixl_elf_repair.py SOURCE DESTINATION   (exit 0; prints what it changed, or
"nothing to repair")
"""

import struct
import sys

PT_LOAD, PT_DYNAMIC, PF_W = 1, 2, 2
PHDR = "<IIQQQQQQ"  # type, flags, offset, vaddr, paddr, filesz, memsz, align
PAGE = 0x1000


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: nixl_elf_repair.py SOURCE DESTINATION")
    src, dst = sys.argv[1:]
    data = bytearray(open(src, "rb").read())
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        sys.exit(f"{src}: not a little-endian 64-bit ELF file")
    phoff = struct.unpack_from("<Q", data, 0x20)[0]
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    headers = [list(struct.unpack_from(PHDR, data, phoff + i * phentsize)) for i in range(phnum)]
    dynamic = [h for h in headers if h[0] == PT_DYNAMIC]
    if not dynamic:
        sys.exit(f"{src}: no PT_DYNAMIC header")
    dyn_start = dynamic[0][3]
    dyn_end = dyn_start + dynamic[0][6]
    changes = []
    for i, h in enumerate(headers):
        if h[0] != PT_LOAD:
            continue
        first_page, end_page = h[3] & ~(PAGE - 1), (h[3] + h[6] + PAGE - 1) & ~(PAGE - 1)
        if h[2] == 0 and first_page <= dyn_start < end_page and h[3] + h[6] < dyn_end:
            h[5] = h[6] = dyn_end - h[3]
            changes.append(f"PT_LOAD #{i} extended to end at {dyn_end:#x} (covers .dynamic)")
        if first_page < dyn_end and dyn_start < end_page and not h[1] & PF_W:
            h[1] |= PF_W
            changes.append(f"PT_LOAD #{i} at {h[3]:#x} made writable (shares a page with .dynamic)")
        struct.pack_into(PHDR, data, phoff + i * phentsize, *h)
    with open(dst, "wb") as f:
        f.write(data)
    print("; ".join(changes) if changes else "nothing to repair")


if __name__ == "__main__":
    main()
