"""Reading: read_ring and Ring give what `telemetry_reader --json` gives, on NIXL's
own files, on ours, on directories and on hostile files; a producer and a reader
in two Python processes."""

import gc
import json
import os
import shutil
import struct
import subprocess
import sys
import textwrap

import pytest

import nixl_telemetry as nt
from nixl_telemetry import Category, Event, Ring, RingError, read_ring

from conftest import DATA, STDLIB_READER

FIXTURES = DATA / "nixl_v1"
FIXTURE_NAMES = ["nixl_v1_basic", "nixl_v1_wrapped", "nixl_v1_full", "nixl_v1_empty",
                 "nixl_v1_name31"]


def reader_json(reader, path, *extra):
    out = subprocess.run([reader, "--once", "--peek", "--json", "--quiet", str(path), *extra],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def stdlib_json(path):
    out = subprocess.run([sys.executable, str(STDLIB_READER), "--telemetry_path", str(path),
                          "--once", "--peek", "--json", "--quiet"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_nixl_files_read_as_nixl_pops_them(tmp_path, telemetry_reader, name):
    ring = tmp_path / name
    shutil.copy(FIXTURES / (name + ".ring"), ring)
    expected = json.loads((FIXTURES / (name + ".json")).read_text())["events"]
    events = read_ring(ring, peek=True)
    assert [(e.timestamp_us, int(e.category), e.name, e.value) for e in events] == [
        (x["timestamp_us"], x["category"], x["name"], x["value"]) for x in expected
    ]
    assert [e.as_dict() for e in events] == reader_json(telemetry_reader, ring)
    for e in events:
        assert e.agent is None and e.category_name == Category(e.category).name


def test_peek_leaves_the_file_and_consuming_advances_it(tmp_path):
    ring = tmp_path / "r"
    shutil.copy(FIXTURES / "nixl_v1_basic.ring", ring)
    before = ring.read_bytes()
    assert len(read_ring(ring, peek=True)) == 5
    assert ring.read_bytes() == before
    with Ring(ring) as r:
        assert r.pending == 5
        first = r.read(max_events=2)
        assert len(first) == 2 and r.pending == 3
        rest = list(r)
        assert len(rest) == 3 and r.pending == 0 and r.read() == []
        assert r.events_read == 5 and r.malformed == 0
    write_pos, read_pos = struct.unpack_from("<QQ", ring.read_bytes())
    assert read_pos == write_pos == 5
    with pytest.raises(RingError, match="closed"):
        r.read()


def test_our_rings_and_directories_match_the_reader(tmp_path, telemetry_reader):
    for agent in ["b_agent", "a_agent", "\u00e9t\u00e9"]:
        with nt.Telemetry(agent, dir=tmp_path, buffer_size=64) as t:
            t.transfer_completed(10, True, 100)
            t.error("NIXL_ERR_" + agent.upper())
            t.record(77, "weird \"name\"\n\t\\", 5)
            t.backend_event("x" * 40, 1)  # cut to 31 bytes
    (tmp_path / "not_a_ring").write_bytes(b"\0" * 10)
    (tmp_path / ".b_agent.123.tmp").write_bytes(b"\0" * 10)
    ours = Ring(tmp_path, peek=True)
    assert ours.is_directory and ours.agents == ["a_agent", "b_agent", "\u00e9t\u00e9"]
    assert [name for name, _ in ours.skipped] == ["not_a_ring"]
    events = ours.read()
    assert [e.as_dict() for e in events] == reader_json(telemetry_reader, tmp_path)
    assert [e.as_dict() for e in events] == stdlib_json(tmp_path)
    assert events[0].agent == "a_agent" and len(events) == 18
    assert events[4].category == 77 and events[4].category_name == "UNKNOWN_CATEGORY_77"
    trailers = dict(ours.trailers)
    assert set(trailers) == {"a_agent", "b_agent", "\u00e9t\u00e9"}
    assert all(t.closed and t.events_written == 6 for t in trailers.values())
    assert ours.trailer is None and ours.events_lost == 0


def test_a_directory_picks_up_new_agents_and_finishes_removed_ones(tmp_path):
    first = nt.Telemetry("first", dir=tmp_path, buffer_size=16)
    first.backend_event("one", 1)
    first.flush()
    ring = Ring(tmp_path)
    assert [(e.agent, e.name) for e in ring.read()] == [("first", "one")]
    with nt.Telemetry("second", dir=tmp_path, buffer_size=16) as second:
        second.backend_event("two", 2)
    first.backend_event("three", 3)
    first.close()
    assert [(e.agent, e.name) for e in ring.read()] == [("first", "three"), ("second", "two")]
    assert ring.agents == ["first", "second"]
    os.unlink(tmp_path / "second")
    assert ring.read() == [] and ring.events_read == 3
    assert dict(ring.trailers)["second"].closed  # kept from before the removal


def test_columns_hold_the_same_events(tmp_path):
    for agent in ["b", "a"]:
        with nt.Telemetry(agent, dir=tmp_path, buffer_size=64) as t:
            t.transfer_completed(10, False, 2**64 - 1)
            t.record(-3, "neg_category", 4)
    events = read_ring(tmp_path, peek=True)
    columns = read_ring(tmp_path, peek=True, columns=True)
    assert set(columns) == {"timestamp_us", "category", "name", "value", "agent"}
    assert columns["timestamp_us"].typecode == "Q" and columns["category"].typecode == "i"
    rows = list(zip(columns["timestamp_us"], columns["category"], columns["name"],
                    columns["value"], columns["agent"]))
    assert rows == [(e.timestamp_us, int(e.category), e.name, e.value, e.agent) for e in events]
    assert len(rows) == 8 and rows[3][1] == -3 and rows[2][3] == 1
    with Ring(tmp_path / "a") as ring:
        first = ring.read_columns(max_events=3)
        assert "agent" not in first and list(first["value"]) == [10, 2**64 - 1, 1]
        assert list(ring.read_columns()["name"]) == ["neg_category"]
        assert len(ring.read_columns()["name"]) == 0


def test_loss_counters_come_from_the_trailer(tmp_path):
    with nt.Telemetry("lossy", dir=tmp_path, buffer_size=8, run_interval_ms=100000) as t:
        for i in range(20):
            t.backend_event("e", i)
        t.flush()
        for i in range(20):
            t.backend_event("e", i)
    r = Ring(tmp_path / "lossy", peek=True)
    trailer = r.trailer
    assert trailer.dropped_staging_full > 0 and trailer.dropped_ring_full > 0
    assert r.dropped_staging_full == trailer.dropped_staging_full
    assert r.dropped_ring_full == trailer.dropped_ring_full
    assert r.events_lost == trailer.events_lost == (
        trailer.dropped_staging_full + trailer.dropped_ring_full)
    assert len(r.read()) == 7  # capacity - 1


def test_malformed_slots_are_skipped_and_counted(tmp_path, telemetry_reader):
    ring = tmp_path / "bad"
    data = bytearray((FIXTURES / "nixl_v1_basic.ring").read_bytes())
    data[40 + 56 + 12: 40 + 56 + 44] = b"Z" * 32  # slot 1: a name without NUL
    ring.write_bytes(bytes(data))
    r = Ring(ring, peek=True)
    events = r.read()
    assert len(events) == 4 and r.malformed == 1
    # The list was made for 5 events and cut to 4; it is a whole, tracked list.
    assert gc.is_tracked(events) and all(isinstance(e, Event) for e in events)
    out = subprocess.run([telemetry_reader, "--once", "--peek", "--json", str(ring)],
                         capture_output=True, text=True)
    assert [e.as_dict() for e in events] == [json.loads(x) for x in out.stdout.splitlines()]


@pytest.mark.parametrize(
    "content, needle",
    [
        (b"short", "too short"),
        (struct.pack("<QQiiQQ", 0, 0, 5, 5, 8, 7) + b"\0" * 448, "ring version 5"),
        (struct.pack("<QQiiQQ", 0, 0, 1, 1, 6, 5) + b"\0" * 336, "power of two"),
        (struct.pack("<QQiiQQ", 0, 0, 1, 1, 8, 7) + b"\0" * 100, "capacity 8"),
        (struct.pack("<QQiiQQ", 9, 0, 1, 1, 8, 7) + b"\0" * 448, "write_pos"),
    ],
)
def test_hostile_files_raise_ring_errors_naming_the_file(tmp_path, content, needle):
    ring = tmp_path / "hostile"
    ring.write_bytes(content)
    with pytest.raises(RingError) as info:
        read_ring(ring)
    assert needle in str(info.value) and str(ring) in str(info.value)


def test_missing_paths_and_empty_directories(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing_here"):
        read_ring(tmp_path / "nothing_here")
    (tmp_path / "junk").write_bytes(b"x")
    with pytest.raises(RingError, match="no ring files"):
        Ring(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(RingError, match="not a regular file"):
        read_ring(fifo)


def test_event_values():
    e = Event(1, 3, "n", 2)
    assert e == Event(1, 3, "n", 2) and e != Event(1, 3, "n", 3)
    assert e.category is Category.BACKEND and e.agent is None
    none = Event(None, None, "n", 2)
    assert none.timestamp_us is None and none.category is None and none.category_name is None
    assert none.as_dict()["timestamp_us"] is None and "None" in repr(none)


def test_event_type_contract():
    """Event is a small immutable, unhashable, final type: keyword arguments,
    clear errors, equality with agent, nothing leaked."""
    e = Event(timestamp_us=5, category=1, name="x", value=2**64 - 1, agent="ag")
    assert (e.timestamp_us, e.category, e.name, e.value, e.agent) == (5, Category(1), "x",
                                                                    2**64 - 1, "ag")
    assert e == Event(5, 1, "x", 2**64 - 1, "ag") and e != Event(5, 1, "x", 2**64 - 1)
    assert e != (5, 1, "x", 2**64 - 1) and not (e == "x")
    assert repr(e).endswith("agent='ag')") and e.as_dict()["agent"] == "ag"
    assert Event(1, 99, "n", 0).category == 99 and "UNKNOWN_CATEGORY_99" in repr(Event(1, 99, "n", 0))
    for call, error, needle in [
        (lambda: Event(1, 2, "n"), TypeError, "value"),
        (lambda: Event(1, 2, "n", 3, None, 6), TypeError, "from 4 to 5 positional"),
        (lambda: Event(1, 2, "n", 3, bogus=1), TypeError, "bogus"),
        (lambda: Event(1, 2, "n", 3, name="m"), TypeError, "multiple values"),
        (lambda: Event(1, 2, 3, 4), TypeError, "str"),
        (lambda: Event(1, 2, "n", -1), OverflowError, "negative"),
        (lambda: hash(e), TypeError, "unhashable"),
        (lambda: type("Sub", (Event,), {}), TypeError, "base type"),
        (lambda: setattr(e, "value", 1), AttributeError, "value"),
        (lambda: e < e, TypeError, "<"),
    ]:
        with pytest.raises(error, match=needle):
            call()
    name = "".join(["shared_", "name"])
    before = sys.getrefcount(name)
    made = [Event(i, 1, name, i, agent=name if i % 2 else None) for i in range(1000)]
    assert sys.getrefcount(name) > before
    assert all(m.name is name for m in made)
    del made
    assert sys.getrefcount(name) == before


def test_events_made_from_freed_events_blocks_are_whole(tmp_path):
    """Freed events' blocks are kept and made into the next events (a free list
    of at most 65,536): events read after others were freed, while some of
    those are still alive, carry their own fields; the names' references add up."""
    names = ["agent_xfer_time", "agent_tx_bytes", "ucx_rdma_writes"]
    with nt.Telemetry("many", dir=tmp_path, buffer_size=4096, run_interval_ms=100000) as t:
        handles = [t.handle(Category.TRANSFER, n) for n in names]
        for i in range(4095):
            handles[i % 3].record(i)
    ring = tmp_path / "many"
    first = read_ring(ring, peek=True)
    kept = first[::2]
    del first
    gc.collect()
    for round in range(3):
        again = read_ring(ring, peek=True)
        assert [(e.name, e.value, e.category) for e in again] == [
            (names[i % 3], i, Category.TRANSFER) for i in range(4095)], round
        assert [e.value for e in kept] == list(range(0, 4095, 2))
        assert all(e.agent is None and e.timestamp_us > 0 for e in again)
        del again
    # More events alive at once than the list keeps: freed beyond it.
    many = [read_ring(ring, peek=True) for _ in range(20)]
    assert all(m[-1].value == 4094 for m in many) and [e.value for e in kept][-1] == 4094
    del many
    # Every event refers to its (one) name string; the references come back.
    again = read_ring(ring, peek=True)
    name = again[0].name
    assert sys.getrefcount(name) == 2 + 1365  # `name`, the argument, 1,365 events
    del again
    assert sys.getrefcount(name) == 2
    kept_events = Event(1, 2, "x", 3), Event(None, None, "y", 4, agent="a")
    assert kept_events[1].as_dict() == {"timestamp_us": None, "category": None,
                                        "category_id": None, "name": "y", "value": 4,
                                        "agent": "a"}


def test_producer_and_reader_in_two_processes(tmp_path):
    """A producer process records 20 000 events through a 1024-slot ring; this
    process consumes it meanwhile and gets every one, in order, or (on a
    machine too slow to keep up) every one the producer did not count as
    lost. Events telemetry generates itself about its losses are in the ring
    too, under their own names."""
    count = 20000
    producer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent("""
            import sys, time, nixl_telemetry as nt
            count = int(sys.argv[2])
            with nt.Telemetry("producer", dir=sys.argv[1], buffer_size=1024,
                              run_interval_ms=1) as t:
                h = t.handle(nt.Category.CUSTOM, "seq")
                print("ready", flush=True)
                for i in range(count):
                    h.record(i)
                    if i % 500 == 499:
                        t.flush()
                        while t.stats()["pending"]:
                            time.sleep(0.001)
                        time.sleep(0.01)
            stats = t.stats()
            print(stats["dropped"], stats["generated"], flush=True)
        """), str(tmp_path), str(count)],
        stdout=subprocess.PIPE, text=True,
    )
    assert producer.stdout.readline().strip() == "ready"
    got = []
    ring = Ring(tmp_path / "producer")
    try:
        while producer.poll() is None:
            got.extend(ring.read())
        got.extend(ring.read())
        dropped, generated = map(int, producer.stdout.read().split())
    finally:
        producer.kill()
        producer.wait()
    assert producer.returncode == 0
    assert dropped == ring.events_lost
    assert len(got) + dropped == count + generated
    seq = [e.value for e in got if e.name == "seq"]
    assert seq == sorted(set(seq))
    if dropped == 0:
        assert seq == list(range(count))
