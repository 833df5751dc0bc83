"""A MetricProcessor keeps its state in itself: nothing stays behind on the
threads that used it once it is gone."""

import subprocess
import sys
import textwrap

# Runs in a fresh interpreter (the RSS is that process's): 2,000 processors,
# each made on the main thread, used on the one worker thread of a pool with
# its own dict of a few hundred metrics, then dropped on the main thread. The RSS after them must stay where it was
# after the first 200.
CHILD = textwrap.dedent(r"""
    import gc, json, sys
    from concurrent.futures import ThreadPoolExecutor
    from datetime import datetime
    from nixl_telemetry import MetricProcessor

    lines = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
    items = [(l["record"], datetime.fromisoformat(l["now"])) for l in lines][:300]

    def rss_kib():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])

    def use(p):
        m = p.process_many({}, items)
        p.process(m, items[0][0], {"now": items[0][1]})
        return len(m)

    def run(count, pool):
        # Each processor is made here, used on the worker, dropped here.
        sizes = []
        for _ in range(count):
            p = MetricProcessor()
            sizes.append(pool.submit(use, p).result())
            del p
        gc.collect()
        return sizes

    with ThreadPoolExecutor(max_workers=1) as pool:
        sizes = run(200, pool)
        warm = rss_kib()
        sizes += run(1800, pool)
        after = rss_kib()
    print(json.dumps({"warm_kib": warm, "after_kib": after, "metrics": sizes[0]}))
""")


def test_processors_used_on_a_worker_thread_leave_nothing_behind(tmp_path):
    from conftest import TAO_DATA

    out = subprocess.run([sys.executable, "-c", CHILD, str(TAO_DATA / "corpus.jsonl")],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    import json

    figures = json.loads(out.stdout)
    assert figures["metrics"] > 100, figures
    growth_mib = (figures["after_kib"] - figures["warm_kib"]) / 1024
    # Kept state would be about 1,800 processors' maps and dict copies (several
    # hundred MiB); the allocator's own drift is a few MiB at most.
    assert growth_mib < 16, figures


def test_a_cycle_through_the_kept_dict_is_collected():
    """process_many keeps the dict it wrote (and a copy): a dict that holds the
    processor itself makes a cycle, which the garbage collector frees."""
    import gc
    import weakref
    from datetime import datetime

    from nixl_telemetry import MetricProcessor

    class Sentinel:
        pass

    now = datetime(2025, 1, 13, 10)
    p, m, sentinel = MetricProcessor(), {}, Sentinel()
    m["processor"], m["sentinel"] = p, sentinel
    p.process_many(m, [({"action": "train"}, now)])
    alive = weakref.ref(sentinel)
    del p, m, sentinel
    gc.collect()
    assert alive() is None
