"""Helpers for the training commands of task plugins (``Task.train``): what every trainer records and writes.

Nothing here imports torch; trainers import what they need themselves.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any


def file_info(path: Path) -> dict[str, Any]:
    """Name, size and sha256 of a file, so that a model's metadata says exactly which data it was trained on."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return {"file": path.name, "bytes": path.stat().st_size, "sha256": digest.hexdigest()}


def write_json_atomically(path: Path, data: Any) -> None:
    """Write ``data`` as indented JSON to ``path`` through a temporary file, so a reader never sees half of it."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
