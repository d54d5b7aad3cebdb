"""The model store: trained weights on the filesystem, by content hash, under the data directory.

Trained weights never go into an installed package's folder: a package's own weights are read-only defaults, and
what ``dynaforge train`` produces lands here. The layout, under ``DYNAFORGE_DATA_DIR/models`` (``./dynaforge-data``
by default)::

    models/
      <task>/<model>/                 a task code and a model name, e.g. formality/keywords/
        <version>/                    one trained artifact (head.safetensors, metadata.json, ...), never overwritten
        current.json                  {"format": "dynaforge-model-pointer/1", "version": "<version>"}

A version is the SHA-256 of the artifact's manifest: one line ``<sha256 of the file>  <relative path>`` per file,
sorted by path (what ``sha256sum`` prints). Metadata is part of the artifact (a head's decision threshold may live
there), so two trainings that differ only in it are two versions; two that produce the same files are one.

Versions are written into a staging folder inside the store and renamed into place, so a reader never sees half
of one; the pointer is replaced atomically. A model loader asks :func:`resolve_weights` for the folder to read: the
store's current version when there is one, else the weights the package ships. Nothing here imports torch.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from dynaforge.manifests import STAGING_PREFIX as STAGING_PREFIX
from dynaforge.manifests import ModelStoreError as ModelStoreError
from dynaforge.manifests import content_hash as content_hash
from dynaforge.manifests import file_sha256 as file_sha256
from dynaforge.manifests import manifest as manifest
from dynaforge.model_artifacts import ArtifactStore
from dynaforge.settings import Settings

log = logging.getLogger("dynaforge.models")

POINTER_FILE = "current.json"
POINTER_FORMAT = "dynaforge-model-pointer/1"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_VERSION = re.compile(r"[0-9a-f]{64}")


def write_json_atomically(path: Path, data: Any) -> None:
    """Write ``data`` as indented JSON to ``path`` through a temporary file in the same folder, so that a reader
    sees the old file or the new one, never half of one (and concurrent writers never share a temporary file)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(data, indent=2) + "\n")
        os.chmod(tmp, 0o644)  # mkstemp creates it owner-only
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@dataclass(frozen=True)
class ModelVersion:
    """One stored version of a task's model."""

    task: str
    model: str
    version: str
    path: Path


class ModelStore:
    """Trained model artifacts under ``root`` (``DYNAFORGE_DATA_DIR/models``), one folder per content hash."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> ModelStore:
        """The store of the configured data directory (``DYNAFORGE_DATA_DIR``, default ``./dynaforge-data``)."""
        return cls((settings or Settings()).data_dir / "models")

    def __repr__(self) -> str:
        return f"ModelStore({str(self.root)!r})"

    def model_dir(self, task: str, model: str) -> Path:
        """The folder of one model's versions (not created)."""
        for what, name in (("task", task), ("model", model)):
            if not isinstance(name, str) or not _NAME.fullmatch(name):
                raise ModelStoreError(
                    f"{what} name {name!r} cannot name a folder in the model store: use letters, digits, '.', '_' "
                    "and '-', starting with a letter or digit"
                )
        return self.root / task / model

    @contextmanager
    def staging(self, task: str, model: str) -> Iterator[Path]:
        """An empty folder inside the store to write a new artifact into; pass it to :meth:`add` before the block
        ends. Whatever is left of it when the block ends (a failed training) is removed."""
        parent = self.model_dir(task, model)
        parent.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=parent))
        os.chmod(folder, 0o755)  # mkdtemp creates it owner-only; a version folder is readable like any other
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def add(self, task: str, model: str, folder: Path, *, make_current: bool = True) -> ModelVersion:
        """Store the artifact in ``folder`` as a new version (moved when it is a :meth:`staging` folder of this
        model, else copied) and, by default, make it current. A version already stored is kept as it is."""
        folder = Path(folder)
        parent = self.model_dir(task, model)
        version = content_hash(folder)
        target = parent / version
        if not target.exists():
            if folder.parent.resolve() == parent.resolve() and folder.name.startswith(STAGING_PREFIX):
                self._move_into_place(folder, target)
            else:
                with self.staging(task, model) as staged:
                    shutil.copytree(folder, staged, dirs_exist_ok=True)
                    self._move_into_place(staged, target)
        stored = ModelVersion(task, model, version, target)
        if make_current:
            self.set_current(task, model, version)
        return stored

    @staticmethod
    def _move_into_place(folder: Path, target: Path) -> None:
        try:
            os.rename(folder, target)
        except OSError:
            if not target.is_dir():  # else the same version was stored meanwhile: keep that one
                raise

    def get(self, task: str, model: str, version: str) -> ModelVersion:
        """A stored version; :class:`ModelStoreError` when there is none."""
        if not isinstance(version, str) or not _VERSION.fullmatch(version):
            raise ModelStoreError(f"{version!r} is not a model version (64 lowercase hex digits)")
        path = self.model_dir(task, model) / version
        if not path.is_dir():
            raise ModelStoreError(f"version {version} of {task}/{model} is not in {self.root}")
        return ModelVersion(task, model, version, path)

    def versions(self, task: str, model: str) -> list[ModelVersion]:
        """Every stored version of the model, oldest first (by the time its folder was stored)."""
        parent = self.model_dir(task, model)
        if not parent.is_dir():
            return []
        found = [p for p in parent.iterdir() if p.is_dir() and _VERSION.fullmatch(p.name)]
        found.sort(key=lambda p: (p.stat().st_mtime_ns, p.name))
        return [ModelVersion(task, model, p.name, p) for p in found]

    def set_current(self, task: str, model: str, version: str) -> ModelVersion:
        """Make a stored version the one model loaders use (the pointer file is replaced atomically)."""
        stored = self.get(task, model, version)
        write_json_atomically(stored.path.parent / POINTER_FILE, {"format": POINTER_FORMAT, "version": version})
        return stored

    def current(self, task: str, model: str) -> ModelVersion | None:
        """The version model loaders use, or None when nothing was trained into the store for this model."""
        pointer = self.model_dir(task, model) / POINTER_FILE
        try:
            data = json.loads(pointer.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise ModelStoreError(f"{pointer} is unreadable ({exc}); delete it to use the shipped weights") from exc
        version = data.get("version") if isinstance(data, dict) else None
        try:
            return self.get(task, model, version if isinstance(version, str) else repr(version))
        except ModelStoreError as exc:
            raise ModelStoreError(
                f"{pointer} names a version that cannot be used ({exc}); point it at a stored version "
                "(ModelStore.set_current) or delete it to use the shipped weights"
            ) from exc


@dataclass(frozen=True)
class ModelWeights:
    """The folder a model loader reads, and where it comes from: ``given`` (the caller named it), ``trained`` (the
    store's current version), ``artifact`` (a stored artifact by digest) or ``shipped`` (the package's own read-only
    weights)."""

    path: Path
    source: Literal["given", "artifact", "trained", "shipped"]
    version: str | None = None

    def describe(self) -> dict[str, Any]:
        """What a model records in its metadata (``metadata["weights"]``), so a caller can tell what it runs."""
        return {"source": self.source, "path": str(self.path), "version": self.version}


def resolve_weights(
    task: str,
    model: str,
    shipped: Path,
    *,
    weights_dir: Path | str | None = None,
    weights_artifact: str | None = None,
    store: ModelStore | None = None,
) -> ModelWeights:
    """The weights a model loader should read, logged: ``weights_dir`` when given, else the artifact
    ``weights_artifact`` of the model store (a training job's or a round's pinned weights, by digest; its files are
    hashed again before use), else the model store's current version of ``task``/``model``, else ``shipped`` (the
    weights inside the plugin package)."""
    if weights_dir is not None:
        weights = ModelWeights(Path(weights_dir), "given")
    elif weights_artifact is not None:
        weights = ModelWeights(ArtifactStore.from_settings().folder(weights_artifact), "artifact", weights_artifact)
    else:
        trained = (store or ModelStore.from_settings()).current(task, model)
        if trained is not None:
            weights = ModelWeights(trained.path, "trained", trained.version)
        else:
            weights = ModelWeights(Path(shipped), "shipped")
    version = f" (version {weights.version[:12]})" if weights.version else ""
    log.info("%s/%s: loading %s weights%s from %s", task, model, weights.source, version, weights.path)
    return weights
