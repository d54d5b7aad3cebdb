"""Artifacts by content: the SHA-256 manifest of a folder of files and the version it names (the model store's and the
artifact store's common ground, below both). Nothing here imports torch or reads settings."""

from __future__ import annotations

import hashlib
from pathlib import Path

#: Folders being written start with this; a reader never takes one for a version.
STAGING_PREFIX = ".staging-"


class ModelStoreError(Exception):
    """The store cannot do what was asked; the message says what to do."""


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def manifest(folder: Path) -> str:
    """The artifact's manifest: one ``<sha256 of the file>  <relative path>`` line per file, sorted by path."""
    files = sorted((p for p in Path(folder).rglob("*") if p.is_file()), key=lambda p: p.relative_to(folder).as_posix())
    if not files:
        raise ModelStoreError(f"{folder} holds no files; there is nothing to store")
    return "".join(f"{file_sha256(p)}  {p.relative_to(folder).as_posix()}\n" for p in files)


def content_hash(folder: Path) -> str:
    """The version of the artifact in ``folder``: SHA-256 of its sorted ``<sha256>  <path>`` manifest."""
    return hashlib.sha256(manifest(folder).encode("utf-8")).hexdigest()
