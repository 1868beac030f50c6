#!/usr/bin/env python3
"""CloudWatch in the protocol the AWS SDK for Rust speaks, in front of moto (never real AWS).

aws-sdk-cloudwatch (1.100 and later) sends CloudWatch calls as Smithy RPC v2 CBOR
(`POST /service/GraniteServiceVersion20100801/operation/<Op>`, `Content-Type: application/cbor`,
`smithy-protocol: rpc-v2-cbor`); moto 5.2 answers CloudWatch in JSON 1.0 and Query only. This
WSGI middleware turns each such request into moto's JSON 1.0 call (the CBOR body decoded, its
timestamps as epoch seconds, `X-Amz-Target: GraniteServiceVersion20100801.<Op>`) and moto's
answer back into CBOR, typed by botocore's model of the operation's output (timestamps as tag 1,
doubles as floats), errors as `{"__type", "message"}`. Every other request goes to moto as is,
so boto3 (JSON 1.0) reads back what the Rust client wrote.

Used by `emulator.py` (the EMR emulator) and alone: `cloudwatch_cbor.py [--port 0]` serves moto
(every service) with the translation and prints `READY <endpoint>` once it listens.
"""

import argparse
import gzip
import io
import json
import logging
import math
import struct
from datetime import datetime

import botocore.session

PREFIX = "/service/GraniteServiceVersion20100801/operation/"
TARGET = "GraniteServiceVersion20100801"

# -- CBOR (RFC 8949), the subset Smithy RPC v2 uses ------------------------------------------


class Tagged:
    def __init__(self, tag, value):
        self.tag, self.value = tag, value


def cbor_decode(data):
    value, end = _decode(data, 0)
    if end != len(data):
        raise ValueError(f"CBOR: {len(data) - end} bytes after the value")
    return value


def _length(data, i, info):
    if info < 24:
        return info, i
    size = {24: 1, 25: 2, 26: 4, 27: 8}.get(info)
    if size is None:
        return None, i  # indefinite (31)
    return int.from_bytes(data[i:i + size], "big"), i + size


def _decode(data, i):
    head = data[i]
    major, info = head >> 5, head & 31
    i += 1
    if major == 7:
        if info == 20:
            return False, i
        if info == 21:
            return True, i
        if info in (22, 23):
            return None, i
        if info == 25:
            return struct.unpack(">e", data[i:i + 2])[0], i + 2
        if info == 26:
            return struct.unpack(">f", data[i:i + 4])[0], i + 4
        if info == 27:
            return struct.unpack(">d", data[i:i + 8])[0], i + 8
        raise ValueError(f"CBOR: simple value {info}")
    n, i = _length(data, i, info)
    if major == 0:
        return n, i
    if major == 1:
        return -1 - n, i
    if major in (2, 3):
        if n is None:  # indefinite: chunks until the break
            parts = []
            while data[i] != 0xFF:
                part, i = _decode(data, i)
                parts.append(part)
            i += 1
            return (b"" if major == 2 else "").join(parts), i
        raw = bytes(data[i:i + n])
        return (raw if major == 2 else raw.decode("utf-8")), i + n
    if major == 4:
        out = []
        while (n is None and data[i] != 0xFF) or (n is not None and len(out) < n):
            v, i = _decode(data, i)
            out.append(v)
        return out, i + (1 if n is None else 0)
    if major == 5:
        out, count = {}, 0
        while (n is None and data[i] != 0xFF) or (n is not None and count < n):
            k, i = _decode(data, i)
            v, i = _decode(data, i)
            out[k] = v
            count += 1
        return out, i + (1 if n is None else 0)
    if major == 6:
        v, i = _decode(data, i)
        return Tagged(n, v), i
    raise ValueError(f"CBOR: major type {major}")


def _head(major, n):
    if n < 24:
        return bytes([major << 5 | n])
    for info, size in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if n < 1 << (8 * size):
            return bytes([major << 5 | info]) + n.to_bytes(size, "big")
    raise ValueError("CBOR: integer too large")


def cbor_encode(v):
    if v is None:
        return b"\xf6"
    if v is True:
        return b"\xf5"
    if v is False:
        return b"\xf4"
    if isinstance(v, Tagged):
        return _head(6, v.tag) + cbor_encode(v.value)
    if isinstance(v, int):
        return _head(0, v) if v >= 0 else _head(1, -1 - v)
    if isinstance(v, float):
        return b"\xfb" + struct.pack(">d", v)
    if isinstance(v, str):
        raw = v.encode("utf-8")
        return _head(3, len(raw)) + raw
    if isinstance(v, (bytes, bytearray)):
        return _head(2, len(v)) + bytes(v)
    if isinstance(v, (list, tuple)):
        return _head(4, len(v)) + b"".join(cbor_encode(x) for x in v)
    if isinstance(v, dict):
        return _head(5, len(v)) + b"".join(cbor_encode(k) + cbor_encode(x) for k, x in v.items())
    raise TypeError(f"CBOR: cannot encode {type(v).__name__}")


# -- CBOR <-> JSON 1.0 ---------------------------------------------------------------------

def to_json(v):
    """A decoded CBOR request as JSON 1.0 has it (timestamps: epoch seconds)."""
    if isinstance(v, Tagged):
        return to_json(v.value)
    if isinstance(v, list):
        return [to_json(x) for x in v]
    if isinstance(v, dict):
        return {k: to_json(x) for k, x in v.items()}
    if isinstance(v, bytes):
        raise ValueError("CBOR: blobs are not used by these operations")
    return v


def _epoch(v):
    if isinstance(v, (int, float)):
        return float(v)
    return datetime.fromisoformat(str(v).replace("Z", "+00:00")).timestamp()


def typed(shape, v):
    """A JSON value as CBOR wants it for `shape` (botocore's model)."""
    if v is None or shape is None:
        return v
    t = shape.type_name
    if t == "structure":
        return {k: typed(shape.members.get(k), x) for k, x in v.items()}
    if t == "list":
        return [typed(shape.member, x) for x in v]
    if t == "map":
        return {k: typed(shape.value, x) for k, x in v.items()}
    if t == "timestamp":
        return Tagged(1, _epoch(v))
    if t in ("double", "float"):
        return float(v) if not (isinstance(v, str) and v.lower() == "nan") else math.nan
    if t in ("integer", "long", "short", "byte"):
        return int(v)
    return v


class CloudWatchCbor:
    """WSGI middleware: CloudWatch RPC v2 CBOR calls translated for `app` (moto)."""

    def __init__(self, app):
        self.app = app
        self.model = botocore.session.get_session().get_service_model("cloudwatch")

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if not path.startswith(PREFIX):
            return self.app(environ, start_response)
        op = path[len(PREFIX):]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length else b""
        if "gzip" in environ.get("HTTP_CONTENT_ENCODING", ""):
            raw = gzip.decompress(raw)
        try:
            body = to_json(cbor_decode(raw)) if raw else {}
            output = self.model.operation_model(op).output_shape
        except Exception as e:  # a request this translation cannot read: say so, in CBOR
            return self.answer(start_response, "400 Bad Request",
                               {"__type": "SerializationException", "message": str(e)}, [])
        payload = json.dumps(body).encode()
        env = dict(environ)
        env["wsgi.input"] = io.BytesIO(payload)
        env["CONTENT_LENGTH"] = str(len(payload))
        env["CONTENT_TYPE"] = "application/x-amz-json-1.0"
        env["HTTP_X_AMZ_TARGET"] = f"{TARGET}.{op}"
        env["PATH_INFO"] = "/"
        env.pop("HTTP_CONTENT_ENCODING", None)
        env.pop("HTTP_SMITHY_PROTOCOL", None)
        got = {}

        def capture(status, headers, exc_info=None):
            got["status"], got["headers"] = status, headers
            return lambda _b: None

        answer = b"".join(self.app(env, capture))
        status = got.get("status", "500 Internal Server Error")
        keep = [(k, v) for k, v in got.get("headers", [])
                if k.lower() in ("x-amzn-requestid", "x-amzn-query-error")]
        try:
            obj = json.loads(answer) if answer.strip() else {}
        except ValueError:
            obj = {"__type": "InternalFailure", "message": answer.decode(errors="replace")}
        if status.startswith("2"):
            obj = typed(output, obj) if output is not None else {}
        else:
            obj = {k: obj[k] for k in ("__type", "message", "Message") if k in obj}
        return self.answer(start_response, status, obj, keep)

    @staticmethod
    def answer(start_response, status, obj, headers):
        body = cbor_encode(obj)
        start_response(status, headers + [
            ("Content-Type", "application/cbor"), ("smithy-protocol", "rpc-v2-cbor"),
            ("Content-Length", str(len(body)))])
        return [body]


def main():
    from moto.moto_server.threaded_moto_server import MotoRequestHandler
    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, default=0)
    a = p.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    app = CloudWatchCbor(DomainDispatcherApplication(create_backend_app))
    server = make_server("127.0.0.1", a.port, app, True, request_handler=MotoRequestHandler)
    print(f"READY http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
