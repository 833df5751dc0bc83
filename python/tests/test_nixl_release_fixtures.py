"""The NIXL release fixtures agree with the layouts documented in docs/compatibility.md.

Each directory of tests/data/nixl_releases/ holds rings a NIXL release wrote and what that
release's own reader printed for them. These tests decode every ring with a small decoder
written from the documented layouts and event tables (independent of the project's
readers) and require exactly the events the release's reader printed, formatted as it
formats them. They fail if a documented offset, slot size, type number, category name or
print rule is wrong.

Run from the repository root:  python3 -m unittest discover -s python/tests -v
"""

import datetime
import os
import struct
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(REPO, "tests", "data", "nixl_releases")
RELEASES = ("1.0.0", "1.0.1", "1.1.0", "1.2.0", "1.3.0", "1.3.1", "1.3.2", "1.4.0", "1.4.1",
            "1.5.0", "1.5.1")

HEADER = struct.Struct("<QQiiQQ")  # write_pos, read_pos, version, expected_version, capacity, mask
CATEGORY_NAMES = ("MEMORY", "TRANSFER", "CONNECTION", "BACKEND", "ERROR", "PERFORMANCE",
                  "SYSTEM", "CUSTOM")
TYPE_NAMES = ("agent_tx_bytes", "agent_rx_bytes", "agent_tx_requests_num",
              "agent_rx_requests_num", "agent_memory_registered", "agent_memory_deregistered",
              "agent_xfer_time", "agent_xfer_post_time", "agent_err_not_posted",
              "agent_err_invalid_param", "agent_err_backend", "agent_err_not_found",
              "agent_err_mismatch", "agent_err_not_allowed", "agent_err_repost_active",
              "agent_err_unknown", "agent_err_not_supported", "agent_err_remote_disconnect",
              "agent_err_canceled", "agent_err_no_telemetry",
              "agent_telemetry_events_dropped")

# release series -> (header version, slot size, number of known event types or None)
LAYOUTS = {
    "1.0": (1, 56, None),
    "1.1": (2, 48, None),
    "1.2": (2, 16, 20),
    "1.3": (3, 16, 20),
    "1.4": (4, 16, 21),
    "1.5": (4, 16, 21),
}


def category_text(number):
    if 0 <= number < len(CATEGORY_NAMES):
        return "NIXL_TELEMETRY_" + CATEGORY_NAMES[number]
    return "NIXL_TELEMETRY_MAX" if number == 8 else "BAD_CATEGORY"


def c_string(raw):
    return raw.split(b"\0", 1)[0].decode("utf-8")


def decode(release, data):
    """The events of a ring, as the lines NIXL's reader prints for each (no frame lines)."""
    version, slot, known_types = LAYOUTS[release.rsplit(".", 1)[0]]
    write_pos, read_pos, ver, expected, capacity, mask = HEADER.unpack_from(data, 0)
    assert (ver, expected) == (version, version), (ver, expected)
    assert mask == capacity - 1 and len(data) == HEADER.size + capacity * slot, len(data)
    events = []
    pos = read_pos
    while pos != write_pos:
        off = HEADER.size + pos * slot
        lines = []
        if version == 1:
            ts, cat = struct.unpack_from("<Qi", data, off)
            name, value = c_string(data[off + 12:off + 44]), struct.unpack_from("<Q", data, off + 48)[0]
            moment = datetime.datetime.fromtimestamp(ts // 1_000_000, tz=datetime.timezone.utc)
            lines.append("Timestamp: " + moment.strftime("%Y-%m-%d %H:%M:%S") + f".{ts % 1_000_000:06d}")
            lines.append("Category: " + category_text(cat))
        elif slot == 48:
            cat = struct.unpack_from("<i", data, off)[0]
            name, value = c_string(data[off + 4:off + 36]), struct.unpack_from("<Q", data, off + 40)[0]
            lines.append("Category: " + category_text(cat))
        elif version == 2:
            cat, typ, value = struct.unpack_from("<IIQ", data, off)
            name = TYPE_NAMES[typ] if typ < known_types else "unknown_event"
            lines.append("Category: " + category_text(cat if cat < 2**31 else cat - 2**32))
        else:
            typ, _padding, value = struct.unpack_from("<IIQ", data, off)
            name = TYPE_NAMES[typ] if typ < known_types else "unknown_event"
        lines += ["Event name: " + name, f"Value: {value}"]
        events.append(lines)
        pos = (pos + 1) & mask
    return events


def printed(text):
    """The events in a NIXL reader's stdout, as lists of lines between the frame lines."""
    events, block = [], None
    for line in text.splitlines():
        if line == "=== NIXL Telemetry Event ===":
            block = []
        elif line == "===========================":
            events.append(block)
            block = None
        elif block is not None:
            block.append(line)
    return events


class ReleaseFixtures(unittest.TestCase):
    def test_every_release_has_its_files(self):
        for release in RELEASES:
            for name in ("initiator", "target", "probe.ring"):
                for suffix in ("", ".reader.txt"):
                    path = os.path.join(FIXTURES, release, name + suffix)
                    self.assertTrue(os.path.isfile(path), path)

    def test_documented_layouts_decode_what_each_release_reader_printed(self):
        for release in RELEASES:
            for name in ("initiator", "target", "probe.ring"):
                with self.subTest(release=release, ring=name):
                    base = os.path.join(FIXTURES, release, name)
                    with open(base, "rb") as f:
                        data = f.read()
                    with open(base + ".reader.txt", encoding="utf-8") as f:
                        text = f.read()
                    self.assertEqual(decode(release, data), printed(text))
                    self.assertIn(f"(version: {LAYOUTS[release.rsplit('.', 1)[0]][0]})", text)
                    self.assertIn(f"Total events read: {len(printed(text))}\n", text)

    def test_workload_rings_hold_the_workload(self):
        for release in RELEASES:
            with self.subTest(release=release):
                with open(os.path.join(FIXTURES, release, "initiator.reader.txt"), encoding="utf-8") as f:
                    events = printed(f.read())
                names = [next(l for l in e if l.startswith("Event name: "))[12:] for e in events]
                values = [int(e[-1][7:]) for e in events]
                self.assertEqual(len(events), 22)
                self.assertEqual((names[0], values[0]), ("agent_memory_registered", 65536))
                self.assertEqual((names[-1], values[-1]), ("agent_memory_deregistered", 65536))
                moved = [(n, v) for n, v in zip(names, values) if n.endswith(("_bytes", "_num"))]
                self.assertEqual(moved, [("agent_tx_bytes", 4096), ("agent_tx_requests_num", 1)] * 3
                                 + [("agent_rx_bytes", 8192), ("agent_rx_requests_num", 1)] * 2)

    def test_crashing_readers_are_the_documented_ones(self):
        crashing = sorted(r for r in RELEASES
                          if os.path.exists(os.path.join(FIXTURES, r, "reader-crash.txt")))
        self.assertEqual(crashing, ["1.2.0", "1.3.0", "1.3.1", "1.3.2", "1.4.0"])


if __name__ == "__main__":
    unittest.main()
