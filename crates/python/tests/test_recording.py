"""Recording: Telemetry, its settings and errors, every recording call, handles."""

import os
import pathlib
import sys
import threading
import time

import pytest

import nixl_telemetry as nt
from nixl_telemetry import Category, Telemetry, TelemetryError


def events_of(ring_dir, agent):
    return [e.as_dict() for e in nt.read_ring(os.path.join(ring_dir, agent), peek=True)]


def test_category_is_an_int_enum():
    assert [c.name for c in Category] == [
        "MEMORY", "TRANSFER", "CONNECTION", "BACKEND", "ERROR", "PERFORMANCE", "SYSTEM", "CUSTOM"
    ]
    assert Category.PERFORMANCE == 5 and isinstance(Category.ERROR, int)


def test_every_recording_call_reaches_the_ring(tmp_path):
    with Telemetry("agent", dir=tmp_path, buffer_size=64, run_interval_ms=5) as t:
        assert t.enabled and not t.closed
        t.memory_registered(4096)
        t.memory_deregistered(1024)
        t.transfer_completed(120, True, 1 << 20)
        t.transfer_completed(80, False, 512)
        t.post_time(7)
        t.error("NIXL_ERR_BACKEND")
        t.backend_event("ucx_rdma_writes", 3)
        t.connection_event("peer_connected", 1)
        t.record(Category.CUSTOM, "mine", 42)
        t.record(9, "unknown_category", 1)
        handle = t.handle(Category.BACKEND, "fast")
        handle.record(5)
        handle.record(6)
    assert t.closed and not t.enabled
    got = [(e["category"], e["name"], e["value"]) for e in events_of(tmp_path, "agent")]
    assert got == [
        ("MEMORY", "agent_memory_registered", 4096),
        ("MEMORY", "agent_memory_deregistered", 1024),
        ("PERFORMANCE", "agent_xfer_time", 120),
        ("TRANSFER", "agent_tx_bytes", 1 << 20),
        ("TRANSFER", "agent_tx_requests_num", 1),
        ("PERFORMANCE", "agent_xfer_time", 80),
        ("TRANSFER", "agent_rx_bytes", 512),
        ("TRANSFER", "agent_rx_requests_num", 1),
        ("PERFORMANCE", "agent_xfer_post_time", 7),
        ("ERROR", "NIXL_ERR_BACKEND", 1),
        ("BACKEND", "ucx_rdma_writes", 3),
        ("CONNECTION", "peer_connected", 1),
        ("CUSTOM", "mine", 42),
        ("UNKNOWN_CATEGORY_9", "unknown_category", 1),
        ("BACKEND", "fast", 5),
        ("BACKEND", "fast", 6),
    ]
    # One completed transfer: three events with one timestamp.
    ts = [e["timestamp_us"] for e in events_of(tmp_path, "agent")]
    assert ts[2] == ts[3] == ts[4]


def test_after_close_nothing_is_recorded_and_nothing_fails(tmp_path):
    t = Telemetry("agent", dir=tmp_path)
    handle = t.handle(Category.BACKEND, "late")
    t.close()
    t.close()
    t.record(Category.BACKEND, "after_close", 1)
    t.flush()
    handle.record(1)
    assert t.stats()["recorded"] == 0 and t.stats()["delivered"] == 0
    assert events_of(tmp_path, "agent") == []
    with Telemetry("agent2", dir=tmp_path) as t2:
        t2.backend_event("x", 1)
    assert t2.stats()["delivered"] == 1  # as it was at close


def test_stats_account_for_every_event():
    with Telemetry("collect_only", buffer_size=4) as t:
        for i in range(10):
            t.backend_event("e", i)
        t.flush()
        s = t.stats()
    assert s["dropped_staging_full"] > 0 and s["dropped"] == s["dropped_staging_full"]
    assert s["recorded"] + s["generated"] == s["delivered"] + s["dropped"] + s["pending"]
    assert set(s) == {
        "recorded", "generated", "delivered", "pending", "dropped", "dropped_staging_full",
        "dropped_exporter_full", "dropped_exporter_failed", "dropped_format", "dropped_late",
    }


def test_disabled_and_filtered(tmp_path):
    off = Telemetry("off", enabled=False, dir=tmp_path)
    off.backend_event("x", 1)
    assert not off.enabled and not off.handle(Category.BACKEND, "x").enabled
    assert not (tmp_path / "off").exists()
    with Telemetry("f", dir=tmp_path, enabled_metrics="agent_*,keep") as t:
        assert t.handle(Category.BACKEND, "keep").enabled
        assert not t.handle(Category.BACKEND, "drop").enabled
        t.backend_event("keep", 1)
        t.backend_event("drop", 1)
        t.memory_registered(3)
    assert [e["name"] for e in events_of(tmp_path, "f")] == ["keep", "agent_memory_registered"]


@pytest.mark.parametrize(
    "settings, needle",
    [
        ({"buffer_size": 3}, "buffer_size"),
        ({"buffer_size": -4}, "buffer_size"),
        ({"buffer_size": True}, "buffer_size"),
        ({"run_interval_ms": 0}, "run_interval_ms"),
        ({"exporter": "../evil"}, "exporter"),
        ({"exporter": "buffer"}, "needs a ring directory"),
        ({"exporter": "surely_missing_plugin"}, "surely_missing_plugin"),
        ({"bogus": 1}, 'unknown setting "bogus"'),
        ({"enabled": "yes"}, "enabled"),
        ({"plugin_dirs": "/a"}, "plugin_dirs"),
    ],
)
def test_bad_settings_name_what_is_wrong(settings, needle):
    with pytest.raises(TelemetryError) as info:
        Telemetry("a", **settings)
    assert needle in str(info.value)
    assert isinstance(info.value, ValueError)


def test_bad_agent_and_directory(tmp_path):
    with pytest.raises(TelemetryError, match="agent name"):
        Telemetry("a/b", dir=tmp_path)
    afile = tmp_path / "file"
    afile.write_text("x")
    with pytest.raises(TelemetryError, match=str(afile)):
        Telemetry("a", dir=afile)


def test_from_env_reads_the_variables(tmp_path, monkeypatch):
    for name in list(os.environ):
        if name.startswith("NIXL_"):
            monkeypatch.delenv(name)
    t = Telemetry.from_env("quiet")
    assert not t.enabled
    monkeypatch.setenv("NIXL_TELEMETRY_ENABLE", "yes")
    monkeypatch.setenv("NIXL_TELEMETRY_DIR", str(tmp_path))
    monkeypatch.setenv("NIXL_TELEMETRY_BUFFER_SIZE", "16")
    with Telemetry.from_env("env_agent") as t:
        t.error("NIXL_ERR_NOT_FOUND")
    assert [e["name"] for e in events_of(tmp_path, "env_agent")] == ["NIXL_ERR_NOT_FOUND"]
    assert nt.Ring(tmp_path / "env_agent", peek=True).trailer is not None


@pytest.mark.parametrize(
    "variable, value",
    [
        ("NIXL_TELEMETRY_ENABLE", "maybe"),
        ("NIXL_TELEMETRY_BUFFER_SIZE", "1000"),
        ("NIXL_TELEMETRY_RUN_INTERVAL", "fast"),
        ("NIXL_TELEMETRY_EXPORTER", "../x"),
    ],
)
def test_from_env_errors_name_the_variable(monkeypatch, variable, value):
    monkeypatch.setenv("NIXL_TELEMETRY_ENABLE", "1")
    monkeypatch.setenv(variable, value)
    with pytest.raises(TelemetryError) as info:
        Telemetry.from_env("a")
    assert variable in str(info.value) and value in str(info.value)


def test_bad_values_raise_python_errors(tmp_path):
    with Telemetry("a", dir=tmp_path) as t:
        with pytest.raises(OverflowError):
            t.handle(Category.BACKEND, "x").record(-1)
        with pytest.raises(TypeError, match="category"):
            t.record("BACKEND", "x", 1)
        with pytest.raises(TypeError, match="category"):
            t.handle(True, "x")


def test_many_threads_record_through_one_handle(tmp_path):
    with Telemetry("threads", dir=tmp_path, buffer_size=8192) as t:
        h = t.handle(Category.BACKEND, "n")

        def work():
            for i in range(1000):
                h.record(i)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        t.flush()
        assert t.stats()["delivered"] == 4000
    assert len(events_of(tmp_path, "threads")) == 4000


def test_flush_releases_the_gil(tmp_path):
    """Another Python thread runs while flush blocks in Rust. With a huge switch
    interval the interpreter never hands the GIL over by itself: the other thread
    can only run if flush releases it."""
    stop = threading.Event()
    ticks = []

    def ticker():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.0001)

    old = sys.getswitchinterval()
    th = threading.Thread(target=ticker)
    sys.setswitchinterval(100)
    try:
        with Telemetry("gil", dir=tmp_path, buffer_size=1 << 17, run_interval_ms=100000) as t:
            h = t.handle(Category.BACKEND, "x")
            th.start()
            time.sleep(0.01)
            # On a loaded machine the other thread may not be scheduled during
            # one flush: try a few; without the release it can never run.
            for _ in range(20):
                for v in range(100000):
                    h.record(v)
                before = len(ticks)
                t.flush()
                after = len(ticks)
                if after > before:
                    break
    finally:
        sys.setswitchinterval(old)
        stop.set()
        th.join()
    assert after > before, "no Python thread ran while flush ran"


def test_repr_and_agent(tmp_path):
    t = Telemetry("r", dir=pathlib.Path(tmp_path))
    assert t.agent == "r" and "Telemetry(agent=\"r\"" in repr(t)
    t.close()


def test_plugins_of_this_python_environment_are_searched():
    # The wheel installs the plug-ins under <data root>/lib/nixl/telemetry_exporters,
    # beside <data root>/lib/pythonX.Y/site-packages/nixl_telemetry; a Python host
    # finds them there with no plugin_dirs (the search trail says so).
    package = pathlib.Path(nt.__file__).parent
    if package.parents[0].name in ("site-packages", "dist-packages"):
        lib = package.parents[2]
    else:  # the package from a source checkout
        lib = pathlib.Path(sys.prefix) / "lib"
    with pytest.raises(TelemetryError) as info:
        Telemetry("a", exporter="surely_missing_plugin")
    candidate = lib / "nixl" / "telemetry_exporters" / "libtelemetry_exporter_surely_missing_plugin.so"
    assert f"{candidate} (the host's environment)" in str(info.value)
