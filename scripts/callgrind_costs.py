"""Reading a callgrind output file (written with --compress-strings=no --compress-pos=no):
instructions per thread, per function, and the inclusive instructions of the calls that
enter a chosen set of functions from outside it.

Used by scripts/bench_vs_nixl.py --instructions to count what telemetry costs a job by
function rather than by whole-process totals (which busy polling makes timing-dependent).
"""

import re

# The helpers glibc's start_thread calls around a thread's body.
THREAD_PLUMBING = {"__ctype_init", "__call_tls_dtors", "__libc_thread_freeres",
                   "__nptl_deallocate_tsd", "_setjmp", "getpagesize", "madvise", "start_thread",
                   "__GI___clone3", "clone3", "__clone3", "_dl_allocate_tls"}
RECURSION = re.compile(r"'\d+$")


class Profile:
    """One callgrind file: `total` instructions (its `summary:`), `self_cost[(object, fn)]`,
    `calls[((object, fn) caller, (object, fn) callee)]` inclusive instructions, and `root`,
    the (object, fn) that start_thread ran (None for the main thread)."""

    def __init__(self, path):
        self.path = path
        self.total = 0
        self.self_cost = {}
        self.calls = {}
        self.thread = None
        ob = fn = None
        cob = cfn = None
        pending_call = False
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                c = line[:1]
                if c.isdigit() or c in "+-*":
                    parts = line.split()
                    cost = int(parts[1]) if len(parts) > 1 else 0
                    if pending_call:
                        key = (fn, (cob or ob, cfn))
                        self.calls[key] = self.calls.get(key, 0) + cost
                        pending_call, cob = False, None
                    else:
                        self.self_cost[fn] = self.self_cost.get(fn, 0) + cost
                elif line.startswith("fn="):
                    fn = (ob, RECURSION.sub("", line[3:].rstrip("\n")))
                elif line.startswith("ob="):
                    ob = line[3:].rstrip("\n")
                elif line.startswith("cob="):
                    cob = line[4:].rstrip("\n")
                elif line.startswith("cfn="):
                    cfn = RECURSION.sub("", line[4:].rstrip("\n"))
                elif line.startswith("calls="):
                    pending_call = True
                elif line.startswith("summary:"):
                    self.total = int(line.split()[1])
                elif line.startswith("thread:"):
                    self.thread = int(line.split()[1])
        body = [(cost, callee) for (caller, callee), cost in self.calls.items()
                if caller and caller[1] == "start_thread" and callee[1] not in THREAD_PLUMBING]
        self.root = max(body)[1] if body else None

    def entered(self, inside):
        """{(object, fn): inclusive instructions} of the calls into a function for which
        `inside(object, fn)` is true from one that is neither inside nor called, directly or
        through others, by an inside function (so inside -> outside -> inside counts once)."""
        below, todo = set(), [callee for (_c, callee) in self.calls if inside(*callee)]
        callees = {}
        for (caller, callee) in self.calls:
            callees.setdefault(caller, []).append(callee)
        while todo:
            node = todo.pop()
            if node in below:
                continue
            below.add(node)
            todo.extend(callees.get(node, ()))
        out = {}
        for (caller, callee), cost in self.calls.items():
            if inside(*callee) and caller not in below:
                out[callee] = out.get(callee, 0) + cost
        return out
