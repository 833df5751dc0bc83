"""Every ring version (1-4): the rings the real NIXL releases 1.0.0-1.5.1 wrote
(tests/data/nixl_releases/) and the rings our writer writes in each version, read
by the package exactly as `telemetry_reader --json --once --peek` (and the
standard-library reader) reads them (and, for the releases' files, with the names
and values the release's own reader printed); columns with the missing fields; `ring_version` and
NIXL_TELEMETRY_RING_VERSION; the `format` loss cause in stats and trailers."""

import json
import shutil
import struct
import subprocess
import sys

import pytest

import nixl_telemetry as nt
from nixl_telemetry import Ring, RingError, Telemetry, TelemetryError, read_ring

from conftest import REPO, STDLIB_READER

RELEASES_DIR = REPO / "tests" / "data" / "nixl_releases"
RELEASES = sorted(p.name for p in RELEASES_DIR.iterdir() if p.is_dir())
RING_FILES = ["initiator", "target", "probe.ring"]

# docs/ring-format.md, "Layouts of the NIXL releases".
LAYOUT_OF_RELEASE = {
    "1.0.0": "v1", "1.0.1": "v1", "1.1.0": "v2-named", "1.2.0": "v2-typed",
    "1.3.0": "v3", "1.3.1": "v3", "1.3.2": "v3",
    "1.4.0": "v4", "1.4.1": "v4", "1.5.0": "v4", "1.5.1": "v4",
}
# Which fields each layout carries: (timestamp, category).
FIELDS = {"v1": (True, True), "v2-named": (False, True), "v2-typed": (False, True),
          "v3": (False, False), "v4": (False, False)}


def reader_json(reader, path):
    out = subprocess.run([reader, "--once", "--peek", "--json", "--quiet", str(path)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def stdlib_json(path):
    out = subprocess.run([sys.executable, str(STDLIB_READER), "--telemetry_path", str(path),
                          "--once", "--peek", "--json", "--quiet"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def release_reader_events(text):
    """(name, value) of every event a release's own reader printed."""
    names, values = [], []
    for line in text.splitlines():
        if line.startswith("Event name: "):
            names.append(line[len("Event name: "):])
        elif line.startswith("Value: "):
            values.append(int(line[len("Value: "):]))
    assert len(names) == len(values)
    return list(zip(names, values))


def test_every_release_is_present():
    assert set(RELEASES) == set(LAYOUT_OF_RELEASE), RELEASES


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("file", RING_FILES)
def test_release_rings_read_as_telemetry_reader_and_the_release_read_them(
        tmp_path, telemetry_reader, release, file):
    ring = tmp_path / file
    shutil.copy(RELEASES_DIR / release / file, ring)
    before = ring.read_bytes()
    events = read_ring(ring, peek=True)
    assert ring.read_bytes() == before
    expected = reader_json(telemetry_reader, ring)
    assert len(events) > 0
    assert [e.as_dict() for e in events] == expected
    assert expected == stdlib_json(ring)

    layout = LAYOUT_OF_RELEASE[release]
    has_timestamp, has_category = FIELDS[layout]
    with Ring(ring, peek=True) as r:
        assert r.layout == layout and r.layouts == [(file, layout)]
        assert r.pending == len(events)
    for e in events:
        assert (e.timestamp_us is not None) == has_timestamp
        assert (e.category is not None) == has_category
        assert (e.category_name is not None) == has_category

    # The release's own reader: the same names and values in the same order,
    # except that it prints every unknown type as `unknown_event` where ours
    # add the number (in the probe, the value is the type number).
    theirs = release_reader_events(
        (RELEASES_DIR / release / (file + ".reader.txt")).read_text())
    ours = [(e.name, e.value) for e in events]
    assert [(f"unknown_event_{v}" if n == "unknown_event" else n, v) for n, v in theirs] == ours

    # Columns: the same events; a field the version lacks is None.
    columns = read_ring(ring, peek=True, columns=True)
    assert list(columns["name"]) == [e.name for e in events]
    assert list(columns["value"]) == [e.value for e in events]
    if has_timestamp:
        assert list(columns["timestamp_us"]) == [e.timestamp_us for e in events]
    else:
        assert columns["timestamp_us"] is None
    if has_category:
        assert columns["category"].typecode == "i"
        assert list(columns["category"]) == [int(e.category) for e in events]
    else:
        assert columns["category"] is None


@pytest.mark.parametrize("release", ["1.1.0", "1.2.0", "1.3.2", "1.5.1"])
def test_consuming_a_release_ring_advances_read_pos(tmp_path, release):
    ring = tmp_path / "initiator"
    shutil.copy(RELEASES_DIR / release / "initiator", ring)
    all_events = read_ring(ring, peek=True)
    with Ring(ring) as r:
        first = r.read(max_events=5)
        rest = list(r)
        assert first + rest == all_events and r.pending == 0 and r.read() == []
        assert r.events_read == len(all_events) and r.malformed == 0
        assert r.trailer is None  # NIXL writes no trailer
    write_pos, read_pos = struct.unpack_from("<QQ", ring.read_bytes())
    assert read_pos == write_pos == len(all_events)


def test_a_directory_of_every_release_reads_as_telemetry_reader(tmp_path, telemetry_reader):
    for release in RELEASES:
        shutil.copy(RELEASES_DIR / release / "initiator", tmp_path / ("initiator-" + release))
    with Ring(tmp_path, peek=True) as r:
        events = r.read()
        assert r.layouts == [("initiator-" + rel, LAYOUT_OF_RELEASE[rel]) for rel in RELEASES]
        assert r.layout is None
    assert [e.as_dict() for e in events] == reader_json(telemetry_reader, tmp_path)
    assert [e.as_dict() for e in events] == stdlib_json(tmp_path)
    # Mixed versions in one read: the columns are lists with None where an
    # event's ring has no such field.
    columns = read_ring(tmp_path, peek=True, columns=True)
    assert columns["timestamp_us"] == [e.timestamp_us for e in events]
    assert columns["category"] == [None if e.category is None else int(e.category)
                                   for e in events]
    assert None in columns["timestamp_us"] and None in columns["category"]
    assert list(columns["agent"]) == [e.agent for e in events]


def record_everything(t):
    """Events with a type in every typed version, one with a type only from
    version 4 on, and events that no typed version has a type for."""
    t.memory_registered(4096)
    t.transfer_completed(120, True, 1 << 20)
    t.transfer_completed(80, False, 512)
    t.post_time(7)
    t.error("NIXL_ERR_BACKEND")
    t.error("NIXL_ERR_NOT_FOUND")
    t.memory_deregistered(4096)
    t.record(nt.Category.SYSTEM, "agent_telemetry_events_dropped", 3)
    t.backend_event("ucx_rdma_writes", 2)          # no type
    t.record(nt.Category.CUSTOM, "mine", 42)        # no type
    t.record(77, "agent_tx_bytes", 5)               # a type, an unknown category


# setting -> (layout, timestamp?, category?, events recorded without a type in
# it). A loss makes telemetry generate one `agent_telemetry_events_dropped`
# report, itself without a type before version 4.
WRITTEN = {
    "1": ("v1", True, True, 0),
    "2": ("v2-named", False, True, 0),
    "2-named": ("v2-named", False, True, 0),
    "2-typed": ("v2-typed", False, True, 3),
    "3": ("v3", False, False, 3),
    "4": ("v4", False, False, 2),
    "v4": ("v4", False, False, 2),
}


def expected_losses(setting, generated):
    """Events dropped for their format after record_everything, when telemetry
    generated `generated` loss reports. One report when only the explicit flush
    drains the queue; the flush thread's first pass may also drain part of it
    (it runs as soon as the thread starts, and a slow build, under ASan, starts
    it late), and then the losses are reported in two reports."""
    layout, _, _, no_type = WRITTEN[setting]
    assert (generated >= 1) if no_type else (generated == 0), (setting, generated)
    report_has_type = layout in ("v1", "v2-named", "v4")
    return no_type + (0 if report_has_type else generated)
EVENTS_RECORDED = 15  # record_everything: each transfer makes 3 events


@pytest.mark.parametrize("setting", list(WRITTEN))
def test_our_rings_of_every_version_read_as_telemetry_reader(tmp_path, telemetry_reader, setting):
    layout, has_timestamp, has_category, no_type = WRITTEN[setting]
    value = int(setting) if setting.isdigit() else setting
    # Only the explicit flush: a timed flush between the losses would report
    # them in two `agent_telemetry_events_dropped` events instead of one.
    with Telemetry("agent", dir=tmp_path, buffer_size=64, run_interval_ms=100000,
                   ring_version=value) as t:
        record_everything(t)
        t.flush()
        stats = t.stats()
    generated = stats["generated"]
    dropped_format = expected_losses(setting, generated)
    assert stats["recorded"] == EVENTS_RECORDED
    assert stats["dropped_format"] == stats["dropped"] == dropped_format
    assert stats["pending"] == 0
    assert stats["delivered"] == EVENTS_RECORDED + generated - dropped_format
    ring = tmp_path / "agent"
    events = read_ring(ring, peek=True)
    assert [e.as_dict() for e in events] == reader_json(telemetry_reader, ring)
    assert [e.as_dict() for e in events] == stdlib_json(ring)
    assert len(events) == stats["delivered"]
    for e in events:
        assert (e.timestamp_us is not None) == has_timestamp
        assert (e.category is not None) == has_category
    names = [e.name for e in events]
    assert "agent_err_not_found" in names or "NIXL_ERR_NOT_FOUND" in names
    if no_type:
        assert "mine" not in names and "ucx_rdma_writes" not in names
    if layout == "v4":  # the reports of the losses, the last one written after them
        assert names[-1] == "agent_telemetry_events_dropped"
        reports = [e.value for e in events if e.name == "agent_telemetry_events_dropped"]
        # record_everything records one such event itself, with the value 3.
        assert sorted(reports).count(3) >= 1 and sum(reports) - 3 == no_type, reports
    with Ring(ring, peek=True) as r:
        assert r.layout == layout
        trailer = r.trailer
        assert trailer.closed and trailer.dropped_format == dropped_format
        assert r.dropped_format == dropped_format
        assert trailer.events_lost == r.events_lost == dropped_format
        assert trailer.events_written == len(events)
    columns = read_ring(ring, peek=True, columns=True)
    assert list(columns["name"]) == names
    assert (columns["timestamp_us"] is not None) == has_timestamp
    assert (columns["category"] is not None) == has_category


def test_ring_version_from_the_environment(tmp_path, telemetry_reader, monkeypatch):
    monkeypatch.setenv("NIXL_TELEMETRY_ENABLE", "1")
    monkeypatch.setenv("NIXL_TELEMETRY_DIR", str(tmp_path))
    monkeypatch.setenv("NIXL_TELEMETRY_BUFFER_SIZE", "64")
    monkeypatch.setenv("NIXL_TELEMETRY_RUN_INTERVAL", "100000")  # only explicit flushes
    for version, layout in [("3", "v3"), ("2-typed", "v2-typed"), ("1", "v1")]:
        monkeypatch.setenv("NIXL_TELEMETRY_RING_VERSION", version)
        agent = "env_" + version
        with Telemetry.from_env(agent) as t:
            record_everything(t)
            t.flush()
            stats = t.stats()
            assert stats["dropped_format"] == expected_losses(version, stats["generated"])
        with Ring(tmp_path / agent, peek=True) as r:
            assert r.layout == layout
            assert [e.as_dict() for e in r.read()] == reader_json(
                telemetry_reader, tmp_path / agent)
    monkeypatch.setenv("NIXL_TELEMETRY_RING_VERSION", "5")
    with pytest.raises(TelemetryError) as info:
        Telemetry.from_env("bad")
    assert "NIXL_TELEMETRY_RING_VERSION" in str(info.value) and "2-typed" in str(info.value)


@pytest.mark.parametrize("value", [5, 0, "2-fancy", "", True, 2.0, None, -1])
def test_a_bad_ring_version_setting_is_named(tmp_path, value):
    with pytest.raises(TelemetryError) as info:
        Telemetry("a", dir=tmp_path, ring_version=value)
    text = str(info.value)
    assert "ring_version" in text and repr(value) in text
    assert "2-typed" in text and "accepted" in text


def test_columns_of_a_version_1_ring_stay_arrays(tmp_path):
    with Telemetry("v1", dir=tmp_path, buffer_size=64) as t:
        record_everything(t)
    columns = read_ring(tmp_path / "v1", peek=True, columns=True)
    assert columns["timestamp_us"].typecode == "Q" and columns["category"].typecode == "i"
    assert len(columns["timestamp_us"]) == EVENTS_RECORDED
    assert list(columns["category"])[-1] == 77


def test_a_version_2_ring_of_neither_size_is_refused(tmp_path):
    ring = tmp_path / "odd"
    ring.write_bytes(struct.pack("<QQiiQQ", 0, 0, 2, 2, 8, 7) + b"\0" * 448)
    with pytest.raises(RingError) as info:
        read_ring(ring)
    text = str(info.value)
    assert str(ring) in text and "version 2" in text
    assert "NIXL 1.1" in text and "NIXL 1.2" in text and "488 bytes" in text
