"""PNG encoding and decoding in plain Python (zlib, struct, numpy) for the tests: the .venv has
no imaging library, and the tests compare pixels exactly."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

PNG_SIG = b"\x89PNG\r\n\x1a\n"
PNG_COLOR = {1: 0, 2: 4, 3: 2, 4: 6}


def write_png(path: Path, px: np.ndarray) -> None:
    assert px.dtype == np.uint8
    h, w = px.shape[:2]
    channels = 1 if px.ndim == 2 else px.shape[2]

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + px[r].tobytes() for r in range(h))
    ihdr = struct.pack(">IIBBBBB", w, h, 8, PNG_COLOR[channels], 0, 0, 0)
    path.write_bytes(PNG_SIG + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def decode_png(data: bytes) -> np.ndarray:
    """An 8-bit, non-interlaced PNG → (h, w) or (h, w, channels) uint8, every filter type."""
    assert data[:8] == PNG_SIG
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    assert header is not None
    w, h, depth, color, _, _, interlace = header
    assert depth == 8 and interlace == 0, header
    channels = {v: k for k, v in PNG_COLOR.items()}[color]
    stride = w * channels
    raw = zlib.decompress(idat)
    out = np.zeros((h, stride), dtype=np.int32)
    prev = np.zeros(stride, dtype=np.int32)
    for r in range(h):
        kind = raw[r * (stride + 1)]
        line = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=r * (stride + 1) + 1).astype(np.int32)
        cur = np.zeros(stride, dtype=np.int32)
        for i in range(stride):
            a = cur[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if kind == 0:
                pred = 0
            elif kind == 1:
                pred = a
            elif kind == 2:
                pred = b
            elif kind == 3:
                pred = (a + b) // 2
            else:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            cur[i] = (line[i] + pred) & 0xFF
        out[r] = cur
        prev = cur
    px = out.astype(np.uint8)
    return px.reshape(h, w) if channels == 1 else px.reshape(h, w, channels)


def read_png(path: Path) -> np.ndarray:
    return decode_png(path.read_bytes())
