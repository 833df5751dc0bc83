"""Tests of python/telemetry_reader.py (unittest only).

Run from the repository root:  python3 -m unittest discover -s python/tests -v
"""

import ast
import hashlib
import io
import json
import os
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.dont_write_bytecode = True

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
REPO = os.path.dirname(PYTHON_DIR)
READER = os.path.join(PYTHON_DIR, "telemetry_reader.py")
FIXTURES = os.path.join(REPO, "tests", "data", "nixl_v1")
FIXTURE_NAMES = ("nixl_v1_basic", "nixl_v1_wrapped", "nixl_v1_full", "nixl_v1_empty",
                 "nixl_v1_name31")

sys.path.insert(0, PYTHON_DIR)
import telemetry_reader  # noqa: E402

HEADER = struct.Struct("<QQiiQQ")
SLOT = struct.Struct("<Qi32s4sQ")
TRAILER = struct.Struct("<8sIIIIQQQQQ")
TAIL = "===========================\n"


# --- building rings byte by byte ---

def slot_bytes(ts, cat, name, value, pad=b"\0\0\0\0"):
    raw = name if isinstance(name, bytes) else name.encode("utf-8")
    return SLOT.pack(ts, cat, raw, pad, value)      # "32s" NUL-pads short names


def trailer_bytes(pid=4242, flags=0, created_us=1, written=10, staging=3, ring_full=4,
                  last_flush_us=2, magic=b"NXTLTRL\0", version=1, size=64):
    return TRAILER.pack(magic, version, size, pid, flags, created_us, written, staging,
                        ring_full, last_flush_us)


def ring_bytes(capacity, events=(), read_pos=0, write_pos=None, version=1, mask=None,
               trailer=b"", slots=None):
    """A ring whose unread events `events` start at `read_pos`."""
    slots = list(slots) if slots is not None else [bytes(56)] * capacity
    for i, ev in enumerate(events):
        slots[(read_pos + i) % capacity] = slot_bytes(*ev)
    if write_pos is None:
        write_pos = (read_pos + len(events)) % capacity
    if mask is None:
        mask = capacity - 1
    header = HEADER.pack(write_pos, read_pos, version, 1, capacity, mask)
    return header + b"".join(slots) + trailer


def positions(path):
    with open(path, "rb") as f:
        write_pos, read_pos = struct.unpack("<QQ", f.read(16))
    return write_pos, read_pos


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# --- running the reader ---

def reader_env(tz="UTC"):
    env = dict(os.environ)
    env["TZ"] = tz
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("PYTHONWARNINGS", None)
    return env


def interpreter_for_others():
    """A Python 3 that a user other than the owner may run (for the nobody test)."""
    for candidate in (sys.executable, "/usr/bin/python3", shutil.which("python3")):
        if not candidate:
            continue
        path = os.path.realpath(candidate)
        parts = [path] + [os.path.dirname(path)]
        while parts[-1] != os.path.dirname(parts[-1]):
            parts.append(os.path.dirname(parts[-1]))
        try:
            if all(os.stat(p).st_mode & stat.S_IXOTH for p in parts):
                return path
        except OSError:
            continue
    return None


def run_reader(*args, tz="UTC", timeout=30, python=None, **kwargs):
    return subprocess.run([python or sys.executable, READER] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=reader_env(tz), timeout=timeout, **kwargs)


def text_blocks(reader_txt):
    """The event blocks of a .reader.txt: from the blank line before the first
    `===` line to the last `=====` line, newline included."""
    first = reader_txt.find("\n\n=== NIXL Telemetry Event ===\n")
    if first < 0:
        return ""
    last = reader_txt.rfind(TAIL)
    return reader_txt[first + 1:last + len(TAIL)]


class Follower:
    """A reader in follow mode, its output gathered by threads."""

    def __init__(self, *args, env=None):
        self.proc = subprocess.Popen([sys.executable, READER] + list(args),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env or reader_env())
        self.out = bytearray()
        self.err = bytearray()
        self.threads = [threading.Thread(target=self._pump, args=(self.proc.stdout, self.out)),
                        threading.Thread(target=self._pump, args=(self.proc.stderr, self.err))]
        for t in self.threads:
            t.daemon = True
            t.start()

    @staticmethod
    def _pump(stream, into):
        for chunk in iter(lambda: stream.read1(65536), b""):
            into.extend(chunk)

    def wait_for(self, predicate, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self):
                return True
            if self.proc.poll() is not None:
                time.sleep(0.05)
                return predicate(self)
            time.sleep(0.02)
        return predicate(self)

    def stdout_text(self):
        return bytes(self.out).decode("utf-8")

    def stderr_text(self):
        return bytes(self.err).decode("utf-8", "replace")

    def stop(self, signum=signal.SIGINT, timeout=10):
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
        code = self.proc.wait(timeout)
        for t in self.threads:
            t.join(5)
        return code

    def kill(self):
        """Cleanup: ends the process if it still runs and closes the pipes."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(5)
        for t in self.threads:
            t.join(5)
        self.proc.stdout.close()
        self.proc.stderr.close()


class TempDirTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="telemetry-reader-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def write(self, name, data):
        path = os.path.join(self.tmp, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def copy_fixture(self, name, into=None):
        dst = os.path.join(into or self.tmp, name + ".ring")
        shutil.copyfile(os.path.join(FIXTURES, name + ".ring"), dst)
        return dst


# --- fixtures written by NIXL itself ---

class FixtureTests(TempDirTest):
    def test_fixture_folder_is_present(self):
        for name in FIXTURE_NAMES:
            for ext in (".ring", ".json", ".reader.txt"):
                self.assertTrue(os.path.isfile(os.path.join(FIXTURES, name + ext)), name + ext)

    def test_fixture_headers_are_as_recorded(self):
        # A consuming reader run on a shared fixture advances its read_pos for
        # everybody; say so plainly instead of failing with odd diffs below.
        for name in FIXTURE_NAMES:
            with self.subTest(fixture=name):
                with open(os.path.join(FIXTURES, name + ".json")) as f:
                    meta = json.load(f)
                path = os.path.join(FIXTURES, name + ".ring")
                self.assertEqual(os.path.getsize(path), meta["file_size"])
                self.assertEqual(
                    positions(path), (meta["header"]["write_pos"], meta["header"]["read_pos"]),
                    "%s was modified (consumed?) after it was recorded; its .json has the "
                    "original positions" % path)

    def test_json_output_equals_the_events_of_each_fixture(self):
        for name in FIXTURE_NAMES:
            with self.subTest(fixture=name):
                ring = os.path.join(FIXTURES, name + ".ring")
                before = sha(ring)
                with open(os.path.join(FIXTURES, name + ".json")) as f:
                    expected = json.load(f)["events"]
                res = run_reader("--telemetry_path", ring, "--json", "--once", "--peek")
                self.assertEqual(res.returncode, 0, res.stderr)
                got = [json.loads(line) for line in res.stdout.decode().splitlines()]
                want = [{"timestamp_us": e["timestamp_us"], "category": e["category_str"],
                         "category_id": e["category"], "name": e["name"], "value": e["value"]}
                        for e in expected]
                self.assertEqual(got, want)
                for line in res.stdout.decode().splitlines():
                    self.assertEqual(list(json.loads(line)),
                                     ["timestamp_us", "category", "category_id", "name", "value"])
                self.assertEqual(sha(ring), before, "--peek changed the fixture")

    def test_text_output_equals_the_event_blocks_of_each_reader_transcript(self):
        for name in FIXTURE_NAMES:
            with self.subTest(fixture=name):
                ring = os.path.join(FIXTURES, name + ".ring")
                with open(os.path.join(FIXTURES, name + ".reader.txt")) as f:
                    transcript = f.read()
                res = run_reader("--telemetry_path", ring, "--once", "--peek", tz="UTC")
                self.assertEqual(res.returncode, 0, res.stderr)
                self.assertEqual(res.stdout.decode(), text_blocks(transcript))
                with open(os.path.join(FIXTURES, name + ".json")) as f:
                    events = json.load(f)["events"]
                stamps = [line[len("Timestamp: "):] for line in res.stdout.decode().splitlines()
                          if line.startswith("Timestamp: ")]
                self.assertEqual(stamps, [e["reader_timestamp_utc"] for e in events])

    def test_stdout_carries_only_events_and_stderr_the_rest(self):
        ring = os.path.join(FIXTURES, "nixl_v1_basic.ring")
        res = run_reader("--telemetry_path", ring, "--once", "--peek")
        err = res.stderr.decode()
        self.assertIn("Telemetry path: %s\n" % ring, err)
        self.assertIn("Buffer capacity: 8 events\n", err)
        self.assertIn("Ring version: 1\n", err)
        self.assertIn("Current events in buffer: 5\n", err)
        self.assertTrue(err.endswith("Total events read: 5\n"), err)
        self.assertNotIn("lost", err)            # NIXL's files have no trailer
        self.assertTrue(res.stdout.decode().startswith("\n=== NIXL Telemetry Event ===\n"))

    def test_text_output_uses_local_time(self):
        ring = os.path.join(FIXTURES, "nixl_v1_full.ring")
        res = run_reader("--telemetry_path", ring, "--once", "--peek", tz="JST-9")
        stamps = [line for line in res.stdout.decode().splitlines()
                  if line.startswith("Timestamp: ")]
        self.assertEqual(stamps, ["Timestamp: 2025-11-29 08:59:59.999000",
                                  "Timestamp: 2025-11-29 09:00:00.000000",
                                  "Timestamp: 2025-11-29 09:00:00.001000"])


# --- consuming versus peeking ---

class ConsumeTests(TempDirTest):
    def test_a_consuming_read_empties_the_ring_and_peek_does_not(self):
        for name in ("nixl_v1_basic", "nixl_v1_wrapped", "nixl_v1_full"):
            with self.subTest(fixture=name):
                ring = self.copy_fixture(name)
                write_pos, _ = positions(ring)
                first = run_reader("--telemetry_path", ring, "--once", "--peek", "--json")
                again = run_reader("--telemetry_path", ring, "--once", "--peek", "--json")
                self.assertTrue(first.stdout)
                self.assertEqual(first.stdout, again.stdout)
                consumed = run_reader("--telemetry_path", ring, "--once", "--json")
                self.assertEqual(consumed.returncode, 0, consumed.stderr)
                self.assertEqual(consumed.stdout, first.stdout)
                self.assertEqual(positions(ring), (write_pos, write_pos))
                second = run_reader("--telemetry_path", ring, "--once", "--json")
                self.assertEqual((second.returncode, second.stdout), (0, b""))
                peek = run_reader("--telemetry_path", ring, "--once", "--peek")
                self.assertEqual((peek.returncode, peek.stdout), (0, b""))

    def test_peek_never_writes(self):
        ring = self.copy_fixture("nixl_v1_basic")
        os.utime(ring, (1_000_000_000, 1_000_000_000))
        before = sha(ring)
        res = run_reader("--telemetry_path", ring, "--once", "--peek")
        self.assertEqual(res.returncode, 0)
        self.assertEqual(sha(ring), before)
        self.assertEqual(os.stat(ring).st_mtime, 1_000_000_000)

    def test_peek_works_on_a_file_the_user_cannot_write(self):
        os.chmod(self.tmp, 0o755)
        ring = self.copy_fixture("nixl_v1_basic")
        os.chmod(ring, 0o444)
        kwargs = {}
        if os.geteuid() == 0:       # root writes anything: run as nobody instead
            python = interpreter_for_others()
            if python is None:
                self.skipTest("running as root and no Python interpreter other users can run")
            kwargs["python"] = python

            def drop():
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
            kwargs["preexec_fn"] = drop
        peek = run_reader("--telemetry_path", ring, "--once", "--peek", **kwargs)
        self.assertEqual(peek.returncode, 0, peek.stderr)
        self.assertEqual(peek.stdout.count(b"=== NIXL Telemetry Event ==="), 5)
        consume = run_reader("--telemetry_path", ring, "--once", **kwargs)
        self.assertEqual(consume.returncode, 2)
        self.assertEqual(consume.stdout, b"")
        err = consume.stderr.decode()
        self.assertIn(ring, err)
        self.assertIn("permission denied", err)
        self.assertIn("--peek", err)

    def test_batches_commit_read_pos_and_wrap(self):
        # In-process with a tiny batch so that one read spans several batches
        # and the wrap at the end of the slot array.
        events = [(1_700_000_000_000_000 + i, 1, "ev%d" % i, i) for i in range(13)]
        ring = self.write("agent", ring_bytes(16, events, read_pos=9))
        out, err, code = run_in_process(["--telemetry_path", ring, "--once", "--json"],
                                        batch=4)
        self.assertEqual(code, 0, err)
        self.assertEqual([json.loads(l)["value"] for l in out.splitlines()], list(range(13)))
        self.assertEqual(positions(ring), (6, 6))

    def test_consuming_without_ctypes_views(self):
        # The path taken on big-endian hosts: positions through struct.
        events = [(1_700_000_000_000_000 + i, 1, "ev%d" % i, i) for i in range(5)]
        ring = self.write("agent", ring_bytes(8, events, read_pos=6))
        saved = telemetry_reader.NATIVE_LITTLE_ENDIAN
        telemetry_reader.NATIVE_LITTLE_ENDIAN = False
        try:
            out, err, code = run_in_process(["--telemetry_path", ring, "--once", "--json"],
                                            batch=2)
        finally:
            telemetry_reader.NATIVE_LITTLE_ENDIAN = saved
        self.assertEqual(code, 0, err)
        self.assertEqual([json.loads(l)["value"] for l in out.splitlines()], list(range(5)))
        self.assertEqual(positions(ring), (3, 3))

    def test_a_peeking_reader_follows_read_pos_moved_past_it(self):
        path = self.write("agent", ring_bytes(8, [(1, 1, "a", 1), (2, 1, "b", 2)]))
        ring = telemetry_reader.Ring(path, "agent", peek=True)
        try:
            self.assertEqual(ring.pending(), (0, 2))
            ring.advance(2)
            self.assertEqual(ring.pending(), (2, 0))
            # Meanwhile a consumer read up to slot 6 and the producer wrote up to slot 1.
            with open(path, "r+b") as fh:
                fh.write(struct.pack("<QQ", 1, 6))
            self.assertEqual(ring.pending(), (6, 3))
            self.assertEqual(positions(path), (1, 6))
        finally:
            ring.close()

    def test_follow_mode_sees_new_events_and_stops_on_signals(self):
        for signum in (signal.SIGINT, signal.SIGTERM):
            with self.subTest(signal=signum):
                ring = self.write("live-%d" % signum, ring_bytes(8, [(1, 2, "first", 1)]))
                f = Follower("--telemetry_path", ring, "--json")
                try:
                    self.assertTrue(f.wait_for(lambda f: f.stdout_text().count("\n") == 1))
                    # Play the producer: fill two slots, then publish write_pos.
                    with open(ring, "r+b") as fh:
                        fh.seek(40 + 56 * 1)
                        fh.write(slot_bytes(2, 1, "second", 2) + slot_bytes(3, 1, "third", 3))
                        fh.flush()
                        fh.seek(0)
                        fh.write(struct.pack("<Q", 3))
                    self.assertTrue(f.wait_for(lambda f: f.stdout_text().count("\n") == 3))
                    code = f.stop(signum)
                finally:
                    f.kill()
                self.assertEqual(code, 0, f.stderr_text())
                names = [json.loads(l)["name"] for l in f.stdout_text().splitlines()]
                self.assertEqual(names, ["first", "second", "third"])
                self.assertIn("Total events read: 3\n", f.stderr_text())
                self.assertNotIn("Traceback", f.stderr_text())
                self.assertEqual(positions(ring), (3, 3))

    def test_closed_stdout_is_reported_without_traceback(self):
        events = [(1_700_000_000_000_000, 1, "agent_tx_bytes", i) for i in range(3000)]
        ring = self.write("agent", ring_bytes(4096, events))
        proc = subprocess.Popen([sys.executable, READER, "--telemetry_path", ring, "--once"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=reader_env())
        proc.stdout.read(10)
        proc.stdout.close()
        err = proc.stderr.read().decode()
        proc.stderr.close()
        self.assertEqual(proc.wait(10), 1, err)
        self.assertIn("stdout was closed", err)
        self.assertNotIn("Traceback", err)
        self.assertEqual(positions(ring), (3000, 0), "an unprinted batch was consumed")


def run_in_process(argv, batch=None):
    """Runs main() in this process; returns (stdout text, stderr text, exit code)."""
    out, err = io.BytesIO(), io.StringIO()
    saved = sys.stdout, sys.stderr, telemetry_reader.BATCH_EVENTS
    wrapper = io.TextIOWrapper(out, encoding="utf-8")
    sys.stdout, sys.stderr = wrapper, err
    if batch:
        telemetry_reader.BATCH_EVENTS = batch
    try:
        code = telemetry_reader.main(argv)
        wrapper.flush()
    finally:
        sys.stdout, sys.stderr, telemetry_reader.BATCH_EVENTS = saved
        wrapper.detach()
    return out.getvalue().decode("utf-8"), err.getvalue(), code


# --- hostile and broken files ---

class HostileFileTests(TempDirTest):
    def assert_rejected(self, path, *fragments, args=()):
        for mode in ((), ("--peek",)):
            res = run_reader("--telemetry_path", path, "--once", *mode, *args)
            err = res.stderr.decode()
            self.assertEqual(res.returncode, 2, err)
            self.assertEqual(res.stdout, b"")
            self.assertNotIn("Traceback", err)
            self.assertEqual(len(err.splitlines()), 1, err)
            self.assertIn(path, err)
            for fragment in fragments:
                self.assertIn(fragment, err)

    def test_missing_file(self):
        self.assert_rejected(os.path.join(self.tmp, "nope"), "no such file or directory")

    def test_directory_without_rings(self):
        empty = os.path.join(self.tmp, "empty")
        os.mkdir(empty)
        self.assert_rejected(empty, "holds no ring files")
        junk = os.path.join(self.tmp, "junk")
        os.mkdir(junk)
        with open(os.path.join(junk, "notes.txt"), "w") as f:
            f.write("hello")
        res = run_reader("--telemetry_path", junk, "--once")
        self.assertEqual(res.returncode, 2)
        err = res.stderr.decode()
        self.assertIn("notes.txt: file is 5 bytes, too short", err)
        self.assertIn("holds no ring files (1 other files skipped)", err)
        self.assertNotIn("Traceback", err)

    def test_file_too_short_for_the_header(self):
        for size in (0, 39):
            with self.subTest(size=size):
                path = self.write("short%d" % size, ring_bytes(1)[:size])
                self.assert_rejected(path, "file is %d bytes, too short for the 40-byte ring "
                                           "header" % size)

    def test_wrong_version(self):
        for version in (0, 5, -1):
            with self.subTest(version=version):
                path = self.write("v%d" % version, ring_bytes(4, version=version))
                self.assert_rejected(path, "ring version %d; this reader accepts versions 1, 2, "
                                     "3 and 4" % version)

    def test_capacity_zero_or_not_a_power_of_two(self):
        path = self.write("cap0", HEADER.pack(0, 0, 1, 1, 0, 2 ** 64 - 1) + bytes(56))
        self.assert_rejected(path, "capacity 0 is not a power of two")
        path = self.write("cap6", ring_bytes(6, mask=5))
        self.assert_rejected(path, "capacity 6 is not a power of two")
        path = self.write("cap1", ring_bytes(1))
        self.assert_rejected(path, "capacity 1: a one-slot ring can hold no event")

    def test_capacity_larger_than_the_file(self):
        path = self.write("big", ring_bytes(8)[:-1])
        self.assert_rejected(path, "version 1 capacity 8 needs 488 bytes (40-byte header + 8 x "
                                   "56-byte slots)", "the file has 487")
        huge = 2 ** 63
        path = self.write("huge", HEADER.pack(0, 0, 1, 1, huge, huge - 1) + bytes(56))
        self.assert_rejected(path, "capacity %d is invalid (it overflows the address space)"
                             % huge)

    def test_mask_is_not_capacity_minus_one(self):
        path = self.write("mask", ring_bytes(8, mask=15))
        self.assert_rejected(path, "mask 15 is not capacity - 1 = 7")

    def test_positions_outside_the_ring(self):
        path = self.write("wpos", ring_bytes(8, write_pos=8))
        self.assert_rejected(path, "write_pos 8 is outside [0, 8)")
        path = self.write("rpos", ring_bytes(8, read_pos=2 ** 64 - 1, write_pos=0))
        self.assert_rejected(path, "read_pos %d is outside [0, 8)" % (2 ** 64 - 1))

    def test_not_a_regular_file(self):
        fifo = os.path.join(self.tmp, "fifo")
        os.mkfifo(fifo)
        self.assert_rejected(fifo, "not a regular file")

    def test_name_without_nul_is_skipped_with_a_warning(self):
        events = [(1_700_000_000_000_000, 1, "good_one", 1),
                  (1_700_000_000_000_001, 1, b"x" * 32, 2),
                  (1_700_000_000_000_002, 1, "good_two", 3)]
        path = self.write("agent", ring_bytes(8, events, read_pos=3))
        res = run_reader("--telemetry_path", path, "--once", "--json")
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual([json.loads(l)["name"] for l in res.stdout.decode().splitlines()],
                         ["good_one", "good_two"])
        err = res.stderr.decode()
        self.assertIn("%s: slot 4: event name has no NUL terminator" % path, err)
        self.assertIn("Malformed slots skipped: 1\n", err)
        self.assertIn("Total events read: 2\n", err)
        self.assertEqual(positions(path), (6, 6))

    def test_many_malformed_slots_warn_a_bounded_number_of_times(self):
        events = [(1, 1, b"y" * 32, i) for i in range(40)]
        path = self.write("agent", ring_bytes(64, events))
        res = run_reader("--telemetry_path", path, "--once", "--peek")
        err = res.stderr.decode()
        self.assertEqual(res.returncode, 0)
        self.assertEqual(err.count("no NUL terminator"), 10)
        self.assertIn("Malformed slots skipped: 40\n", err)

    def test_file_truncated_while_being_read(self):
        for new_size in (100, 0):
            with self.subTest(size=new_size):
                path = self.write("agent%d" % new_size, ring_bytes(8, [(1, 1, "a", 1)]))
                f = Follower("--telemetry_path", path, "--json")
                try:
                    self.assertTrue(f.wait_for(lambda f: f.stdout_text().count("\n") == 1))
                    os.truncate(path, new_size)
                    self.assertTrue(f.wait_for(lambda f: f.proc.poll() is not None, 10))
                    code = f.stop()
                finally:
                    f.kill()
                err = f.stderr_text()
                self.assertEqual(code, 2, err)
                self.assertIn("%s: file truncated to %d bytes while being read; the ring needs "
                              "488 bytes" % (path, new_size), err)
                self.assertNotIn("Traceback", err)

    def test_positions_corrupted_while_following(self):
        path = self.write("agent", ring_bytes(8, [(1, 1, "a", 1)]))
        f = Follower("--telemetry_path", path, "--json")
        try:
            self.assertTrue(f.wait_for(lambda f: f.stdout_text().count("\n") == 1))
            with open(path, "r+b") as fh:
                fh.write(struct.pack("<Q", 99))
            self.assertTrue(f.wait_for(lambda f: f.proc.poll() is not None, 10))
            code = f.stop()
        finally:
            f.kill()
        err = f.stderr_text()
        self.assertEqual(code, 2, err)
        self.assertIn("%s: write_pos 99 is outside [0, 8)" % path, err)
        self.assertNotIn("Traceback", err)

    def test_bad_category_argument(self):
        ring = os.path.join(FIXTURES, "nixl_v1_basic.ring")
        res = run_reader("--telemetry_path", ring, "--once", "--peek", "--category", "NOPE")
        self.assertEqual(res.returncode, 2)
        self.assertIn("unknown category", res.stderr.decode())

    def test_missing_path_argument_is_a_usage_error(self):
        res = run_reader("--once")
        self.assertEqual(res.returncode, 2)
        self.assertIn("--telemetry_path", res.stderr.decode())


# --- decoding details ---

class DecodingTests(TempDirTest):
    def test_odd_values_print_as_specified(self):
        events = [
            (1_749_737_007_999_999, 9, "unknown_cat", 2 ** 64 - 1),
            (1_749_737_008_000_000, -3, "negative_cat", 0),
            (2 ** 64 - 1, 7, "far_future", 1),
            (0, 6, "epoch", 1),
        ]
        path = self.write("agent", ring_bytes(8, events, read_pos=6))
        res = run_reader("--telemetry_path", path, "--once", "--peek")
        self.assertEqual(res.stdout.decode(), "".join(
            "\n=== NIXL Telemetry Event ===\nTimestamp: %s\nCategory: %s\nEvent: %s\n"
            "Value: %s\n%s" % (t, c, n, v, TAIL) for t, c, n, v in [
                ("2025-06-12 14:03:27.999999", "UNKNOWN_CATEGORY_9", "unknown_cat",
                 "18446744073709551615"),
                ("2025-06-12 14:03:28.000000", "UNKNOWN_CATEGORY_-3", "negative_cat", "0"),
                ("@18446744073709.551615", "CUSTOM", "far_future", "1"),
                ("1970-01-01 00:00:00.000000", "SYSTEM", "epoch", "1"),
            ]))

    def test_seconds_never_round_up(self):
        # As a float, ts / 1e6 is exactly 10000000000.0: the next second.
        ts = 9_999_999_999_999_999
        self.assertEqual(ts / 1e6, 10_000_000_000.0)
        path = self.write("agent", ring_bytes(4, [(ts, 1, "x", 1)]))
        res = run_reader("--telemetry_path", path, "--once", "--peek")
        self.assertIn(b"Timestamp: 2286-11-20 17:46:39.999999\n", res.stdout)

    def test_names_are_utf8_with_replacement_and_padding_is_ignored(self):
        events = [(1, 1, "caf\u00e9 \u2192 \U0001F680", 1, b"\xfc\x7e\0\0"),
                  (2, 1, b"bad\xff\xfeend", 2, b"\xff\xff\xff\xff"),
                  (3, 1, b"cut\xe2\x82", 3),
                  (4, 1, b"stop\0garbage-after-nul", 4),
                  (5, 1, 'quote" back\\ tab\t nl\n bell\x07', 5)]
        path = self.write("agent", ring_bytes(8, events))
        res = run_reader("--telemetry_path", path, "--once", "--peek", "--json")
        lines = res.stdout.decode("utf-8").splitlines()
        self.assertEqual([json.loads(l)["name"] for l in lines],
                         ["caf\u00e9 \u2192 \U0001F680", "bad\ufffd\ufffdend", "cut\ufffd",
                          "stop", 'quote" back\\ tab\t nl\n bell\x07'])
        self.assertEqual([json.loads(l)["value"] for l in lines], [1, 2, 3, 4, 5])
        # Compact, UTF-8 as is, control characters escaped.
        self.assertEqual(lines[0], '{"timestamp_us":1,"category":"TRANSFER","category_id":1,'
                                   '"name":"caf\u00e9 \u2192 \U0001F680","value":1}')
        self.assertIn(r'"name":"quote\" back\\ tab\t nl\n bell\u0007"', lines[4])
        text = run_reader("--telemetry_path", path, "--once", "--peek").stdout.decode()
        self.assertIn("Event: bad\ufffd\ufffdend\n", text)

    def test_module_parses_as_python_3_8(self):
        with open(READER) as f:
            ast.parse(f.read(), READER, feature_version=(3, 8))

    def test_reader_is_executable(self):
        self.assertTrue(os.stat(READER).st_mode & stat.S_IXUSR)
        with open(READER) as f:
            self.assertEqual(f.readline(), "#!/usr/bin/env python3\n")


# --- filters ---

class FilterTests(unittest.TestCase):
    RING = os.path.join(FIXTURES, "nixl_v1_basic.ring")

    def names(self, *args):
        res = run_reader("--telemetry_path", self.RING, "--once", "--peek", "--json", *args)
        self.assertEqual(res.returncode, 0, res.stderr)
        return [json.loads(l)["name"] for l in res.stdout.decode().splitlines()]

    def test_category_by_name_number_or_constant(self):
        for arg in ("TRANSFER", "transfer", "1", "NIXL_TELEMETRY_TRANSFER"):
            self.assertEqual(self.names("--category", arg), ["agent_tx_bytes"], arg)
        self.assertEqual(self.names("--category", "ERROR", "--category", "5"),
                         ["agent_xfer_time", "NIXL_ERR_BACKEND"])
        self.assertEqual(self.names("--category", "UNKNOWN_CATEGORY_9"), [])

    def test_name_glob(self):
        self.assertEqual(self.names("--name", "agent_*"),
                         ["agent_memory_registered", "agent_xfer_time", "agent_tx_bytes"])
        self.assertEqual(self.names("--name", "*_ERR_*", "--name", "ucx?rdma*"),
                         ["NIXL_ERR_BACKEND", "ucx_rdma_writes"])
        self.assertEqual(self.names("--name", "AGENT_*"), [])     # case-sensitive

    def test_filters_combine(self):
        self.assertEqual(self.names("--name", "agent_*", "--category", "PERFORMANCE"),
                         ["agent_xfer_time"])

    def test_filtered_text_and_totals(self):
        res = run_reader("--telemetry_path", self.RING, "--once", "--peek", "--name", "x*")
        self.assertEqual(res.stdout, b"")
        self.assertIn("Total events read: 5\nEvents matching the filters: 0\n",
                      res.stderr.decode())


# --- summary ---

class SummaryTests(TempDirTest):
    def test_summary_table(self):
        events = [(1, 5, "agent_xfer_time", v) for v in range(100, 0, -1)]
        events += [(2, 1, "agent_tx_bytes", 4096)] * 3
        path = self.write("node1", ring_bytes(128, events))
        res = run_reader("--telemetry_path", path, "--once", "--summary")
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(res.stdout.decode(), (
            "Agent: node1\n"
            "CATEGORY     EVENT            COUNT    SUM   MIN   MAX  P50  P90  P99\n"
            "TRANSFER     agent_tx_bytes       3  12288  4096  4096    -    -    -\n"
            "PERFORMANCE  agent_xfer_time    100   5050     1   100   50   90   99\n"))
        self.assertEqual(positions(path), (103, 103))      # summary consumes too

    def test_nearest_rank(self):
        nr = telemetry_reader.nearest_rank
        self.assertEqual([nr([7], p) for p in (50, 90, 99)], [7, 7, 7])
        self.assertEqual([nr([1, 2], p) for p in (50, 90, 99)], [1, 2, 2])
        values = list(range(1, 11))
        self.assertEqual([nr(values, p) for p in (50, 90, 99)], [5, 9, 10])
        values = list(range(1, 1001))
        self.assertEqual([nr(values, p) for p in (50, 90, 99)], [500, 900, 990])

    def test_summary_per_agent_in_directory_mode(self):
        self.write("rings/b", ring_bytes(8, [(1, 4, "NIXL_ERR_BACKEND", 1)] * 2))
        self.write("rings/a", ring_bytes(8, [(1, 5, "agent_xfer_post_time", 7)]))
        self.write("rings/c", ring_bytes(8))
        res = run_reader("--telemetry_path", os.path.join(self.tmp, "rings"), "--once",
                         "--peek", "--summary")
        self.assertEqual(res.stdout.decode(), (
            "Agent: a\n"
            "CATEGORY     EVENT                 COUNT  SUM  MIN  MAX  P50  P90  P99\n"
            "PERFORMANCE  agent_xfer_post_time      1    7    7    7    7    7    7\n"
            "\n"
            "Agent: b\n"
            "CATEGORY  EVENT             COUNT  SUM  MIN  MAX  P50  P90  P99\n"
            "ERROR     NIXL_ERR_BACKEND      2    2    1    1    -    -    -\n"
            "\n"
            "Agent: c\n"
            "(no events)\n"))

    def test_summary_refreshes_while_following(self):
        path = self.write("node", ring_bytes(8, [(1, 1, "agent_tx_bytes", 10)]))
        f = Follower("--telemetry_path", path, "--summary")
        try:
            self.assertTrue(f.wait_for(lambda f: "agent_tx_bytes" in f.stdout_text()))
            with open(path, "r+b") as fh:
                fh.seek(40 + 56)
                fh.write(slot_bytes(2, 1, "agent_tx_bytes", 30))
                fh.flush()
                fh.seek(0)
                fh.write(struct.pack("<Q", 2))
            self.assertTrue(f.wait_for(lambda f: " 40 " in f.stdout_text(), 5))
            code = f.stop()
        finally:
            f.kill()
        self.assertEqual(code, 0, f.stderr_text())
        shown = f.stdout_text().split("\n\nSummary at ")
        self.assertEqual(len(shown), 2, f.stdout_text())
        self.assertRegex(shown[0], r"^Summary at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\n\nAgent: node\n")
        self.assertIn("agent_tx_bytes      1   10   10   10", shown[0])
        self.assertIn("agent_tx_bytes      2   40   10   30", shown[1])
        self.assertTrue(shown[1].endswith("agent_tx_bytes      2   40   10   30    -    -    -\n"))


# --- the trailer ---

class TrailerTests(TempDirTest):
    def test_lost_events_are_reported(self):
        path = self.write("agent", ring_bytes(4, [(1, 1, "a", 1)],
                                              trailer=trailer_bytes(staging=3, ring_full=4)))
        res = run_reader("--telemetry_path", path, "--once", "--peek")
        err = res.stderr.decode()
        self.assertEqual(res.returncode, 0, err)
        self.assertIn("Producer: pid 4242, running or stopped uncleanly, 10 events written, "
                      "7 lost\n", err)
        self.assertTrue(err.endswith("Total events read: 1\nEvents lost by the producer: 7 "
                                     "(staging buffer full: 3, ring full: 4)\n"), err)

    def test_unknown_trailer_version_is_ignored_with_a_warning(self):
        path = self.write("agent", ring_bytes(4, trailer=trailer_bytes(version=0)))
        res = run_reader("--telemetry_path", path, "--once", "--peek")
        err = res.stderr.decode()
        self.assertEqual(res.returncode, 0, err)
        self.assertIn("warning: %s: unrecognised trailer ignored (trailer version 0" % path, err)
        self.assertNotIn("lost", err)

    def test_closed_flag(self):
        path = self.write("agent", ring_bytes(4, trailer=trailer_bytes(flags=1, staging=0,
                                                                         ring_full=0)))
        err = run_reader("--telemetry_path", path, "--once", "--peek").stderr.decode()
        self.assertIn("closed cleanly", err)
        self.assertIn("Events lost by the producer: 0 (staging buffer full: 0, ring full: 0)",
                      err)

    def test_no_trailer_without_magic_or_room(self):
        for name, trailer in (("magic", trailer_bytes(magic=b"NOTATRLR")),
                              ("short", trailer_bytes()[:63])):
            with self.subTest(name):
                path = self.write(name, ring_bytes(4, trailer=trailer))
                res = run_reader("--telemetry_path", path, "--once", "--peek")
                self.assertEqual(res.returncode, 0)
                self.assertNotIn(b"lost", res.stderr)

    def test_trailer_counters_are_reread_at_the_end(self):
        path = self.write("agent", ring_bytes(4, trailer=trailer_bytes(staging=0, ring_full=0)))
        f = Follower("--telemetry_path", path)
        try:
            self.assertTrue(f.wait_for(lambda f: "Press Ctrl+C" in f.stderr_text()))
            with open(path, "r+b") as fh:
                fh.seek(40 + 4 * 56 + 48)
                fh.write(struct.pack("<Q", 5))
            time.sleep(0.15)
            code = f.stop()
        finally:
            f.kill()
        self.assertEqual(code, 0)
        self.assertIn("Events lost by the producer: 5 (staging buffer full: 0, ring full: 5)",
                      f.stderr_text())


# --- directory mode ---

class DirectoryTests(TempDirTest):
    def test_every_ring_of_a_directory_is_tagged_with_its_agent(self):
        d = os.path.join(self.tmp, "rings")
        self.write("rings/target", ring_bytes(4, [(1_700_000_000_000_000, 1, "agent_rx_bytes", 8)]))
        self.write("rings/initiator", ring_bytes(4, [(1_700_000_000_000_001, 1, "agent_tx_bytes",
                                                      8), (1_700_000_000_000_002, 5,
                                                           "agent_xfer_time", 3)]))
        self.write("rings/README", b"not a ring")
        self.write("rings/.initiator.77.0.tmp", b"")          # a writer's file in the making
        os.mkdir(os.path.join(d, "subdir"))
        res = run_reader("--telemetry_path", d, "--once", "--peek", "--json")
        self.assertEqual(res.returncode, 0, res.stderr)
        got = [json.loads(l) for l in res.stdout.decode().splitlines()]
        self.assertEqual([(e["agent"], e["name"]) for e in got],
                         [("initiator", "agent_tx_bytes"), ("initiator", "agent_xfer_time"),
                          ("target", "agent_rx_bytes")])
        self.assertEqual(list(got[0]), ["timestamp_us", "category", "category_id", "name",
                                        "value", "agent"])
        err = res.stderr.decode()
        self.assertIn("warning: skipping %s: file is 10 bytes, too short" %
                      os.path.join(d, "README"), err)
        self.assertIn("Total events read: 3\n", err)
        self.assertNotIn(".tmp", err)
        text = run_reader("--telemetry_path", d, "--once", "--peek").stdout.decode()
        self.assertTrue(text.startswith(
            "\n=== NIXL Telemetry Event ===\nAgent: initiator\nTimestamp: 2023-11-14 "
            "22:13:20.000001\nCategory: TRANSFER\nEvent: agent_tx_bytes\nValue: 8\n" + TAIL))
        self.assertEqual(text.count("\nAgent: "), 3)

    def test_a_late_agent_is_picked_up(self):
        d = os.path.join(self.tmp, "rings")
        self.write("rings/agent_a", ring_bytes(8, [(1, 1, "a1", 1), (2, 1, "a2", 2)]))
        f = Follower("--telemetry_path", d, "--json")
        try:
            self.assertTrue(f.wait_for(lambda f: f.stdout_text().count("\n") == 2))
            # A complete file appears at once ...
            staged = self.write("staging/agent_b", ring_bytes(8, [(3, 1, "b1", 3),
                                                                  (4, 1, "b2", 4)]))
            os.rename(staged, os.path.join(d, "agent_b"))
            self.assertTrue(f.wait_for(lambda f: f.stdout_text().count("\n") == 4))
            # ... another one is created empty and filled in later.
            late = os.path.join(d, "agent_c")
            open(late, "wb").close()
            self.assertTrue(f.wait_for(lambda f: "agent_c" in f.stderr_text()))
            time.sleep(0.25)
            with open(late, "r+b") as fh:
                fh.write(ring_bytes(8, [(5, 7, "c1", 5)]))
            self.assertTrue(f.wait_for(lambda f: f.stdout_text().count("\n") == 5))
            code = f.stop()
        finally:
            f.kill()
        err = f.stderr_text()
        self.assertEqual(code, 0, err)
        got = [json.loads(l) for l in f.stdout_text().splitlines()]
        self.assertEqual([(e["agent"], e["name"]) for e in got],
                         [("agent_a", "a1"), ("agent_a", "a2"), ("agent_b", "b1"),
                          ("agent_b", "b2"), ("agent_c", "c1")])
        self.assertEqual(err.count("skipping %s: file is 0 bytes" % late), 1, err)
        self.assertIn("Total events read: 5\n", err)
        for name in ("agent_a", "agent_b", "agent_c"):
            path = os.path.join(d, name)
            write_pos, read_pos = positions(path)
            self.assertEqual(write_pos, read_pos, name)

    def test_a_replaced_ring_file_is_read_to_its_end_then_reopened(self):
        d = os.path.join(self.tmp, "rings")
        self.write("rings/agent", ring_bytes(8, [(1, 1, "old1", 1)]))
        f = Follower("--telemetry_path", d, "--json")
        try:
            self.assertTrue(f.wait_for(lambda f: f.stdout_text().count("\n") == 1))
            staged = self.write("staging/agent", ring_bytes(8, [(2, 1, "new1", 2),
                                                                (3, 1, "new2", 3)]))
            os.rename(staged, os.path.join(d, "agent"))
            self.assertTrue(f.wait_for(lambda f: f.stdout_text().count("\n") == 3))
            code = f.stop()
        finally:
            f.kill()
        self.assertEqual(code, 0, f.stderr_text())
        got = [json.loads(l) for l in f.stdout_text().splitlines()]
        self.assertEqual([(e["agent"], e["name"]) for e in got],
                         [("agent", "old1"), ("agent", "new1"), ("agent", "new2")])
        self.assertIn("Agent agent: ring file removed or replaced; finished reading it",
                      f.stderr_text())
        self.assertIn("Total events read: 3\n", f.stderr_text())

    def test_interleaving_per_round_in_sorted_agent_order(self):
        d = os.path.join(self.tmp, "rings")
        self.write("rings/zeta", ring_bytes(8, [(1, 1, "z1", 1)]))
        self.write("rings/alpha", ring_bytes(8, [(1, 1, "a1", 1)]))
        f = Follower("--telemetry_path", d, "--json", "--peek")
        try:
            self.assertTrue(f.wait_for(lambda f: f.stdout_text().count("\n") == 2))
            for name, ev in (("zeta", "z2"), ("alpha", "a2")):
                with open(os.path.join(d, name), "r+b") as fh:
                    fh.seek(40 + 56)
                    fh.write(slot_bytes(2, 1, ev, 2))
                    fh.flush()
                    fh.seek(0)
                    fh.write(struct.pack("<Q", 2))
            self.assertTrue(f.wait_for(lambda f: f.stdout_text().count("\n") == 4))
            code = f.stop()
        finally:
            f.kill()
        self.assertEqual(code, 0)
        names = [json.loads(l)["name"] for l in f.stdout_text().splitlines()]
        self.assertEqual(names[:2], ["a1", "z1"])
        self.assertEqual(sorted(names[2:]), ["a2", "z2"])
        self.assertEqual(positions(os.path.join(d, "alpha")), (2, 0))   # peek wrote nothing

    def test_fixtures_directory_reads_every_fixture(self):
        res = run_reader("--telemetry_path", FIXTURES, "--once", "--peek", "--json")
        self.assertEqual(res.returncode, 0, res.stderr)
        got = [json.loads(l) for l in res.stdout.decode().splitlines()]
        want = []
        for name in sorted(n + ".ring" for n in FIXTURE_NAMES):
            with open(os.path.join(FIXTURES, name[:-5] + ".json")) as f:
                want += [(name, e["name"]) for e in json.load(f)["events"]]
        self.assertEqual([(e["agent"], e["name"]) for e in got], want)
        self.assertIn("skipping", res.stderr.decode())           # README, .json, .txt



# --- ring versions 2-4 (the layouts of NIXL 1.1 ... 1.5) ---

RELEASES_DIR = os.path.join(REPO, "tests", "data", "nixl_releases")
EVENT_TYPES = telemetry_reader.EVENT_TYPES


def versioned_ring(layout, slots, capacity=8, trailer=b"", read_pos=0):
    """A ring of `layout` ("v2-named", "v2-typed", "v3", "v4") holding `slots`:
    (category, name) tuples for v2-named, (category, type, value) for v2-typed,
    (type, value) for v3/v4; the values of named slots are their index."""
    version = {"v2-named": 2, "v2-typed": 2, "v3": 3, "v4": 4}[layout]
    size = {"v2-named": 48, "v2-typed": 16, "v3": 16, "v4": 16}[layout]
    raw = [bytes(size)] * capacity
    for i, slot in enumerate(slots):
        if layout == "v2-named":
            data = struct.pack("<i32s4xQ", slot[0], slot[1].encode(), i)
        elif layout == "v2-typed":
            data = struct.pack("<iIQ", *slot)
        else:
            # NIXL leaves the padding uninitialised: readers must ignore it.
            data = struct.pack("<I4sQ", slot[0], b"\xde\xad\xbe\xef", slot[1])
        raw[(read_pos + i) % capacity] = data
    write_pos = (read_pos + len(slots)) % capacity
    header = HEADER.pack(write_pos, read_pos, version, version, capacity, capacity - 1)
    return header + b"".join(raw) + trailer


class VersionTests(TempDirTest):
    def read(self, path, *args):
        res = run_reader("--once", "--peek", *args, "--telemetry_path", path)
        self.assertEqual(res.returncode, 0, res.stderr.decode())
        return res.stdout.decode(), res.stderr.decode()

    def test_each_version_prints_only_the_fields_it_has(self):
        cases = (
            ("v2-named", [(1, "agent_tx_bytes")],
             "\n=== NIXL Telemetry Event ===\nCategory: TRANSFER\nEvent: agent_tx_bytes\n"
             "Value: 0\n" + TAIL,
             '{"timestamp_us":null,"category":"TRANSFER","category_id":1,'
             '"name":"agent_tx_bytes","value":0}\n'),
            ("v2-typed", [(5, 6, 812)],
             "\n=== NIXL Telemetry Event ===\nCategory: PERFORMANCE\nEvent: agent_xfer_time\n"
             "Value: 812\n" + TAIL,
             '{"timestamp_us":null,"category":"PERFORMANCE","category_id":5,'
             '"name":"agent_xfer_time","value":812}\n'),
            ("v3", [(4, 65536)],
             "\n=== NIXL Telemetry Event ===\nEvent: agent_memory_registered\nValue: 65536\n"
             + TAIL,
             '{"timestamp_us":null,"category":null,"category_id":null,'
             '"name":"agent_memory_registered","value":65536}\n'),
        )
        for layout, slots, text, json_line in cases:
            with self.subTest(layout=layout):
                path = self.write(layout, versioned_ring(layout, slots))
                self.assertEqual(self.read(path)[0], text)
                self.assertEqual(self.read(path, "--json")[0], json_line)

    def test_unknown_types_are_named_by_number_and_tables_differ_by_version(self):
        slots = [(20, 7), (21, 8), (2 ** 32 - 1, 9)]
        v3 = self.read(self.write("v3", versioned_ring("v3", slots)), "--json")[0]
        v4 = self.read(self.write("v4", versioned_ring("v4", slots)), "--json")[0]
        names = lambda out: [json.loads(line)["name"] for line in out.splitlines()]
        self.assertEqual(names(v3), ["unknown_event_20", "unknown_event_21",
                                     "unknown_event_4294967295"])
        self.assertEqual(names(v4), ["agent_telemetry_events_dropped", "unknown_event_21",
                                     "unknown_event_4294967295"])

    def test_version_two_layouts_are_told_apart_by_the_file_size(self):
        named = self.write("named", versioned_ring("v2-named", [(0, "x")]))
        typed = self.write("typed", versioned_ring("v2-typed", [(0, 1, 5)]))
        self.assertIn("Event: x\n", self.read(named)[0])
        self.assertIn("Event: agent_rx_bytes\n", self.read(typed)[0])
        odd = self.write("odd", versioned_ring("v2-typed", [(0, 1, 5)]) + bytes(8))
        res = run_reader("--once", "--telemetry_path", odd)
        self.assertEqual(res.returncode, 2)
        self.assertIn("matches neither version-2 layout: the file has 176 bytes; accepted: "
                      "exactly 424 bytes (48-byte slots, NIXL 1.1) or 168 bytes", res.stderr.decode())

    def test_a_version_four_ring_is_consumed_and_wraps(self):
        path = self.write("wrap", versioned_ring("v4", [(0, 1), (1, 2), (2, 3)], capacity=4,
                                                 read_pos=2))
        res = run_reader("--once", "--json", "--telemetry_path", path)
        self.assertEqual([json.loads(line)["value"] for line in res.stdout.decode().splitlines()],
                         [1, 2, 3])
        self.assertEqual(positions(path), (1, 1))

    def test_summary_puts_events_without_category_first(self):
        path = self.write("v4", versioned_ring("v4", [(6, 10), (6, 30), (0, 4096)]))
        out = self.read(path, "--summary")[0]
        self.assertEqual(out, "Agent: v4\n"
                              "CATEGORY  EVENT            COUNT   SUM   MIN   MAX  P50  P90  P99\n"
                              "-         agent_tx_bytes       1  4096  4096  4096    -    -    -\n"
                              "-         agent_xfer_time      2    40    10    30    -    -    -\n")

    def test_trailer_version_two_counts_format_losses(self):
        trailer = TRAILER.pack(b"NXTLTRL\0", 2, 72, 7, 1, 1, 3, 0, 0, 2) + struct.pack("<Q", 5)
        path = self.write("v3", versioned_ring("v3", [(0, 1)], trailer=trailer))
        err = self.read(path)[1]
        self.assertIn("Producer: pid 7, closed cleanly, 3 events written, 5 lost", err)
        self.assertIn("Events lost by the producer: 5 (staging buffer full: 0, ring full: 0, "
                      "no event type in the ring version: 5)", err)

    def test_rings_of_every_release_read_as_their_reader_printed_them(self):
        releases = sorted(os.listdir(RELEASES_DIR))
        releases = [r for r in releases if os.path.isdir(os.path.join(RELEASES_DIR, r))]
        self.assertEqual(len(releases), 11)
        for release in releases:
            for name in ("initiator", "target", "probe.ring"):
                with self.subTest(release=release, ring=name):
                    src = os.path.join(RELEASES_DIR, release, name)
                    with open(src + ".reader.txt") as f:
                        printed = [line.split(": ", 1)[1] for line in f.read().splitlines()
                                   if line.startswith(("Event name: ", "Value: "))]
                    copy = os.path.join(self.tmp, release + "-" + name)
                    shutil.copyfile(src, copy)
                    out = self.read(copy, "--json")[0]
                    ours = []
                    for line in out.splitlines():
                        event = json.loads(line)
                        self.assertEqual(event["timestamp_us"] is None,
                                         not release.startswith("1.0"))
                        name_ = event["name"]
                        if name_.startswith("unknown_event_"):
                            name_ = "unknown_event"       # NIXL prints no number
                        ours += [name_, str(event["value"])]
                    self.assertEqual(ours, printed)

if __name__ == "__main__":
    unittest.main()
