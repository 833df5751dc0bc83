#!/usr/bin/env python3
"""A loopback OTLP/HTTP receiver for the OTLP exporter's tests.

Every request to /v1/metrics or /v1/logs is decoded with the OpenTelemetry
project's own Python definitions (the `opentelemetry-proto` package, with
`protobuf`), so the bytes the exporter sends are checked by an implementation
the project did not write. Each request becomes one JSON line in --out:

    {"path", "status", "time", "headers", "body_bytes", "error"?,
     "resource": {attributes}, "scope": {"name", "version"},
     "points": [...]  (metrics)  or  "records": [...]  (logs)}

How it answers is set with POST /control and a JSON object:

    {"mode": "ok"}                                   200 (the default)
    {"mode": "unavailable", "retry_after": "2"}      503, with Retry-After if given
    {"mode": "unavailable", "status": 429}           another retryable status (429, 502, 504)
    {"mode": "slow", "delay": 3.0}                   waits, then 200
    {"mode": "partial", "rejected": 5, "message": "..."}   200 with partial success
    {"mode": "bad_request"}                          400
    ... "times": N                                   only for the next N requests, then ok
    ... "path": "/v1/logs"                           only for requests to that path (others: ok)

A list in place of a value ("status": [429, 502], "retry_after": [null, "soon"])
gives the requests answered in this mode its items in turn.

It prints "PORT <n>" on its first line once it listens. Standard library plus
the two packages; run it with the test virtual environment's python.
"""

import argparse
import gzip
import json
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.metrics.v1 import metrics_pb2

STATE_LOCK = threading.Lock()
STATE = {"mode": "ok", "times": None}
OUT_LOCK = threading.Lock()


def any_value(v):
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind)


def attributes(kvs):
    return {kv.key: any_value(kv.value) for kv in kvs}


def number(p):
    kind = p.WhichOneof("value")
    return None if kind is None else getattr(p, kind)


def metric_points(request):
    resource, scope, points = {}, {}, []
    for rm in request.resource_metrics:
        resource = attributes(rm.resource.attributes)
        for sm in rm.scope_metrics:
            scope = {"name": sm.scope.name, "version": sm.scope.version}
            for m in sm.metrics:
                kind = m.WhichOneof("data")
                base = {"metric": m.name, "type": kind, "description": m.description, "unit": m.unit}
                if kind in ("sum", "gauge"):
                    data = getattr(m, kind)
                    for p in data.data_points:
                        point = dict(base)
                        point.update(
                            attributes=attributes(p.attributes),
                            value=number(p),
                            start=p.start_time_unix_nano,
                            time=p.time_unix_nano,
                        )
                        if kind == "sum":
                            point.update(
                                monotonic=data.is_monotonic,
                                temporality=metrics_pb2.AggregationTemporality.Name(
                                    data.aggregation_temporality
                                ),
                            )
                        points.append(point)
                elif kind == "histogram":
                    for p in m.histogram.data_points:
                        point = dict(base)
                        point.update(
                            attributes=attributes(p.attributes),
                            count=p.count,
                            sum=p.sum if p.HasField("sum") else None,
                            min=p.min if p.HasField("min") else None,
                            max=p.max if p.HasField("max") else None,
                            bucket_counts=list(p.bucket_counts),
                            explicit_bounds=list(p.explicit_bounds),
                            start=p.start_time_unix_nano,
                            time=p.time_unix_nano,
                            temporality=metrics_pb2.AggregationTemporality.Name(
                                m.histogram.aggregation_temporality
                            ),
                        )
                        points.append(point)
                else:
                    points.append(dict(base, error="unexpected data kind"))
    return resource, scope, points


def log_records(request):
    resource, scope, records = {}, {}, []
    for rl in request.resource_logs:
        resource = attributes(rl.resource.attributes)
        for sl in rl.scope_logs:
            scope = {"name": sl.scope.name, "version": sl.scope.version}
            for r in sl.log_records:
                records.append(
                    {
                        "time": r.time_unix_nano,
                        "observed": r.observed_time_unix_nano,
                        "severity_number": r.severity_number,
                        "severity_text": r.severity_text,
                        "body": any_value(r.body),
                        "attributes": attributes(r.attributes),
                    }
                )
    return resource, scope, records


def current_mode(path):
    """The mode for a request to `path` (counting down "times")."""
    with STATE_LOCK:
        if STATE.get("path") not in (None, path):
            return {"mode": "ok", "times": None}
        mode = dict(STATE)
        served = STATE.get("served", 0)
        STATE["served"] = served + 1
        for key, value in mode.items():
            if isinstance(value, list):
                mode[key] = value[served % len(value)] if value else None
        if STATE.get("times") is not None:
            STATE["times"] -= 1
            if STATE["times"] <= 0:
                STATE.clear()
                STATE.update({"mode": "ok", "times": None})
        return mode


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet
        pass

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        self.send_header("Content-Type", "application/x-protobuf")
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        try:
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up waiting (the slow mode's point): nothing to answer.
            self.close_connection = True

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        if self.path == "/control":
            new = json.loads(raw or b"{}")
            with STATE_LOCK:
                STATE.clear()
                STATE.update({"mode": "ok", "times": None})
                STATE.update(new)
            self.reply(204)
            return
        if self.path not in ("/v1/metrics", "/v1/logs"):
            self.reply(404)
            return
        mode = current_mode(self.path)
        entry = {
            "path": self.path,
            "time": time.time(),
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body_bytes": len(raw),
            "mode": mode["mode"],
        }
        count = 0
        try:
            body = raw
            if self.headers.get("Content-Encoding", "").lower() == "gzip":
                body = gzip.decompress(raw)
            if self.path == "/v1/metrics":
                request = metrics_service_pb2.ExportMetricsServiceRequest()
                request.ParseFromString(body)
                entry["resource"], entry["scope"], entry["points"] = metric_points(request)
                count = len(entry["points"])
            else:
                request = logs_service_pb2.ExportLogsServiceRequest()
                request.ParseFromString(body)
                entry["resource"], entry["scope"], entry["records"] = log_records(request)
                count = len(entry["records"])
        except Exception as e:  # recorded, answered 400
            entry["error"] = repr(e)
            entry["status"] = 400
            self.record(entry)
            self.reply(400, str(e).encode())
            return

        name = mode["mode"]
        if name == "slow":
            time.sleep(float(mode.get("delay", 1.0)))
        if name == "unavailable":
            headers = []
            if mode.get("retry_after") is not None:
                headers.append(("Retry-After", str(mode["retry_after"])))
            status = int(mode.get("status") or 503)
            entry["status"] = status
            self.record(entry)
            self.reply(status, b"", headers)
            return
        if name == "bad_request":
            entry["status"] = 400
            self.record(entry)
            self.reply(400, b"refused by the test receiver")
            return
        if self.path == "/v1/metrics":
            response = metrics_service_pb2.ExportMetricsServiceResponse()
            if name == "partial":
                response.partial_success.rejected_data_points = min(int(mode.get("rejected", 1)), count)
                response.partial_success.error_message = mode.get("message", "partly rejected")
        else:
            response = logs_service_pb2.ExportLogsServiceResponse()
            if name == "partial":
                response.partial_success.rejected_log_records = min(int(mode.get("rejected", 1)), count)
                response.partial_success.error_message = mode.get("message", "partly rejected")
        entry["status"] = 200
        if name == "partial":
            entry["rejected"] = min(int(mode.get("rejected", 1)), count)
        # Recorded before answering, so a client that saw the answer finds the line.
        self.record(entry)
        self.reply(200, response.SerializeToString())

    def record(self, entry):
        with OUT_LOCK:
            with open(self.server.out_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--out", required=True)
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.out_path = args.out
    if args.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
