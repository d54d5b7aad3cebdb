"""The wire format between the API process and the model worker: length-prefixed JSON frames on a Unix socket.

Each frame is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON (one object). Requests carry an
``id`` the answer repeats, so many requests can be in flight on one connection and be answered out of order.

Requests (API -> worker)::

    {"id": 7, "op": "predict", "spec": {"name", "backend", "config"}, "inputs": [{...}], "timeout_s": 10.0}
    {"id": 8, "op": "load", "spec": {...}}
    {"id": 9, "op": "ping"}

Answers (worker -> API)::

    {"id": 7, "ok": true, "outputs": [{...}], "latency_ms": 8.1, "batch_size": 4}
    {"id": 8, "ok": false, "kind": "error" | "timeout", "error": "model 'x' failed to load: ..."}
"""

from __future__ import annotations

import asyncio
import json
import struct
from typing import Any

MAX_FRAME_BYTES = 64 * 1024 * 1024
_HEADER = struct.Struct(">I")


class ProtocolError(Exception):
    """A frame that is too large or not a JSON object."""


def encode(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, separators=(",", ":"), default=str).encode()
    if len(body) > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {len(body)} bytes exceeds {MAX_FRAME_BYTES}")
    return _HEADER.pack(len(body)) + body


async def read(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next message, or None at a clean end of stream."""
    try:
        header = await reader.readexactly(_HEADER.size)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise ProtocolError("stream ended inside a frame header") from exc
        return None
    (size,) = _HEADER.unpack(header)
    if size > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {size} bytes exceeds {MAX_FRAME_BYTES}")
    body = await reader.readexactly(size)
    message = json.loads(body)
    if not isinstance(message, dict):
        raise ProtocolError("a frame must hold a JSON object")
    return message
