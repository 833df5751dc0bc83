"""Writes tao_export.json: the document TAO's own export script
(nvidia_tao_core/telemetry/migration/export_metrics.py) writes for a TAO
deployment whose metrics service received the accepted records of the
repository's corpus (tests/data/tao_processor/corpus.jsonl).

TAO's service keeps the metrics as one MongoDB document, updated by its own
processor (nvidia_tao_core.telemetry.processor.MetricProcessor) for each posted
record, and stored with `upsert({'name': 'metrics'}, metrics)`, so the document
carries MongoDB's `_id` and `name: "metrics"`; the export script dumps it with
`json.dump(metrics, f, default=str)`. This script does the same without MongoDB:
the processor runs over the records (each with the corpus's time), the `_id` is a
fixed ObjectId in its string form, and the document is dumped the same way.

    python make_tao_export.py > tao_export.json   # with nvidia-tao-core==6.26.3
"""

import json
import pathlib
import sys
from datetime import datetime

from nvidia_tao_core.telemetry.processor import MetricProcessor

# The fields of TAO's request schema (TelemetryReq): its server refuses others.
SCHEMA = {"version", "network", "action", "success", "gpu", "time_lapsed",
          "user_error", "client_type", "automl_triggered"}

corpus = pathlib.Path(__file__).resolve().parents[4] / "tests/data/tao_processor/corpus.jsonl"
metrics = {"_id": "6650f0c2a1b2c3d4e5f60718", "name": "metrics"}
processor = MetricProcessor()
for line in corpus.read_text().splitlines():
    envelope = json.loads(line)
    record = envelope["record"]
    if not set(record) <= SCHEMA:
        continue
    context = {"now": datetime.fromisoformat(envelope["now"])}
    metrics = processor.process(metrics, record, context)
json.dump(metrics, sys.stdout, default=str)
