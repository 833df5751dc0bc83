"""Fork: a child's inherited telemetry records nothing, never deadlocks, and never
writes to (or closes) the parent's ring; the child's own telemetry works."""

import json
import os
import signal
import sys
import threading
import time

import pytest

import nixl_telemetry as nt
from nixl_telemetry import Category, Telemetry

CHILD_TIMEOUT_S = 30


def wait_child(pid):
    """Waits for the child; a child still running after the timeout (a deadlock)
    is killed and the test fails."""
    deadline = time.monotonic() + CHILD_TIMEOUT_S
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") \
                else status >> 8
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail("the forked child did not finish within %d s (deadlock?)" % CHILD_TIMEOUT_S)


def run_in_child(body):
    """Forks; the child runs body() and reports its result as JSON through a pipe,
    then leaves through the normal interpreter path for objects (they are
    collected) but without running pytest's own exit handlers."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read_fd)
        code = 0
        try:
            result = body()
        except BaseException as e:  # report everything to the parent
            result = {"error": repr(e)}
            code = 1
        with os.fdopen(write_fd, "w") as out:
            json.dump(result, out)
        import gc
        gc.collect()  # destroys what the child still holds of the parent's objects
        os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd) as inp:
        text = inp.read()
    code = wait_child(pid)
    result = json.loads(text) if text else {"error": "no result"}
    assert code == 0, result
    return result


def test_child_records_nothing_until_it_creates_its_own(tmp_path):
    parent = Telemetry("parent", dir=tmp_path, buffer_size=256, run_interval_ms=1)
    handle = parent.handle(Category.BACKEND, "parent_handle")
    parent.backend_event("before_fork", 1)
    handle.record(1)
    parent.flush()

    def child():
        out = {
            "enabled": parent.enabled,
            "handle_enabled": handle.enabled,
            "closed": parent.closed,
        }
        parent.backend_event("from_child", 1)
        parent.transfer_completed(1, True, 2)
        parent.memory_registered(3)
        handle.record(99)
        parent.flush()
        out["stats"] = parent.stats()
        parent.close()
        mine = Telemetry("child", dir=tmp_path, buffer_size=16)
        mine.backend_event("child_own", 7)
        mine.handle(Category.CUSTOM, "child_handle").record(8)
        mine.close()
        return out

    result = run_in_child(child)
    assert result["enabled"] is False and result["handle_enabled"] is False
    assert result["closed"] is True
    assert result["stats"]["recorded"] == 0

    # The parent goes on as if nothing happened.
    assert parent.enabled and handle.enabled
    parent.backend_event("after_fork", 2)
    handle.record(2)
    parent.close()

    ring = nt.Ring(tmp_path / "parent", peek=True)
    names = [e.name for e in ring.read()]
    assert names == ["before_fork", "parent_handle", "after_fork", "parent_handle"]
    trailer = ring.trailer
    assert trailer.producer_pid == os.getpid() and trailer.closed
    assert trailer.events_written == 4
    child_ring = [(e.name, e.value) for e in nt.read_ring(tmp_path / "child", peek=True)]
    assert child_ring == [("child_own", 7), ("child_handle", 8)]


def test_fork_while_other_threads_record_and_flush(tmp_path):
    """Locks held by the parent's threads at fork time must not block the child."""
    t = Telemetry("busy", dir=tmp_path, buffer_size=1024, run_interval_ms=1)
    h = t.handle(Category.BACKEND, "busy")
    stop = threading.Event()

    def work():
        while not stop.is_set():
            for i in range(100):
                h.record(i)
            t.flush()

    threads = [threading.Thread(target=work) for _ in range(2)]
    for th in threads:
        th.start()
    try:
        for _ in range(10):
            def child():
                for i in range(1000):
                    h.record(i)
                    t.record(Category.CUSTOM, "c", i)
                t.flush()
                s = t.stats()
                t.close()
                return {"recorded": s["recorded"]}

            assert run_in_child(child) == {"recorded": 0}
    finally:
        stop.set()
        for th in threads:
            th.join()
    t.close()
    ring = nt.Ring(tmp_path / "busy", peek=True)
    assert ring.trailer.producer_pid == os.getpid()
    assert {e.name for e in ring.read()} <= {"busy", "agent_telemetry_events_dropped"}


@pytest.mark.skipif(sys.platform != "linux", reason="fork semantics checked on Linux")
def test_child_exiting_through_the_interpreter_leaves_the_ring_open(tmp_path):
    """A child that simply ends (its objects destroyed at interpreter exit)
    must not mark the parent's ring closed."""
    code = (
        "import os, nixl_telemetry as nt\n"
        "t = nt.Telemetry('p', dir=%r)\n"
        "t.backend_event('x', 1)\n"
        "t.flush()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    t.backend_event('child', 1)\n"
        "    raise SystemExit(0)\n"
        "os.waitpid(pid, 0)\n"
        "r = nt.Ring(os.path.join(%r, 'p'), peek=True)\n"
        "assert not r.trailer.closed, 'the child closed the parent ring'\n"
        "assert [e.name for e in r.read()] == ['x']\n"
        "t.close()\n"
        "assert nt.Ring(os.path.join(%r, 'p'), peek=True).trailer.closed\n"
        "print('ok')\n"
    ) % (str(tmp_path), str(tmp_path), str(tmp_path))
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=CHILD_TIMEOUT_S)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
