"""Tests of the comparisons scripts/nixl_matrix.py makes (no NIXL release needed).

The matrix decides its cells with these functions, so each is checked on the committed
fixtures: a NIXL reader's output is parsed to the events it printed, our readers' --json
is normalised to NIXL's spellings, and a Prometheus exposition compared with itself has no
difference while every kind of change (value, label, bucket, family, type) is reported.

Run from the repository root:  python3 -m unittest discover -s python/tests -v
"""

import importlib.util
import json
import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SPEC = importlib.util.spec_from_file_location("nixl_matrix", os.path.join(REPO, "scripts", "nixl_matrix.py"))
matrix = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(matrix)

RELEASES = os.path.join(REPO, "tests", "data", "nixl_releases")
PROMETHEUS = os.path.join(REPO, "tests", "data", "nixl_prometheus", "1.5.1", "metrics.txt")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


class NixlReaderOutput(unittest.TestCase):
    def test_version_1_output_has_timestamps_and_categories(self):
        events = matrix.parse_nixl_reader(read(os.path.join(RELEASES, "1.0.0", "target.reader.txt")))
        self.assertEqual(len(events), 2)
        ts, category, name, value = events[0]
        self.assertRegex(ts, r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}$")
        self.assertEqual((category, name, value), ("MEMORY", "agent_memory_registered", 65536))

    def test_version_4_output_has_neither(self):
        events = matrix.parse_nixl_reader(read(os.path.join(RELEASES, "1.5.1", "initiator.reader.txt")))
        self.assertEqual(len(events), 22)
        self.assertEqual(events[0], (None, None, "agent_memory_registered", 65536))

    def test_unknown_categories_keep_nixl_spelling(self):
        events = matrix.parse_nixl_reader(read(os.path.join(RELEASES, "1.1.0", "probe.ring.reader.txt")))
        self.assertEqual([e[1] for e in events][:3], ["BAD_CATEGORY", "MEMORY", "TRANSFER"])
        self.assertEqual(events[-2][1], "NIXL_TELEMETRY_MAX")


class OurJson(unittest.TestCase):
    def test_normalised_to_nixl_spellings(self):
        lines = [
            {"timestamp_us": 1700000000123456, "category": "MEMORY", "category_id": 0, "name": "a", "value": 1},
            {"timestamp_us": None, "category": "UNKNOWN_CATEGORY_8", "category_id": 8, "name": "b", "value": 2},
            {"timestamp_us": None, "category": "UNKNOWN_CATEGORY_-1", "category_id": -1, "name": "c", "value": 3},
            {"timestamp_us": None, "category": None, "category_id": None, "name": "unknown_event_21", "value": 4},
        ]
        events = matrix.parse_our_json("\n".join(json.dumps(x) for x in lines))
        self.assertEqual(events, [
            ("2023-11-14 22:13:20.123456", "MEMORY", "a", 1),
            (None, "NIXL_TELEMETRY_MAX", "b", 2),
            (None, "BAD_CATEGORY", "c", 3),
            (None, None, "unknown_event", 4),
        ])

    def test_differences_name_the_event(self):
        d = matrix.diff_events([(None, None, "x", 1)], [(None, None, "x", 2)], "NIXL", "ours")
        self.assertIn("event 0", d)
        self.assertEqual(matrix.diff_events([(None, None, "x", 1)], [(None, None, "x", 1)], "a", "b"), "")


class EmitLines(unittest.TestCase):
    def test_errors_use_the_error_form(self):
        self.assertEqual(json.loads(matrix.emit_line(None, "agent_err_not_found", 1)),
                         {"error": "NIXL_ERR_NOT_FOUND"})
        self.assertEqual(json.loads(matrix.emit_line("ERROR", "NIXL_ERR_BACKEND", 1)),
                         {"error": "NIXL_ERR_BACKEND"})

    def test_typed_names_get_their_category(self):
        self.assertEqual(json.loads(matrix.emit_line(None, "agent_rx_bytes", 8192)),
                         {"category": "TRANSFER", "name": "agent_rx_bytes", "value": 8192})


class Expositions(unittest.TestCase):
    def setUp(self):
        self.text = read(PROMETHEUS)
        self.nixl = matrix.parse_exposition(self.text)

    def compare(self, ours_text):
        return matrix.compare_expositions(self.nixl, matrix.parse_exposition(ours_text))

    def test_identical_has_no_difference(self):
        self.assertEqual(self.compare(self.text), ([], [], []))
        self.assertEqual(self.nixl["agent_xfer_time_us"]["type"], "histogram")

    def test_a_changed_value_is_reported(self):
        changed = self.text.replace('status="not_found"} 2', 'status="not_found"} 3')
        differences, _, _ = self.compare(changed)
        self.assertEqual(len(differences), 1)
        self.assertIn("not_found", differences[0])

    def test_measured_times_are_compared_by_count_only(self):
        lines = []
        for line in self.text.splitlines():
            if line.startswith("agent_xfer_time_us_sum{") or line.startswith("agent_xfer_time_total{"):
                line = line.rsplit(" ", 1)[0] + " 123456789"
            lines.append(line)
        self.assertEqual(self.compare("\n".join(lines))[0], [])
        fewer = self.text.replace('agent_xfer_time_us_count{agent_name="initiator",hostname="vm"} 5',
                                  'agent_xfer_time_us_count{agent_name="initiator",hostname="vm"} 4')
        self.assertEqual(len(self.compare(fewer)[0]), 1)

    def test_extra_label_bucket_family_and_type_are_reported(self):
        labelled = self.text.replace('agent_tx_bytes_total{agent_name=', 'agent_tx_bytes_total{category="TRANSFER",agent_name=')
        self.assertTrue(any("adds label" in d for d in self.compare(labelled)[0]))
        no_bucket = "\n".join(l for l in self.text.splitlines() if 'le="25"' not in l)
        self.assertTrue(any("bucket bounds" in d for d in self.compare(no_bucket)[0]))
        no_family = "\n".join(l for l in self.text.splitlines() if not l.startswith(("exposer_scrapes_total", "# HELP exposer_scrapes_total", "# TYPE exposer_scrapes_total")))
        self.assertTrue(any("exposer_scrapes_total" in d and "missing" in d for d in self.compare(no_family)[0]))
        retyped = self.text.replace("# TYPE agent_tx_last_bytes gauge", "# TYPE agent_tx_last_bytes counter")
        self.assertTrue(any("type gauge in NIXL, counter in ours" in d for d in self.compare(retyped)[0]))

    def test_help_text_is_a_note_and_extra_families_are_listed(self):
        ours = self.text.replace("# HELP agent_tx_bytes_total Number of bytes sent by the agent",
                                 "# HELP agent_tx_bytes_total Bytes sent") + "\n# TYPE ours_only counter\nours_only 1\n"
        differences, notes, extra = self.compare(ours)
        self.assertEqual(differences, [])
        self.assertEqual(len(notes), 1)
        self.assertEqual(extra, ["ours_only"])


if __name__ == "__main__":
    unittest.main()
