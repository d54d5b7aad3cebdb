"""Packing a model folder for ``uploadModel``."""

from __future__ import annotations

import io
import os
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path


def pack_folder(folder: Path) -> Path:
    """A ``.tar.gz`` of the folder's regular files, in a temporary file (the caller deletes it). Links and other
    special files are left out: the server refuses them anyway."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder: pass the folder that save_pretrained wrote")
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
    if not files:
        raise FileNotFoundError(f"{folder} holds no files")
    descriptor, name = tempfile.mkstemp(prefix="dynaforge-model-", suffix=".tar.gz")
    with os.fdopen(descriptor, "wb") as handle, tarfile.open(fileobj=handle, mode="w:gz") as archive:
        for path in files:
            archive.add(path, arcname=path.relative_to(folder).as_posix(), recursive=False)
    return Path(name)


class ProgressReader(io.BufferedReader):
    """A file read for an upload that reports each chunk read (a progress bar's ``update``)."""

    def __init__(self, path: Path, on_read: Callable[[int], object] | None):
        super().__init__(io.FileIO(path, "rb"))
        self._on_read = on_read

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        if self._on_read is not None and data:
            self._on_read(len(data))
        return data
