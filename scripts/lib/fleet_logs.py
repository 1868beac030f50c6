#!/usr/bin/env python3
"""Make a simulated fleet of N zstd event logs for scripts/bench-fleet --qualify.

Each log is a copy of one of the bundled real Spark logs (datasets/sample: the two plain-JSON
logs and the two zstd ones, decompressed with the zstd CLI) with an app id of its own
(`local-17961NNNNNNNN`, as long as Spark's, written wherever the original id was), compressed
as Spark writes it (`.zstd`). Copies stay cheap to make and small on disk: each original is cut
at its app ids, each piece compressed once as a zstd frame, and a copy is those frames with a
raw frame holding its own id between them (a zstd file may hold several frames, read one after
another: RFC 8878 section 3.1); decompressed, a copy is byte for byte the original log with
the new id.

Every 100th log (1 %) is broken, in turn: cut short mid-frame (a truncated upload), or not an
event log at all. Logs go into 28 dated folders (`2026-11-DD/`). `.done` holds the counts.

    scripts/lib/fleet_logs.py OUT N
"""

import os
import struct
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SOURCES = [
    "local-1796009671201",
    "local-1796009777604",
    "local-1796009839341.zstd",
    "local-1796393658133.zstd",
]
MAGIC = struct.pack("<I", 0xFD2FB528)


def raw_frame(data: bytes) -> bytes:
    """A zstd frame of one raw (stored) block: single segment, content size in 1 or 2 bytes."""
    n = len(data)
    assert 0 < n < 65536 + 256
    if n < 256:
        header = bytes([0x20, n])  # single segment, 1-byte content size
    else:
        header = bytes([0x60]) + struct.pack("<H", n - 256)  # 2-byte size, minus 256
    block = (1 | (0 << 1) | (n << 3)).to_bytes(3, "little")  # last block, raw
    return MAGIC + header + block + data


def zstd_frame(data: bytes) -> bytes:
    return subprocess.run(["zstd", "-q", "-3", "-c"], input=data, check=True, capture_output=True).stdout


def sources():
    out = []
    for name in SOURCES:
        path = os.path.join(ROOT, "datasets", "sample", name)
        if name.endswith(".zstd"):
            text = subprocess.run(["zstd", "-q", "-dc", path], check=True, capture_output=True).stdout
            app = name[: -len(".zstd")]
        else:
            text = open(path, "rb").read()
            app = name
        pieces = text.split(app.encode())
        out.append((app, len(text), [zstd_frame(p) if p else b"" for p in pieces]))
    return out


def main():
    out, n = sys.argv[1], int(sys.argv[2])
    src = sources()
    total = broken = 0
    for i in range(n):
        app, size, frames = src[i % len(src)]
        new = f"local-17961{i:08d}"
        assert len(new) == len(app)
        d = os.path.join(out, f"2026-11-{1 + i % 28:02d}")
        os.makedirs(d, exist_ok=True)
        idf = raw_frame(new.encode())
        data = idf.join(frames)
        if i % 100 == 99:
            broken += 1
            if (i // 100) % 2 == 0:
                data = data[: len(data) // 2]  # cut mid-frame
            else:
                data = b"this is not a Spark event log\n" * 10
        else:
            total += size
        with open(os.path.join(d, new + ".zstd"), "wb") as f:
            f.write(data)
    with open(os.path.join(out, ".done"), "w") as f:
        f.write(f"logs {n}\nbroken {broken}\nbytes {total}\n")


if __name__ == "__main__":
    main()
