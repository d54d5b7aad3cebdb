"""JSON for the hot paths: orjson where it gives the same values, the standard library where it does not.

Pages of examples decode a few JSON columns per row and encode one large response; orjson does both several times
faster than :mod:`json`. Values written by :func:`json.dumps` may hold ``NaN`` or ``Infinity``, which orjson refuses
to read: :func:`loads` falls back to :func:`json.loads` for them. :func:`dumps` writes compact JSON (UTF-8, no
spaces); a value orjson cannot write (a non-string key, an integer beyond 64 bits, an unknown type) goes through
:func:`json.dumps` instead, which writes it or raises as it always did. Non-finite floats become ``null`` (JSON has
no spelling for them).
"""

from __future__ import annotations

import json
from typing import Any

import orjson


def loads(text: str | bytes) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
