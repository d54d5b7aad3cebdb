"""Uploaded model artifacts, by content hash, in the model store.

A model builder's upload (``uploadModel``: an archive of a Hugging Face model folder, checked by
:mod:`dynaforge.model_archive`) is unpacked into a staging folder, hashed and stored under its hash; models point at
it with the ``transformers`` backend's ``{"artifact": "<sha256>"}``, and evaluations load that stored copy. The hash
is the one :mod:`dynaforge.model_store` gives trained weights: SHA-256 of the sorted ``<sha256>  <name>`` manifest of
the files, so the same files uploaded twice are stored once, and a loader can tell that what it reads is what was
checked (:meth:`ArtifactStore.folder` hashes it again).

Where artifacts live is an :class:`ArtifactStorage`. The one here keeps them on the filesystem, under
``DYNAFORGE_DATA_DIR/models/_artifacts/<sha256>/`` (a task code cannot start with ``_``, so no trained model of
:class:`~dynaforge.model_store.ModelStore` shares the folder); an object store (S3-compatible) would implement the
same four methods, downloading into a local cache in :meth:`ArtifactStorage.local_folder`. Artifacts are written
into a staging folder inside the store and renamed into place, so a reader never sees half of one, and never
change once stored. Nothing here imports torch.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol

from dynaforge.model_archive import ArchiveLimits, unpack_archive
from dynaforge.model_store import STAGING_PREFIX, ModelStoreError, content_hash

if TYPE_CHECKING:
    from dynaforge.settings import Settings

ARTIFACTS_DIR = "_artifacts"
DIGEST = re.compile(r"[0-9a-f]{64}")


def is_digest(value: object) -> bool:
    """Whether ``value`` could name an artifact: 64 lowercase hexadecimal digits."""
    return isinstance(value, str) and DIGEST.fullmatch(value) is not None


class ArtifactStorage(Protocol):
    """Where stored artifacts live, by digest. Implementations never change an artifact once it is stored."""

    def exists(self, digest: str) -> bool:
        """Whether an artifact of this digest is stored."""
        ...

    def staging(self) -> AbstractContextManager[Path]:
        """An empty local folder to unpack a new artifact into, removed when the block ends (after :meth:`put`)."""
        ...

    def put(self, digest: str, folder: Path) -> bool:
        """Store the files of the staging ``folder`` as ``digest``; False when that digest was stored already (the
        stored copy is kept)."""
        ...

    def local_folder(self, digest: str) -> Path:
        """A local folder holding the artifact's files, for a model loader (remote storage downloads it first);
        :class:`ModelStoreError` when it is not stored."""
        ...


class FilesystemArtifactStorage:
    """Artifacts as folders under ``root`` (``DYNAFORGE_DATA_DIR/models/_artifacts``), one per digest."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"FilesystemArtifactStorage({str(self.root)!r})"

    def exists(self, digest: str) -> bool:
        return (self.root / digest).is_dir()

    @contextmanager
    def staging(self) -> Iterator[Path]:
        self.root.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=self.root))
        os.chmod(folder, 0o755)  # mkdtemp makes it owner-only; a stored artifact is readable like any other
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def put(self, digest: str, folder: Path) -> bool:
        target = self.root / digest
        if target.is_dir():
            return False
        try:
            os.rename(folder, target)  # the staging folder is in root: an atomic rename
        except OSError:
            if target.is_dir():  # the same content, stored meanwhile by another upload
                return False
            raise
        return True

    def local_folder(self, digest: str) -> Path:
        folder = self.root / digest
        if not folder.is_dir():
            raise ModelStoreError(f"no artifact {digest} in {self.root}; upload the model again (uploadModel)")
        return folder


@dataclass(frozen=True)
class StoredArtifact:
    """An uploaded model folder in the store."""

    digest: str
    files: list[str]
    size: int  # bytes, all files together
    created: bool  # False: the same files were stored already, and that copy is used


class ArtifactStore:
    """Uploaded model artifacts: checked archives in, content-addressed folders out."""

    def __init__(self, storage: ArtifactStorage) -> None:
        self.storage = storage

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> ArtifactStore:
        """The store of the configured data directory (``DYNAFORGE_DATA_DIR``, default ``./dynaforge-data``)."""
        from dynaforge.settings import Settings

        root = (settings or Settings()).data_dir / "models" / ARTIFACTS_DIR
        return cls(FilesystemArtifactStorage(root.absolute()))

    def __repr__(self) -> str:
        return f"ArtifactStore({self.storage!r})"

    def add_archive(self, stream: BinaryIO, limits: ArchiveLimits) -> StoredArtifact:
        """Check and unpack the archive in ``stream`` (see :func:`~dynaforge.model_archive.unpack_archive`, which
        raises :class:`~dynaforge.errors.InvalidInput` at its first problem) and store its files. Blocking: run it
        off the event loop."""
        with self.storage.staging() as folder:
            files = unpack_archive(stream, folder, limits)
            digest = content_hash(folder)
            size = sum((folder / name).stat().st_size for name in files)
            created = self.storage.put(digest, folder)
        return StoredArtifact(digest, files, size, created)

    def exists(self, digest: object) -> bool:
        return is_digest(digest) and self.storage.exists(str(digest))

    def folder(self, digest: str, *, verify: bool = True) -> Path:
        """The local folder of a stored artifact. With ``verify`` (the default, for loaders) its files are hashed
        again: a folder changed since it was checked is refused rather than loaded."""
        if not is_digest(digest):
            raise ModelStoreError(f"{digest!r} is not an artifact's digest (64 lowercase hexadecimal digits)")
        folder = self.storage.local_folder(digest)
        if verify:
            try:
                found = content_hash(folder)
            except ModelStoreError:
                found = None
            if found != digest:
                raise ModelStoreError(
                    f"artifact {digest} was changed after it was stored (its files hash to {found}); it is not "
                    "loaded: upload the model again"
                )
        return folder
