#!/usr/bin/env python3
"""Read NIXL telemetry ring files of every version, 1 to 4 (standard library only, Python >= 3.8).

    python3 python/telemetry_reader.py --telemetry_path PATH [--once] [--peek]
        [--json | --summary] [--category NAME]... [--name GLOB]... [--quiet]

PATH is one ring file, or a directory of ring files (one per agent, named after
the agent). By default the reader consumes (advances ``read_pos`` in the file)
and polls every 100 ms until SIGINT or SIGTERM, then prints its totals and
exits 0. See docs/readers.md for the full description.

Output format
=============

These rules are shared with the Rust reader (``telemetry_reader``); on the same
input both write byte-identical stdout. stdout carries only events (or the
summary table); everything else goes to stderr. stdout is UTF-8, lines end
with ``\\n``.

Ring versions. The layout is detected from the header's version and the
file size (see docs/ring-format.md): version 1 (NIXL 1.0: timestamp, category,
name), version 2 with names (NIXL 1.1: category, name) or with event types
(NIXL 1.2: category, type), versions 3 and 4 (NIXL 1.3, 1.4/1.5: type only).
A field the version lacks is left out of the text block and is ``null`` in
JSON; an event type the version's table lacks is named ``unknown_event_<n>``.

Text mode (the default). Each event is written as::

    "\\n=== NIXL Telemetry Event ===\\n"
    ["Agent: <agent>\\n"]                      (directory mode only)
    ["Timestamp: <date-time>.<micro>\\n"]      (version 1 only)
    ["Category: <category>\\n"]                (versions 1 and 2 only)
    "Event: <name>\\n"
    "Value: <value>\\n"
    "===========================\\n"

that is, a blank line *before* every block and nothing after the last one.
For a fixture this equals the slice of its ``.reader.txt`` from the blank line
before the first ``===`` line to the last ``=====`` line, newline included.
An empty ring prints nothing.

* ``<date-time>``: ``ts // 1_000_000`` seconds since the epoch converted to
  local time (the C library's ``localtime``, so ``TZ`` applies) and formatted
  ``%Y-%m-%d %H:%M:%S``; ``<micro>`` is ``ts % 1_000_000`` as 6 digits. Seconds
  come from integer division, so ``.999999`` never rolls into the next
  second. If the local date-time does not fit a four-digit year (year >
  9999), ``<date-time>`` is ``@`` followed by the decimal seconds instead, e.g.
  ``@18446744073709.551615``.
* ``<category>``: MEMORY, TRANSFER, CONNECTION, BACKEND, ERROR, PERFORMANCE,
  SYSTEM, CUSTOM for 0..7, otherwise ``UNKNOWN_CATEGORY_<n>`` (``n`` signed
  decimal).
* ``<name>``: the 32-byte name field up to its first NUL, decoded as UTF-8,
  each invalid sequence replaced by U+FFFD (maximal-subpart rule, the same as
  Rust's ``String::from_utf8_lossy``). Printed as is. A field without any NUL
  is malformed: the slot is skipped with a warning on stderr.
* ``<value>``: unsigned decimal.
* ``<agent>``: the ring's file name, decoded like a name.

JSON mode (``--json``): one compact object per event and line, keys in this
order, no spaces, non-ASCII characters written as UTF-8 (not ``\\u`` escaped),
control characters escaped as ``\\u00XX`` (lower-case hex) except ``\\b \\f \\n
\\r \\t``, i.e. ``json.dumps(obj, separators=(",", ":"), ensure_ascii=False)``::

    {"timestamp_us":1749737007118204,"category":"MEMORY","category_id":0,"name":"agent_memory_registered","value":268435456}

In directory mode ``,"agent":"<agent>"`` follows ``value``. Without a timestamp
(versions 2-4) ``"timestamp_us":null``; without a category (versions 3 and 4)
``"category":null,"category_id":null``.

Summary mode (``--summary``), details in docs/readers.md ("Summary table"): one
block per agent in sorted order, blocks separated by an empty line. A block is
``Agent: <agent>``, then either ``(no events)`` or a header row ``CATEGORY
EVENT COUNT SUM MIN MAX P50 P90 P99`` and one row per (category, name) sorted
by category number then name; CATEGORY and EVENT left-aligned, the rest
right-aligned, each column as wide as its widest cell, two spaces between
columns, trailing spaces removed; percentiles (nearest rank over all values
seen) only for PERFORMANCE rows, ``-`` otherwise. In single-file mode the
agent is the file's base name. While following, each (changed) print starts
with ``Summary at YYYY-MM-DD HH:MM:SS`` and an empty line, prints separated
by an empty line.
"""

import argparse
import array
import ctypes
import datetime
import fnmatch
import json
import mmap
import os
import re
import resource
import select
import signal
import stat
import struct
import sys
import time

# --- Layouts (mirror crates/abi/src/ring.rs and crates/abi/src/event.rs) ---

HEADER_SIZE = 40
SLOT_SIZE = 56                # version 1
WRITE_POS_OFFSET = 0
READ_POS_OFFSET = 8

TRAILER_MAGIC = b"NXTLTRL\0"
TRAILER_SIZE_MIN = 64         # trailer version 1
TRAILER_SIZE = 72             # trailer version 2: adds dropped_format
FLAG_CLOSED = 1
FLAG_STALE = 2
STALE_WORDS = ("stale: its producer stopped with events unread and a new producer of the agent "
               "moved it aside")

# NIXL's event-type enumeration by number: versions 2 and 3 know the first 20,
# version 4 all 21.
EVENT_TYPES = (
    "agent_tx_bytes", "agent_rx_bytes", "agent_tx_requests_num", "agent_rx_requests_num",
    "agent_memory_registered", "agent_memory_deregistered", "agent_xfer_time",
    "agent_xfer_post_time", "agent_err_not_posted", "agent_err_invalid_param",
    "agent_err_backend", "agent_err_not_found", "agent_err_mismatch", "agent_err_not_allowed",
    "agent_err_repost_active", "agent_err_unknown", "agent_err_not_supported",
    "agent_err_remote_disconnect", "agent_err_canceled", "agent_err_no_telemetry",
    "agent_telemetry_events_dropped",
)


class Layout:
    """One ring layout: the header's version and its slot. ``slot`` unpacks a
    slot as (timestamp, key, value) or (key, value) when there is no
    timestamp; ``key`` holds the category (when there is one) followed by the
    32-byte name or the u32 event type."""

    def __init__(self, name, version, slot_size, fmt, has_timestamp, has_category,
                 named, types, releases):
        self.name = name
        self.version = version
        self.slot_size = slot_size
        self.slot = struct.Struct(fmt)
        # The same slot as (key, value) only: the timestamp skipped.
        self.key_value = struct.Struct(fmt.replace("<Q", "<8x", 1) if has_timestamp else fmt)
        self.has_timestamp = has_timestamp
        self.has_category = has_category
        self.named = named
        self.types = types
        self.releases = releases
        assert self.slot.size == self.key_value.size == slot_size

    def data_size(self, capacity):
        return HEADER_SIZE + self.slot_size * capacity


V1 = Layout("v1", 1, 56, "<Q36s4xQ", True, True, True, (), "NIXL 1.0.x")
V2_NAMED = Layout("v2-named", 2, 48, "<36s4xQ", False, True, True, (), "NIXL 1.1.x")
V2_TYPED = Layout("v2-typed", 2, 16, "<8sQ", False, True, False, EVENT_TYPES[:20], "NIXL 1.2.x")
V3 = Layout("v3", 3, 16, "<4s4xQ", False, False, False, EVENT_TYPES[:20], "NIXL 1.3.x")
V4 = Layout("v4", 4, 16, "<4s4xQ", False, False, False, EVENT_TYPES, "NIXL 1.4.x, 1.5.x")
LAYOUTS = (V1, V2_NAMED, V2_TYPED, V3, V4)
VERSIONS = (1, 2, 3, 4)
ACCEPTED_FILE = "a NIXL ring file (version 1 to 4)"
SLOT_SIZES = "56 bytes each in version 1, 48 or 16 in version 2, 16 in versions 3 and 4"

# write_pos, read_pos, version, expected_version, capacity, mask
HEADER = struct.Struct("<QQiiQQ")
# timestamp_us, category, name[32], 4 bytes padding (ignored), value
SLOT = struct.Struct("<Qi32s4xQ")
# magic, trailer_version, trailer_size, producer_pid, flags, created_us,
# events_written, dropped_staging_full, dropped_ring_full, last_flush_us,
# dropped_format (trailer version >= 2)
TRAILER = struct.Struct("<8sIIIIQQQQQQ")
U64 = struct.Struct("<Q")
# the same slot with category and name as one 36-byte key (the decoders' cache key)
SLOT_KEYED = struct.Struct("<Q36s4xQ")
CATEGORY_INT = struct.Struct("<i")

assert HEADER.size == HEADER_SIZE and SLOT.size == SLOT_SIZE == SLOT_KEYED.size
assert TRAILER.size == TRAILER_SIZE
U32 = struct.Struct("<I")

# ctypes views of the positions are native-endian: used only where that is little.
NATIVE_LITTLE_ENDIAN = sys.byteorder == "little"

CATEGORY_NAMES = ("MEMORY", "TRANSFER", "CONNECTION", "BACKEND",
                  "ERROR", "PERFORMANCE", "SYSTEM", "CUSTOM")
PERFORMANCE = 5

# --- Behaviour ---

POLL_INTERVAL = 0.1
SUMMARY_INTERVAL = 1.0
BATCH_EVENTS = 8192           # events decoded, written and committed at a time
MAX_SLOT_WARNINGS = 10        # per ring; later malformed slots are only counted
CACHE_LIMIT = 65536           # entries in the name and date caches

EXIT_OK = 0
EXIT_OUTPUT = 1               # stdout could not be written (e.g. closed pipe)
EXIT_BAD_INPUT = 2            # usage error, missing or broken file, truncation
EXIT_INTERNAL = 3             # a bug in this reader

PROG = "telemetry_reader.py"
EVENT_HEAD = "\n=== NIXL Telemetry Event ===\n"
EVENT_TAIL = "===========================\n"


class ReaderError(Exception):
    """A problem with the input. str() is the one-line message; exit code 2."""


class OutputError(Exception):
    """stdout could not be written (e.g. the reading end of a pipe was closed)."""


class Output:
    """stdout as bytes. Writes go straight to the file descriptor in a loop:
    a buffered writer may report a short write to a closed pipe as success."""

    def __init__(self, stream):
        self.fd = None
        self.stream = None
        try:
            stream.flush()
            self.fd = stream.fileno()
        except (AttributeError, OSError, ValueError):
            self.stream = getattr(stream, "buffer", None)     # in-memory streams (tests)

    def isatty(self):
        return self.fd is not None and os.isatty(self.fd)

    def write(self, data):
        try:
            if self.fd is None:
                if self.stream is None:
                    raise ValueError("there is no stdout")
                self.stream.write(data)
                self.stream.flush()
                return
            view = memoryview(data)
            while view:
                try:
                    done = os.write(self.fd, view)
                except BlockingIOError:
                    select.select([], [self.fd], [])
                    continue
                view = view[done:]
        except BrokenPipeError:
            raise OutputError("stdout was closed") from None
        except (OSError, ValueError) as err:
            raise OutputError("cannot write to stdout (%s)"
                              % (getattr(err, "strerror", None) or err)) from None


class Log:
    """Informational lines and warnings, all on stderr."""

    def __init__(self, quiet):
        self.quiet = quiet

    @staticmethod
    def _write(line):
        try:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass

    def info(self, line):
        if not self.quiet:
            self._write(line)

    def warn(self, line):
        self._write(PROG + ": warning: " + line)

    def error(self, line):
        self._write(PROG + ": error: " + line)


# --- Names, categories, filters ---

def category_name(cat):
    if 0 <= cat < len(CATEGORY_NAMES):
        return CATEGORY_NAMES[cat]
    return "UNKNOWN_CATEGORY_%d" % cat


_INT_RE = re.compile(r"[+-]?[0-9]+\Z")


def parse_category(text):
    """A category as readers print it (any case), its NIXL_TELEMETRY_ constant
    name, UNKNOWN_CATEGORY_<n>, or a decimal number; None if not understood."""
    text = text.strip()
    number = None
    if _INT_RE.match(text):
        number = int(text)
    else:
        upper = text.upper()
        if upper.startswith("NIXL_TELEMETRY_"):
            upper = upper[len("NIXL_TELEMETRY_"):]
        if upper.startswith("UNKNOWN_CATEGORY_") and _INT_RE.match(upper[17:]):
            number = int(upper[17:])
        elif upper in CATEGORY_NAMES:
            number = CATEGORY_NAMES.index(upper)
    if number is None or not -2 ** 31 <= number < 2 ** 31:
        return None
    return number


def decode_text(raw):
    return raw.decode("utf-8", "replace")


# Control characters (U+0000-U+001F, U+007F-U+009F) -> \xHH, for text output:
# a name or agent cannot break a block's lines or drive the terminal.
_CONTROL_ESCAPES = {c: "\\x%02x" % c for c in list(range(0x20)) + list(range(0x7f, 0xa0))}


def escape_control(text):
    return text.translate(_CONTROL_ESCAPES)


def agent_name_of(file_name):
    """Display name of an agent: its file name, invalid UTF-8 replaced."""
    return decode_text(os.fsencode(file_name))


def json_string(text):
    return json.dumps(text, ensure_ascii=False)


# --- One ring file ---

def detect_layout(version, capacity, size, trailer_at):
    """(layout, None) for a header's version and capacity in a file of `size`
    bytes, or (None, problem). `trailer_at(offset)` says whether this project's
    trailer magic sits at `offset`. Mirrors `detect` in crates/abi/src/ring.rs."""
    candidates = [layout for layout in LAYOUTS if layout.version == version]
    ends = [layout.data_size(capacity) for layout in candidates]
    if ends[0] >= 2 ** 64:
        return None, ("capacity %d is invalid (it overflows the address space); accepted: a "
                      "power of two >= 2 (the number of slots)" % capacity)
    if len(candidates) == 1:
        if ends[0] <= size:
            return candidates[0], None
        need = ends[0]
    else:
        for layout, end in zip(candidates, ends):
            if end < 2 ** 64 and (end == size or (end < size and trailer_at(end))):
                return layout, None
        need = min(ends)
        if need <= size:
            return None, ("version %d capacity %d matches neither version-2 layout: the file "
                          "has %d bytes; accepted: exactly %d bytes (48-byte slots, NIXL 1.1) "
                          "or %d bytes (16-byte slots, NIXL 1.2), optionally followed by this "
                          "project's trailer" % (version, capacity, size, ends[0],
                                                 ends[1] if ends[1] < 2 ** 64 else 2 ** 64 - 1))
    return None, ("version %d capacity %d needs %d bytes (40-byte header + %d x %d-byte slots) "
                  "but the file has %d; accepted: a file holding the header and all its slots"
                  % (version, capacity, need, capacity, (need - HEADER_SIZE) // capacity, size))


def header_problem(size, fields, trailer_at):
    """(layout, None) for a header read from a file of `size` bytes, or (None,
    what is wrong). Checks in the order of RingHeader::validate."""
    write_pos, read_pos, version, _expected, capacity, mask = fields
    if version not in VERSIONS:
        return None, "ring version %d; this reader accepts versions 1, 2, 3 and 4" % version
    if capacity == 0 or capacity & (capacity - 1):
        return None, ("capacity %d is not a power of two; accepted: a power of two >= 2 "
                      "(the number of slots)" % capacity)
    if capacity < 2:
        return None, ("capacity 1: a one-slot ring can hold no event; accepted: a power of "
                      "two >= 2 (the number of slots)")
    layout, problem = detect_layout(version, capacity, size, trailer_at)
    if problem:
        return None, problem
    if mask != capacity - 1:
        return None, "mask %d is not capacity - 1 = %d; accepted: mask = capacity - 1" % (
            mask, capacity - 1)
    for label, pos in (("write_pos", write_pos), ("read_pos", read_pos)):
        if pos >= capacity:
            return None, ("%s %d is outside [0, %d); accepted: a slot index below the capacity"
                          % (label, pos, capacity))
    return layout, None


class Trailer:
    """The trailer this project appends after the last slot (64 bytes in
    trailer version 1, 72 from version 2 on)."""

    __slots__ = ("version", "size", "producer_pid", "flags", "created_us",
                 "events_written", "dropped_staging_full", "dropped_ring_full",
                 "last_flush_us", "dropped_format")

    def __init__(self, fields):
        (_magic, self.version, self.size, self.producer_pid, self.flags, self.created_us,
         self.events_written, self.dropped_staging_full, self.dropped_ring_full,
         self.last_flush_us, self.dropped_format) = fields

    @property
    def lost(self):
        return self.dropped_staging_full + self.dropped_ring_full + self.dropped_format

    @property
    def closed(self):
        return bool(self.flags & FLAG_CLOSED)

    @property
    def stale(self):
        """Its producer stopped with events unread and a new producer of the
        agent moved the file aside; nothing more will be written to it."""
        return bool(self.flags & FLAG_STALE)

    @property
    def state(self):
        """The producer's state in words, as both readers print it."""
        if self.stale:
            return STALE_WORDS
        return "closed cleanly" if self.closed else "running or stopped uncleanly"


class Ring:
    """An open ring file.

    Only the 40-byte header is mapped: ``write_pos`` and ``read_pos`` are loaded
    and ``read_pos`` stored through the mapping as single aligned 8-byte
    accesses. Slots are copied out with ``pread``, which cannot fault if the
    file shrinks, and the file size is checked with ``fstat`` before every poll
    and before every store into the mapping.
    """

    def __init__(self, path, agent, peek):
        self.path = path
        self.agent = agent
        self.peek = peek
        self.fd = -1
        self.mm = None
        self._wp = self._rp = None
        self.events_read = 0
        self.malformed = 0
        self.warned_slots = 0
        self.retiring = False
        self.parked = False
        self.trailer = None
        self.trailer_problem = None
        self.fd = self._open()
        try:
            self._setup()
        except BaseException:
            self.close()
            raise

    def _fail(self, what):
        return ReaderError("%s: %s" % (self.path, what))

    def _open(self):
        flags = os.O_RDONLY if self.peek else os.O_RDWR
        flags |= getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0) | os.O_NONBLOCK
        try:
            return os.open(self.path, flags)
        except FileNotFoundError:
            raise self._fail("no such file or directory; expected %s or a directory of "
                             "ring files" % ACCEPTED_FILE) from None
        except PermissionError:
            if self.peek:
                raise self._fail("permission denied opening it for reading; "
                                 "the reader needs read access") from None
            raise self._fail("permission denied opening it for reading and writing; consuming "
                             "needs write access, --peek reads without writing") from None
        except OSError as err:
            raise self._fail("cannot open it (%s); expected a readable ring file"
                             % err.strerror) from None

    def _setup(self):
        st = os.fstat(self.fd)
        if not stat.S_ISREG(st.st_mode):
            raise self._fail("not a regular file; expected %s" % ACCEPTED_FILE)
        self.ident = (st.st_dev, st.st_ino)
        size = st.st_size
        raw = os.pread(self.fd, HEADER_SIZE, 0) if size >= HEADER_SIZE else b""
        if len(raw) < HEADER_SIZE:
            raise self._fail("file is %d bytes, too short for the 40-byte ring header; accepted: "
                             "a 40-byte header followed by capacity slots (%s)"
                             % (size, SLOT_SIZES))
        fields = HEADER.unpack(raw)
        layout, problem = header_problem(size, fields, self._magic_at)
        if problem:
            raise self._fail(problem)
        self.layout = layout
        write_pos, read_pos, self.version, _, self.capacity, self.mask = fields
        self.needed = layout.data_size(self.capacity)
        access = mmap.ACCESS_READ if self.peek else mmap.ACCESS_WRITE
        try:
            self.mm = mmap.mmap(self.fd, HEADER_SIZE, access=access)
        except ValueError:
            # The file shrank below the header since the size was read.
            raise self._fail("file is %d bytes, too short for the 40-byte ring header; "
                             "accepted: a 40-byte header followed by capacity slots (%s)"
                             % (os.fstat(self.fd).st_size, SLOT_SIZES)) from None
        if not self.peek and NATIVE_LITTLE_ENDIAN:
            # ctypes views: loads and stores are single aligned 8-byte accesses.
            # (They are native-endian, hence only on little-endian hosts.)
            self._wp = ctypes.c_uint64.from_buffer(self.mm, WRITE_POS_OFFSET)
            self._rp = ctypes.c_uint64.from_buffer(self.mm, READ_POS_OFFSET)
        self.cursor = read_pos
        self.unread_at_open = (write_pos - read_pos) & self.mask
        self.read_trailer(size)

    def _magic_at(self, offset):
        return os.pread(self.fd, len(TRAILER_MAGIC), offset) == TRAILER_MAGIC

    def finish(self):
        """Closes a ring whose file was removed or replaced, after its last read,
        keeping its last trailer for the totals."""
        if self.fd >= 0:
            try:
                self.read_trailer()
            except (ReaderError, OSError):
                pass
        self.close()

    def park(self):
        """Closes the file to free its descriptors; unpark() opens it again.
        The counters, the position and the last trailer stay."""
        if self.fd >= 0:
            try:
                self.read_trailer()
            except (ReaderError, OSError):
                pass
            self.close()
            self.parked = True

    def unpark(self):
        """Opens a parked ring's file again (peeking: at the slot where it
        stopped). If the path now names another file, or none, the ring is
        marked for retirement instead and stays closed; any other failure is
        the input's (ReaderError): the ring was valid and no longer is."""
        if not self.parked or self.retiring:
            return
        try:
            st = os.stat(self.path)
        except OSError:
            st = None
        if st is None or (st.st_dev, st.st_ino) != self.ident:
            self.retiring = True
            return
        cursor = self.cursor
        self.fd = self._open()
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        if self.peek:
            self.cursor = cursor
        self.parked = False

    def close(self):
        self._wp = self._rp = None      # release the buffer exports before closing
        if self.mm is not None:
            self.mm.close()
            self.mm = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def check_size(self):
        size = os.fstat(self.fd).st_size
        if size < self.needed:
            raise self._fail(
                "file truncated to %d bytes while being read; the ring needs %d bytes "
                "(40-byte header + %d x %d-byte slots)"
                % (size, self.needed, self.capacity, self.layout.slot_size))
        return size

    def read_trailer(self, size=None):
        """Reads the trailer if the file is long enough and its magic matches."""
        if size is None:
            size = self.check_size()
        if size < self.needed + TRAILER_SIZE_MIN:
            return self.trailer
        raw = os.pread(self.fd, TRAILER_SIZE, self.needed)
        if len(raw) < TRAILER_SIZE_MIN or raw[:8] != TRAILER_MAGIC:
            return self.trailer
        version, length = struct.unpack_from("<II", raw, 8)
        if version < 1 or length < TRAILER_SIZE_MIN or self.needed + length > size:
            self.trailer_problem = ("trailer version %d, size %d; accepted: version >= 1 and a "
                                    "size of 64 or more that fits in the file"
                                    % (version, length))
            return self.trailer
        # dropped_format exists from trailer version 2 on (72 bytes).
        known = TRAILER_SIZE if version >= 2 and length >= TRAILER_SIZE else TRAILER_SIZE_MIN
        raw = raw[:known].ljust(TRAILER_SIZE, b"\0")
        self.trailer = Trailer(TRAILER.unpack(raw))
        return self.trailer

    def _positions(self):
        if self._wp is None:
            # On little-endian hosts struct's "<Q" is a single 8-byte memcpy too.
            return U64.unpack_from(self.mm, WRITE_POS_OFFSET)[0], \
                U64.unpack_from(self.mm, READ_POS_OFFSET)[0]
        return self._wp.value, self._rp.value

    def pending(self):
        """(first slot, number of events) to read now."""
        self.check_size()
        write_pos, read_pos = self._positions()
        for label, pos in (("write_pos", write_pos), ("read_pos", read_pos)):
            if pos >= self.capacity:
                raise self._fail("%s %d is outside [0, %d); accepted: a slot index below the "
                                 "capacity" % (label, pos, self.capacity))
        if self.peek:
            # Our own cursor, kept inside [read_pos, write_pos] in case a
            # consuming reader moves read_pos past it.
            mask = self.mask
            if (self.cursor - read_pos) & mask > (write_pos - read_pos) & mask:
                self.cursor = read_pos
            start = self.cursor
        else:
            start = read_pos
        return start, (write_pos - start) & self.mask

    def read_slots(self, start, count):
        """Raw bytes of `count` slots from `start`; start + count <= capacity."""
        size = self.layout.slot_size
        want = count * size
        data = os.pread(self.fd, want, HEADER_SIZE + start * size)
        if len(data) != want:
            self.check_size()
            raise self._fail("short read at slot %d; the file changed while being read" % start)
        return data

    def advance(self, position):
        if self.peek:
            self.cursor = position
        else:
            self.check_size()
            if self._rp is not None:
                self._rp.value = position
            else:
                U64.pack_into(self.mm, READ_POS_OFFSET, position)


# --- Turning slots into output ---

class Emitter:
    """Decodes batches of slots and writes them to stdout.

    The hot loops unpack each slot as (timestamp, key, value) (no timestamp in
    versions 2-4) and look the key (category and name, or category and event
    type, or the event type alone) up in a per-layout cache that holds the
    finished middle of the output for it, already filtered: a string to print,
    "" for an event the filters drop, or False for a malformed name.
    """

    def __init__(self, mode, out, log, categories, globs):
        self.mode = mode                 # "text", "json" or "summary"
        self.out = out
        self.log = log
        self.categories = categories     # set of category numbers, or None
        self.globs = globs               # list of patterns, or None
        self.caches = {}                 # layout name -> {key bytes -> piece, "" or False}
        self.dates = {}                  # seconds -> date-time text
        self.stats = {}                  # (agent, category, name) -> [n, sum, min, max, values]
        self.matched = 0

    @staticmethod
    def decode_key(layout, key):
        """(category or None, name) of a slot's key bytes; name None if malformed."""
        cat = CATEGORY_INT.unpack_from(key)[0] if layout.has_category else None
        rest = key[4:] if layout.has_category else key
        if layout.named:
            end = rest.find(b"\0")
            if end < 0:
                return cat, None
            return cat, decode_text(rest[:end])
        event_type = U32.unpack_from(rest)[0]
        if event_type < len(layout.types):
            return cat, layout.types[event_type]
        return cat, "unknown_event_%d" % event_type

    def _wanted(self, cat, name):
        # An event without a category (versions 3, 4) matches no --category.
        if self.categories is not None and cat not in self.categories:
            return False
        return self.globs is None or any(fnmatch.fnmatchcase(name, g) for g in self.globs)

    def _cache(self, layout):
        cache = self.caches.get(layout.name)
        if cache is None or len(cache) >= CACHE_LIMIT:
            cache = self.caches[layout.name] = {}
        return cache

    def _piece(self, layout, key):
        cache = self._cache(layout)
        cat, name = self.decode_key(layout, key)
        if name is None:
            piece = False
        elif not self._wanted(cat, name):
            piece = ""
        elif self.mode == "text":
            piece = "Event: %s\nValue: " % escape_control(name)
            if cat is not None:
                piece = "Category: %s\n" % category_name(cat) + piece
        elif self.mode == "json":
            piece = '"name":%s,"value":' % json_string(name)
            if cat is not None:
                piece = '"category":"%s","category_id":%d,' % (category_name(cat), cat) + piece
            else:
                piece = '"category":null,"category_id":null,' + piece
        else:
            piece = (cat, name)
        cache[key] = piece
        return piece

    def _date(self, sec):
        if len(self.dates) >= CACHE_LIMIT:
            self.dates.clear()
        try:
            text = datetime.datetime.fromtimestamp(sec).strftime("%Y-%m-%d %H:%M:%S")
        except (OverflowError, OSError, ValueError):
            text = "@%d" % sec
        self.dates[sec] = text
        return text

    def write(self, text):
        if text:
            self.out.write(text.encode("utf-8"))

    def emit(self, ring, data, first_slot, tagged):
        """Handles the slots in `data`; returns how many were well-formed."""
        layout = ring.layout
        if self.mode == "summary":
            bad = self._summary(ring, data)
        elif layout is not V1:
            bad = self._untimed(ring, data, tagged)
        elif self.mode == "text":
            bad = self._text(ring, data, tagged)
        else:
            bad = self._json(ring, data, tagged)
        if bad:
            self._report_malformed(ring, data, first_slot, bad)
        return len(data) // layout.slot_size - bad

    def _untimed(self, ring, data, tagged):
        """Text or JSON of the slots of a layout without timestamps (2-4)."""
        layout = ring.layout
        cache = self._cache(layout)
        get = cache.get
        if self.mode == "text":
            head = EVENT_HEAD + ("Agent: %s\n" % escape_control(ring.agent) if tagged else "")
            tail = "\n" + EVENT_TAIL
        else:
            head = '{"timestamp_us":null,'
            tail = (',"agent":%s}\n' % json_string(ring.agent)) if tagged else "}\n"
        parts = []
        append = parts.append
        bad = 0
        for key, value in layout.slot.iter_unpack(data):
            piece = get(key)
            if piece is None:
                piece = self._piece(layout, key)
                get = self._cache(layout).get
            if piece:
                append(f"{head}{piece}{value}{tail}")
            elif piece is False:
                bad += 1
        self.matched += len(parts)
        self.write("".join(parts))
        return bad

    def _text(self, ring, data, tagged):
        cache = self._cache(V1)
        get = cache.get

        def learn(key):
            return self._piece(V1, key)
        dates, date_of = self.dates, self._date
        head = (EVENT_HEAD + ("Agent: %s\n" % escape_control(ring.agent) if tagged else "")
                + "Timestamp: ")
        parts = []
        append = parts.append
        bad = 0
        last_sec = -1
        stamp = ""
        for ts, key, value in SLOT_KEYED.iter_unpack(data):
            piece = get(key)
            if piece is None:
                piece = learn(key)
                get = self._cache(V1).get
            if piece:
                sec = ts // 1000000
                if sec != last_sec:
                    date = dates.get(sec)
                    if date is None:
                        date = date_of(sec)
                    stamp = head + date + "."
                    last_sec = sec
                append(f"{stamp}{ts % 1000000:06d}\n{piece}{value}\n===========================\n")
            elif piece is False:
                bad += 1
        self.matched += len(parts)
        self.write("".join(parts))
        return bad

    def _json(self, ring, data, tagged):
        get = self._cache(V1).get
        tail = (',"agent":%s}\n' % json_string(ring.agent)) if tagged else "}\n"
        parts = []
        append = parts.append
        bad = 0
        for ts, key, value in SLOT_KEYED.iter_unpack(data):
            piece = get(key)
            if piece is None:
                piece = self._piece(V1, key)
                get = self._cache(V1).get
            if piece:
                append(f'{{"timestamp_us":{ts},{piece}{value}{tail}')
            elif piece is False:
                bad += 1
        self.matched += len(parts)
        self.write("".join(parts))
        return bad

    def _summary(self, ring, data):
        layout = ring.layout
        get = self._cache(layout).get
        stats = self.stats
        agent = ring.agent
        bad = matched = 0
        for key, value in layout.key_value.iter_unpack(data):
            piece = get(key)
            if piece is None:
                piece = self._piece(layout, key)
                get = self._cache(layout).get
            if not piece:
                if piece is False:
                    bad += 1
                continue
            matched += 1
            row = stats.get((agent,) + piece)
            if row is None:
                row = stats[(agent,) + piece] = [
                    0, 0, value, value, array.array("Q") if piece[0] == PERFORMANCE else None]
            row[0] += 1
            row[1] += value
            if value < row[2]:
                row[2] = value
            if value > row[3]:
                row[3] = value
            if row[4] is not None:
                row[4].append(value)
        self.matched += matched
        return bad

    def _report_malformed(self, ring, data, first_slot, bad):
        ring.malformed += bad
        layout = ring.layout
        for index, fields in enumerate(layout.slot.iter_unpack(data)):
            if ring.warned_slots >= MAX_SLOT_WARNINGS:
                break
            raw = fields[-2][4:]          # the name, after the category
            if b"\0" not in raw:
                ring.warned_slots += 1
                more = (" (further malformed slots of this ring are only counted)"
                        if ring.warned_slots == MAX_SLOT_WARNINGS else "")
                self.log.warn("%s: slot %d: event name has no NUL terminator in its 32 bytes; "
                              "skipped (a name is at most 31 bytes followed by NUL)%s"
                              % (ring.path, first_slot + index, more))

    # summary table
    def summary_text(self, agents):
        return format_summary(self.stats, agents)


def nearest_rank(sorted_values, percent):
    n = len(sorted_values)
    rank = max(1, (percent * n + 99) // 100)
    return sorted_values[rank - 1]


def format_summary(stats, agents):
    """The summary tables: one per agent, in sorted agent order."""
    header = ("CATEGORY", "EVENT", "COUNT", "SUM", "MIN", "MAX", "P50", "P90", "P99")
    blocks = []
    for agent in sorted(set(agents) | {key[0] for key in stats}):
        # Events without a category (versions 3, 4) first, as "-".
        keys = sorted((k for k in stats if k[0] == agent),
                      key=lambda k: (k[1] is not None, k[1] or 0, escape_control(k[2])))
        lines = ["Agent: %s" % escape_control(agent)]
        if not keys:
            lines.append("(no events)")
            blocks.append("\n".join(lines) + "\n")
            continue
        rows = []
        for key in keys:
            count, total, low, high, values = stats[key]
            if values is not None:
                ordered = sorted(values)
                pcts = [str(nearest_rank(ordered, p)) for p in (50, 90, 99)]
            else:
                pcts = ["-", "-", "-"]
            category = "-" if key[1] is None else category_name(key[1])
            rows.append([category, escape_control(key[2]), str(count), str(total), str(low),
                         str(high)] + pcts)
        widths = [max(len(header[i]), max(len(r[i]) for r in rows)) for i in range(len(header))]

        def line(cells):
            out = [cells[0].ljust(widths[0]), cells[1].ljust(widths[1])]
            out += [c.rjust(w) for c, w in zip(cells[2:], widths[2:])]
            return "  ".join(out).rstrip()

        lines.append(line(header))
        lines.extend(line(r) for r in rows)
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


# --- Sources: one file or a directory ---

class FileSource:
    """One ring file, followed across its replacement: a producer that starts
    again under the same agent name and cannot adopt the ring it finds (another
    layout or capacity) puts a new file in its place, and the reader moves on
    to it after finishing the old one."""
    tagged = False

    def __init__(self, path, peek, log):
        self.path = path
        self.peek = peek
        self.log = log
        self.ring = Ring(path, agent_name_of(os.path.basename(path)), peek)
        self.done = []          # rings of files that were replaced, read to their end
        self.rejected = None    # why the file now under the path could not be opened
        ring = self.ring
        log.info("Telemetry path: %s" % path)
        log.info("Ring version: %d" % ring.version)
        log.info("Buffer capacity: %d events" % ring.capacity)
        log.info("Current events in buffer: %d" % ring.unread_at_open)
        log_trailer(log, ring, "")

    def rings(self):
        try:
            st = os.stat(self.path)
        except OSError:
            st = None
        if st is not None and (st.st_dev, st.st_ino) != self.ring.ident:
            if stat.S_ISREG(st.st_mode):
                self.ring.retiring = True
            else:
                # A FIFO, a device or a link to one: no ring; keep the old one.
                reason = "%s: not a regular file; expected %s" % (self.path, ACCEPTED_FILE)
                if self.rejected != reason:
                    self.log.warn("cannot follow the replaced ring file: %s" % reason)
                    self.rejected = reason
        return [self.ring]

    def all_rings(self):
        return self.done + [self.ring]

    def retire(self, log):
        if not self.ring.retiring:
            return
        try:
            new = Ring(self.path, self.ring.agent, self.peek)
        except (ReaderError, OSError) as err:
            # Keep reading the old file; try again at the next poll.
            self.ring.retiring = False
            reason = str(err) if isinstance(err, ReaderError) else \
                "%s: %s" % (self.path, err.strerror)
            if self.rejected != reason:
                log.warn("cannot follow the replaced ring file: %s" % reason)
                self.rejected = reason
            return
        self.rejected = None
        self.ring.finish()
        self.done.append(self.ring)
        self.ring = new
        log.info("%s: ring file replaced; finished reading the old one, now reading the new one "
                 "(version %d, capacity %d events, %d events unread)"
                 % (self.path, new.version, new.capacity, new.unread_at_open))
        log_trailer(log, new, "")


def is_writer_temp_file(name):
    """A ring being created: the writer prepares `.nixl-ring.<pid>.<us>.<n>.tmp` and
    renames it into place once its header is written."""
    return name.startswith(".") and name.endswith(".tmp")


def ring_budget():
    """How many rings may be open at once: the soft limit on open files / 8
    (a ring holds two descriptors here: the file and its mapping), at most 256,
    at least 1. The Rust reader uses the same number."""
    try:
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (OSError, ValueError):
        soft = 1024
    if soft == resource.RLIM_INFINITY or soft < 0:
        soft = 2 ** 63 - 1
    return max(1, min(256, soft // 8))


class DirSource:
    """Every regular file of a directory is an agent's ring. At most
    ring_budget() rings are open at a time: with more, each ring is closed
    after it was read and opened again for its next read."""
    tagged = True

    def __init__(self, path, peek, log):
        self.path = path
        self.peek = peek
        self.log = log
        self.budget = ring_budget()
        self.open = {}        # file name -> Ring
        self.done = []        # rings whose file was removed or replaced
        self.rejected = {}    # file name -> last reason (warned once per reason)
        self.scan(announce=False)
        if not self.open:
            raise ReaderError(
                "%s: directory holds no ring files (%d other files skipped); accepted: a "
                "directory with at least one NIXL ring file" % (path, len(self.rejected)))
        log.info("Telemetry directory: %s" % path)
        for name in sorted(self.open):
            self.announce(self.open[name])

    def announce(self, ring):
        self.log.info("Agent %s: ring opened (version %d, capacity %d events, %d events "
                      "unread)" % (ring.agent, ring.version, ring.capacity, ring.unread_at_open))
        log_trailer(self.log, ring, "Agent %s: " % ring.agent)

    def scan(self, announce=True):
        try:
            entries = list(os.scandir(self.path))
        except FileNotFoundError:
            raise ReaderError("%s: directory no longer exists; expected a directory of ring "
                              "files" % self.path) from None
        except OSError as err:
            raise ReaderError("%s: cannot list the directory (%s); expected a readable "
                              "directory of ring files" % (self.path, err.strerror)) from None
        present = {}
        for entry in entries:
            try:
                st = entry.stat()
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and not is_writer_temp_file(entry.name):
                present[entry.name] = st
        for name, ring in self.open.items():
            st = present.get(name)
            if st is None or (st.st_dev, st.st_ino) != ring.ident:
                ring.retiring = True
        for name in list(self.rejected):
            if name not in present:
                del self.rejected[name]
        for name in sorted(present):
            if name in self.open:
                continue
            # Validating a new ring takes descriptors: free some first.
            open_rings = [r for r in self.open.values() if r.fd >= 0]
            if len(open_rings) >= self.budget:
                open_rings[0].park()
            try:
                ring = Ring(os.path.join(self.path, name), agent_name_of(name), self.peek)
            except ReaderError as err:
                if self.rejected.get(name) != str(err):
                    self.rejected[name] = str(err)
                    self.log.warn("skipping %s" % err)
                continue
            except OSError as err:
                reason = "%s: %s" % (os.path.join(self.path, name), err.strerror)
                if self.rejected.get(name) != reason:
                    self.rejected[name] = reason
                    self.log.warn("skipping %s" % reason)
                continue
            self.rejected.pop(name, None)
            self.open[name] = ring
            if announce:
                self.announce(ring)

    def rings(self):
        self.scan()
        return [self.open[name] for name in sorted(self.open)]

    def all_rings(self):
        return self.done + [self.open[name] for name in sorted(self.open)]

    def retire(self, log):
        for name in sorted(self.open):
            ring = self.open[name]
            if ring.retiring:
                del self.open[name]
                ring.finish()
                self.done.append(ring)
                log.info("Agent %s: ring file removed or replaced; finished reading it"
                         % ring.agent)


def log_trailer(log, ring, prefix):
    if ring.trailer_problem:
        log.warn("%s: unrecognised trailer ignored (%s)" % (ring.path, ring.trailer_problem))
    t = ring.trailer
    if t is None:
        return
    log.info("%sProducer: pid %d, %s, %d events written, %d lost" % (
        prefix, t.producer_pid, t.state,
        t.events_written, t.lost))


# --- Running ---

class StopFlag:
    def __init__(self):
        self.set = False

    def __call__(self, signum, frame):
        self.set = True


def drain(ring, emitter, stop, tagged):
    """Reads what the ring holds now, in batches; commits read_pos per batch."""
    start, count = ring.pending()
    while count and not stop.set:
        n = min(count, ring.capacity - start, BATCH_EVENTS)
        data = ring.read_slots(start, n)
        ring.events_read += emitter.emit(ring, data, start, tagged)
        start = (start + n) & ring.mask
        ring.advance(start)
        count -= n


def print_totals(log, source, emitter, filtered):
    rings = source.all_rings()
    total = sum(r.events_read for r in rings)
    if source.tagged:
        for ring in rings:
            line = "Agent %s: %d events read" % (ring.agent, ring.events_read)
            if ring.trailer is not None:
                line += ", %d lost by the producer" % ring.trailer.lost
            log.info(line)
    log.info("Total events read: %d" % total)
    if filtered:
        log.info("Events matching the filters: %d" % emitter.matched)
    malformed = sum(r.malformed for r in rings)
    if malformed:
        log.info("Malformed slots skipped: %d" % malformed)
    trailers = [r.trailer for r in rings if r.trailer is not None]
    if trailers:
        staging = sum(t.dropped_staging_full for t in trailers)
        full = sum(t.dropped_ring_full for t in trailers)
        dropped_format = sum(t.dropped_format for t in trailers)
        # The format cause only where a ring could have it (not version 1).
        format_part = (", no event type in the ring version: %d" % dropped_format
                       if any(r.version != 1 for r in rings) else "")
        log.info("Events lost by the producer: %d (staging buffer full: %d, ring full: %d%s)"
                 % (staging + full + dropped_format, staging, full, format_part))


def run(args, log, stop):
    path = args.telemetry_path
    if os.path.isdir(path):
        source = DirSource(path, args.peek, log)
    else:
        source = FileSource(path, args.peek, log)
    mode = "summary" if args.summary else ("json" if args.json else "text")
    out = Output(sys.stdout)
    emitter = Emitter(mode, out, log, args.categories, args.names)
    filtered = args.categories is not None or args.names is not None
    if not args.once:
        log.info("Press Ctrl+C to stop reading telemetry...")
    summary_shown = None
    next_summary = 0.0
    status = EXIT_OK
    budget = ring_budget()
    try:
        try:
            while not stop.set:
                rings = source.rings()
                # More rings than descriptors to spare: each is opened for its
                # read and closed after it.
                over_budget = len(rings) > budget
                for ring in rings:
                    ring.unpark()
                    if ring.fd >= 0:
                        drain(ring, emitter, stop, source.tagged)
                    if over_budget:
                        ring.park()
                    if stop.set:
                        break
                source.retire(log)
                if args.once or stop.set:
                    break
                if mode == "summary" and time.monotonic() >= next_summary:
                    summary_shown = show_summary(emitter, source, out, summary_shown, True)
                    next_summary = time.monotonic() + SUMMARY_INTERVAL
                time.sleep(POLL_INTERVAL)
            if mode == "summary":
                show_summary(emitter, source, out, summary_shown, not args.once)
        except OutputError as err:
            status = EXIT_OUTPUT
            log.error("%s; stopped reading (the events of the unfinished batch stay unread)"
                      % err)
            if out.fd is not None:
                try:    # nothing more may reach the broken stdout, not even at exit
                    null = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(null, out.fd)
                    os.close(null)
                except OSError:
                    pass
        if stop.set:
            log.info("Received a stop signal, shutting down...")
        for ring in source.all_rings():
            if ring.fd >= 0:
                try:
                    ring.read_trailer()
                except (ReaderError, OSError):
                    pass
        print_totals(log, source, emitter, filtered)
    finally:
        for ring in source.all_rings():
            ring.close()
    return status


def show_summary(emitter, source, out, shown, following):
    """Prints the summary unless it is the same as the one shown last; returns
    the tables shown. While following, each print starts with a time line and
    prints are separated by a blank line (on a terminal the screen is cleared
    instead)."""
    tables = emitter.summary_text([r.agent for r in source.all_rings()])
    if tables == shown:
        return shown
    text = tables
    if following:
        now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
        text = "Summary at %s\n\n%s" % (now, tables)
        if out.isatty():
            text = "\x1b[H\x1b[2J" + text
        elif shown is not None:
            text = "\n" + text
    emitter.write(text)
    return tables


def build_parser():
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Read NIXL telemetry ring files (versions 1 to 4). Events go to stdout, "
                    "everything else to stderr.",
        epilog="Exit codes: 0 done (or stopped by SIGINT/SIGTERM), 1 stdout closed, "
               "2 usage error or a missing, broken or truncated file, 3 internal error.")
    parser.add_argument("--telemetry_path", "--telemetry-path", required=True, metavar="PATH",
                        help="a ring file, or a directory of ring files (one per agent)")
    parser.add_argument("--once", action="store_true",
                        help="read what is there now and exit instead of polling")
    parser.add_argument("--peek", action="store_true",
                        help="never write to the file (opened read-only; read_pos is not "
                             "advanced)")
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--json", action="store_true",
                      help="one JSON object per event and line")
    kind.add_argument("--summary", action="store_true",
                      help="print per-agent, per-event statistics instead of events")
    parser.add_argument("--category", action="append", dest="category_args", metavar="NAME",
                        help="only events of this category (name as printed, or number); "
                             "may be repeated")
    parser.add_argument("--name", action="append", dest="names", metavar="GLOB",
                        help="only events whose name matches this glob (fnmatch, "
                             "case-sensitive); may be repeated")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no informational lines on stderr (warnings and errors stay)")
    return parser


def main(argv=None):
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    log = Log(args.quiet)
    args.categories = None
    if args.category_args:
        args.categories = set()
        for text in args.category_args:
            number = parse_category(text)
            if number is None:
                log.error("--category %r: unknown category; accepted: %s, "
                          "UNKNOWN_CATEGORY_<n> or a number" % (text, ", ".join(CATEGORY_NAMES)))
                return EXIT_BAD_INPUT
            args.categories.add(number)

    stop = StopFlag()
    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[signum] = signal.signal(signum, stop)
        except ValueError:          # not the main thread
            pass
    try:
        return run(args, log, stop)
    except ReaderError as err:
        log.error(str(err))
        return EXIT_BAD_INPUT
    except OSError as err:
        where = err.filename if err.filename is not None else args.telemetry_path
        log.error("%s: %s; expected a readable NIXL ring file or directory"
                  % (where, err.strerror or err))
        return EXIT_BAD_INPUT
    except Exception as err:  # a bug: still one line, never a traceback
        log.error("internal error: %s: %s" % (type(err).__name__, err))
        return EXIT_INTERNAL
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


if __name__ == "__main__":
    sys.exit(main())
