#!/usr/bin/env python3
"""An OTLP/HTTP trace receiver for the traces test, on the OpenTelemetry
protocol's own Python classes (opentelemetry-proto).

    python otlp_receiver.py

Listens on a free loopback port and prints it as the first line of stdout.
Each POST to /v1/traces with a JSON body is parsed strictly into
ExportTraceServiceRequest (google.protobuf.json_format.Parse; unknown
fields are errors). The OTLP JSON encoding writes trace and span ids in hex
where protobuf's JSON mapping has base64: they are turned into base64
first, and a value that is not hex of the right length is an error. Then
every span is printed as one JSON line:
  {"span": {traceId, spanId, parentSpanId, name, kind, attributes: {k: v},
            status: {code, message}, start, end, traceState},
   "resource": {k: v}}
A request that does not parse is answered 400 and printed as
  {"error": "..."}
"""

from __future__ import annotations

import base64
import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

ID_LENGTHS = {"traceId": 16, "spanId": 8, "parentSpanId": 8}


def hex_ids_to_base64(v):
    """OTLP JSON ids (hex) as protobuf JSON bytes (base64), checked."""
    if isinstance(v, list):
        return [hex_ids_to_base64(x) for x in v]
    if not isinstance(v, dict):
        return v
    out = {}
    for k, x in v.items():
        if k in ID_LENGTHS and isinstance(x, str):
            raw = bytes.fromhex(x)  # ValueError when not hex
            if len(raw) != ID_LENGTHS[k]:
                raise ValueError(f"{k} {x!r} is {len(raw)} bytes, not {ID_LENGTHS[k]}")
            out[k] = base64.b64encode(raw).decode()
        else:
            out[k] = hex_ids_to_base64(x)
    return out


def value_of(any_value):
    which = any_value.WhichOneof("value")
    return getattr(any_value, which) if which else None


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            if self.path != "/v1/traces":
                raise ValueError(f"POST to {self.path}, not /v1/traces")
            if not (self.headers.get("Content-Type") or "").startswith("application/json"):
                raise ValueError(f"content type {self.headers.get('Content-Type')!r}")
            req = ExportTraceServiceRequest()
            json_format.Parse(json.dumps(hex_ids_to_base64(json.loads(body))), req, ignore_unknown_fields=False)
        except Exception as e:  # noqa: BLE001 - reported to the test
            emit({"error": f"{type(e).__name__}: {e}"})
            self.send_response(400)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        for rs in req.resource_spans:
            resource = {a.key: value_of(a.value) for a in rs.resource.attributes}
            for ss in rs.scope_spans:
                for s in ss.spans:
                    emit({
                        "resource": resource,
                        "span": {
                            "traceId": s.trace_id.hex(),
                            "spanId": s.span_id.hex(),
                            "parentSpanId": s.parent_span_id.hex(),
                            "traceState": s.trace_state,
                            "name": s.name,
                            "kind": s.kind,
                            "start": s.start_time_unix_nano,
                            "end": s.end_time_unix_nano,
                            "attributes": {a.key: value_of(a.value) for a in s.attributes},
                            "status": {"code": s.status.code, "message": s.status.message},
                        },
                    })
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


server = HTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
