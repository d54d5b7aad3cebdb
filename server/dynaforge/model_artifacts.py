"""Uploaded model artifacts, by content hash, in the model store.

A model builder's upload (``uploadModel``: an archive of a Hugging Face model folder, checked by
:mod:`dynaforge.model_archive`) is unpacked into a staging folder, hashed and stored under its hash; models point at
it with the ``transformers`` backend's ``{"artifact": "<sha256>"}``, and evaluations load that stored copy. The hash
is the one :mod:`dynaforge.model_store` gives trained weights: SHA-256 of the sorted ``<sha256>  <name>`` manifest of
the files, so the same files uploaded twice are stored once, and a loader can tell that what it reads is what was
checked (:meth:`ArtifactStore.folder` hashes it again).

Where artifacts live is an :class:`ArtifactStorage`: :class:`FilesystemArtifactStorage` keeps them under
``DYNAFORGE_DATA_DIR/models/_artifacts/<sha256>/`` (a task code cannot start with ``_``, so no trained model of
:class:`~dynaforge.model_store.ModelStore` shares the folder); :class:`S3ArtifactStorage` keeps them in an
S3-compatible bucket (``DYNAFORGE_MODEL_STORE_URL=s3://bucket/prefix/``), each under ``<prefix><sha256>/``, and
downloads one into the same local folder, its cache, when a loader asks for it. Artifacts are written into a staging
folder and renamed into place (on S3: a ``MANIFEST`` object written last), so a reader never sees half of one, and
never change once stored. Nothing here imports torch.

Models run in processes without the server's secrets (:mod:`dynaforge.sandbox`), so without S3 credentials and, for
an artifact, without network: the trusted processes fetch an artifact into the local cache first
(:meth:`ArtifactStore.materialise`: the evaluation job before it starts the model's process, the API before it asks
the model worker to load a target model), and the model's process reads the cache as a filesystem store.

Nothing here knows which artifacts rows name: :meth:`ArtifactStore.collect` is told (by
:mod:`dynaforge.services.artifacts`) and deletes the others, with the local cache's copies. An artifact stored or
touched (:meth:`ArtifactStore.claim`, and storing the same files again) within the grace period is kept whatever
names it, so that a row about to name it finds it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from dynaforge.manifests import STAGING_PREFIX, ModelStoreError, content_hash, file_sha256, manifest
from dynaforge.model_archive import ArchiveLimits, unpack_archive
from dynaforge.settings import Settings, parse_s3_url

if TYPE_CHECKING:
    from dynaforge.inference.backends import ModelBackend

ARTIFACTS_DIR = "_artifacts"
#: The object written last under an artifact's prefix in a bucket: its manifest, whose SHA-256 is the digest.
MANIFEST = "MANIFEST"
#: The manifest's metadata key whose value changes at every store or touch (:meth:`ArtifactStorage.stamp`).
STAMP = "dynaforge-stamp"
#: A manifest larger than this is not one of ours (an upload holds at most MODEL_UPLOAD_MAX_FILES files).
MAX_MANIFEST_BYTES = 1 << 20
_MANIFEST_LINE = re.compile(r"([0-9a-f]{64})  (\S(?:.*\S)?)")
DIGEST = re.compile(r"[0-9a-f]{64}")


def is_digest(value: object) -> bool:
    """Whether ``value`` could name an artifact: 64 lowercase hexadecimal digits."""
    return isinstance(value, str) and DIGEST.fullmatch(value) is not None


@dataclass
class Collected:
    """What :meth:`ArtifactStorage.collect` deleted (or, in a dry run, would delete) and kept."""

    removed: dict[str, int] = field(default_factory=dict)  # digest: bytes freed
    young: list[str] = field(default_factory=list)  # unreferenced, but stored or touched within the grace period
    leftovers: int = 0  # staging folders and uploads cut short, removed
    cached: int = 0  # copies removed from a remote store's local cache

    @property
    def freed(self) -> int:
        return sum(self.removed.values())


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
        stored copy is kept, and touched as :meth:`touch` does)."""
        ...

    def local_folder(self, digest: str) -> Path:
        """A local folder holding the artifact's files, for a model loader (remote storage downloads it first);
        :class:`ModelStoreError` when it is not stored."""
        ...

    def touch(self, digest: str) -> bool:
        """Whether it is stored; if so, mark it stored now, so that :meth:`collect` keeps it through its grace
        period (what a caller does before a row names the digest) and its :meth:`stamp` changes."""
        ...

    def stamp(self, digest: str) -> str | None:
        """A token that changes whenever the artifact is stored or touched; None when it is not stored."""
        ...

    def size(self, digest: str) -> int | None:
        """Its files' bytes, all together; None when it is not stored."""
        ...

    def remove(self, digest: str, *, stamp: str | None = None, older_than: float | None = None) -> int | None:
        """Delete it, unless it was stored or touched since its ``stamp`` was taken, or after ``older_than`` (a
        POSIX time): that is a concurrent upload about to name it. The bytes freed, or None when nothing was."""
        ...

    def collect(self, referenced: set[str], older_than: float, *, dry_run: bool = False) -> Collected:
        """Delete every artifact whose digest is not in ``referenced`` and that was last stored or touched before
        ``older_than``, and what stopped uploads left behind (staging folders, files without a manifest) as old."""
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
        if self.touch(digest):
            return False
        try:
            os.rename(folder, target)  # the staging folder is in root: an atomic rename
        except OSError:
            if self.touch(digest):  # the same content, stored meanwhile by another upload
                return False
            raise
        self.touch(digest)  # its folder's time said when unpacking ended; stored is now
        return True

    def local_folder(self, digest: str) -> Path:
        folder = self.root / digest
        if not folder.is_dir():
            raise ModelStoreError(f"no artifact {digest} in {self.root}; upload the model again (uploadModel)")
        return folder

    def touch(self, digest: str) -> bool:
        # The folder's modification time is when it was last stored or touched: later than before, always (two
        # touches within the clock's tick still change the stamp).
        target = self.root / digest
        try:
            before = target.stat().st_mtime_ns
            now = max(time.time_ns(), before + 1000)
            os.utime(target, ns=(now, now))
        except FileNotFoundError:
            return False  # not stored, or being collected: the caller stores it again
        return target.is_dir()

    def stamp(self, digest: str) -> str | None:
        try:
            return str((self.root / digest).stat().st_mtime_ns)
        except FileNotFoundError:
            return None

    def size(self, digest: str) -> int | None:
        folder = self.root / digest
        return _folder_size(folder) if folder.is_dir() else None

    def remove(self, digest: str, *, stamp: str | None = None, older_than: float | None = None) -> int | None:
        # Renamed out of the way first: an upload that touches it from now on finds nothing and stores its own copy;
        # one that touched it before shows in the moved folder's time, and it is put back.
        target = self.root / digest
        doomed = self.root / f"{STAGING_PREFIX}removed-{digest}-{uuid.uuid4().hex[:8]}"
        try:
            os.rename(target, doomed)
        except FileNotFoundError:
            return None
        mtime_ns = doomed.stat().st_mtime_ns
        if (stamp is not None and str(mtime_ns) != stamp) or (older_than is not None and mtime_ns > older_than * 1e9):
            try:
                os.rename(doomed, target)
            except OSError:  # stored again meanwhile: that copy stays
                shutil.rmtree(doomed, ignore_errors=True)
            return None
        freed = _folder_size(doomed)
        shutil.rmtree(doomed, ignore_errors=True)
        return freed

    def collect(self, referenced: set[str], older_than: float, *, dry_run: bool = False) -> Collected:
        collected = Collected()
        if not self.root.is_dir():
            return collected
        for entry in sorted(self.root.iterdir()):
            if not entry.is_dir() or entry.is_symlink():
                continue
            if is_digest(entry.name):
                if entry.name in referenced:
                    continue
                if entry.stat().st_mtime > older_than:
                    collected.young.append(entry.name)
                    continue
                freed = _folder_size(entry) if dry_run else self.remove(entry.name, older_than=older_than)
                if freed is None:
                    collected.young.append(entry.name)
                else:
                    collected.removed[entry.name] = freed
            elif entry.name.startswith(STAGING_PREFIX) and _last_change(entry) <= older_than:
                # an upload, a download or a removal that its process did not finish (it was killed)
                if not dry_run:
                    shutil.rmtree(entry, ignore_errors=True)
                collected.leftovers += 1
        return collected


def _folder_size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def _last_change(folder: Path) -> float:
    """The latest change time of ``folder`` and anything in it (a rename counts: the change time, not the
    modification time)."""
    latest = folder.stat().st_ctime
    for path in folder.rglob("*"):
        with contextlib.suppress(OSError):
            latest = max(latest, path.lstat().st_ctime)
    return latest


def parse_manifest(text: str) -> list[tuple[str, str]]:
    """``(sha256, relative path)`` of each line of a stored manifest; :class:`ModelStoreError` for anything that
    :func:`~dynaforge.model_store.manifest` does not write (a path out of the folder included)."""
    entries = []
    for line in text.splitlines():
        match = _MANIFEST_LINE.fullmatch(line)
        name = match.group(2) if match else ""
        if not name or name == MANIFEST or "\\" in name or any(part in ("", ".", "..") for part in name.split("/")):
            raise ModelStoreError(f"the artifact's manifest has a line that is not '<sha256>  <file name>': {line!r}")
        entries.append((line[:64], name))
    names = [name for _, name in entries]
    if not entries or names != sorted(set(names)):
        raise ModelStoreError("the artifact's manifest lists no files, or not sorted and unique")
    return entries


class S3ArtifactStorage:
    """Artifacts in an S3-compatible bucket: ``<prefix><digest>/<file name>``, then ``<prefix><digest>/MANIFEST``
    (the sorted ``<sha256>  <name>`` lines, whose SHA-256 is the digest) written last, so an artifact without its
    manifest (an upload cut short) is not stored. A loader reads a local copy under ``cache_root``
    (``DATA_DIR/models/_artifacts``, the filesystem store's layout): downloaded into a staging folder, each file
    checked against the manifest, then renamed into place. Credentials: boto3's usual chain (``AWS_ACCESS_KEY_ID``
    and ``AWS_SECRET_ACCESS_KEY``, a profile, an instance role); the client is made at first use, so a process that
    only reads the cache needs none."""

    def __init__(
        self,
        bucket: str,
        prefix: str,
        cache_root: Path | str,
        *,
        endpoint_url: str | None = None,
        client: Any = None,
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix
        self.endpoint_url = endpoint_url
        self.cache = FilesystemArtifactStorage(cache_root)
        self._client = client
        self._lock = threading.Lock()
        self._fetching: dict[str, threading.Lock] = {}

    def __repr__(self) -> str:
        return f"S3ArtifactStorage('s3://{self.bucket}/{self.prefix}', cache={str(self.cache.root)!r})"

    @property
    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                try:
                    import boto3
                    from botocore.config import Config
                except ImportError as exc:
                    raise ModelStoreError(
                        "DYNAFORGE_MODEL_STORE_URL names an S3 bucket, but boto3 is not installed: install the "
                        "server with its s3 extra (pip install 'dynaforge[s3]')"
                    ) from exc
                self._client = boto3.session.Session().client(
                    "s3", endpoint_url=self.endpoint_url, config=Config(retries={"mode": "standard"})
                )
            return self._client

    def _key(self, digest: str, name: str) -> str:
        return f"{self.prefix}{digest}/{name}"

    def _where(self, digest: str) -> str:
        return f"s3://{self.bucket}/{self._key(digest, '')}"

    def exists(self, digest: str) -> bool:
        if self.cache.exists(digest):  # only complete artifacts are ever cached
            return True
        from botocore.exceptions import ClientError

        try:
            self.client.head_object(Bucket=self.bucket, Key=self._key(digest, MANIFEST))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise ModelStoreError(f"could not look up {self._where(digest)}: {exc}") from exc
        return True

    def staging(self) -> AbstractContextManager[Path]:
        return self.cache.staging()  # in the cache's folder, so that put can keep the uploaded copy

    def put(self, digest: str, folder: Path) -> bool:
        if self.touch(digest):  # the bucket's copy, not the cache, says whether it is stored
            self._keep(digest, folder)
            return False
        text = manifest(folder)
        if hashlib.sha256(text.encode("utf-8")).hexdigest() != digest:
            raise ModelStoreError(f"the files in {folder} do not hash to {digest}; nothing was stored")
        for _, name in parse_manifest(text):
            self.client.upload_file(str(folder / name), self.bucket, self._key(digest, name))
        # Last: from now on the artifact exists, whole.
        self.client.put_object(
            Bucket=self.bucket,
            Key=self._key(digest, MANIFEST),
            Body=text.encode("utf-8"),
            ContentType="text/plain",
            Metadata={STAMP: uuid.uuid4().hex},
        )
        self._keep(digest, folder)
        return True

    def touch(self, digest: str) -> bool:
        # The manifest copied onto itself with a new stamp: a new LastModified, or NoSuchKey when it is not stored.
        from botocore.exceptions import ClientError

        key = self._key(digest, MANIFEST)
        try:
            self.client.copy_object(
                Bucket=self.bucket,
                Key=key,
                CopySource={"Bucket": self.bucket, "Key": key},
                MetadataDirective="REPLACE",
                Metadata={STAMP: uuid.uuid4().hex},
                ContentType="text/plain",
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise ModelStoreError(f"could not look up {self._where(digest)}: {exc}") from exc
        return True

    def _head(self, digest: str) -> dict[str, Any] | None:
        from botocore.exceptions import ClientError

        try:
            return dict(self.client.head_object(Bucket=self.bucket, Key=self._key(digest, MANIFEST)))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise ModelStoreError(f"could not look up {self._where(digest)}: {exc}") from exc

    def stamp(self, digest: str) -> str | None:
        head = self._head(digest)
        return None if head is None else _stamp_of(head)

    def _objects(self, prefix: str) -> Iterator[dict[str, Any]]:
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            yield from page.get("Contents", [])

    def size(self, digest: str) -> int | None:
        cached = self.cache.size(digest)  # the same files, without asking the bucket
        if cached is not None:
            return cached
        if self._head(digest) is None:
            return None
        return sum(o["Size"] for o in self._objects(self._key(digest, "")) if o["Key"] != self._key(digest, MANIFEST))

    def remove(self, digest: str, *, stamp: str | None = None, older_than: float | None = None) -> int | None:
        # A bucket has no rename to move it aside first: a touch between this look and the manifest's deletion (the
        # next request) is lost.
        head = self._head(digest)
        if head is None:
            return None
        if (stamp is not None and _stamp_of(head) != stamp) or (
            older_than is not None and head["LastModified"].timestamp() > older_than
        ):
            return None
        # The manifest first: from then on the artifact is not stored, and an upload of it stores it whole again.
        self.client.delete_object(Bucket=self.bucket, Key=self._key(digest, MANIFEST))
        freed = self._delete_files(self._key(digest, ""))
        self.cache.remove(digest)
        return freed

    def _delete_files(self, prefix: str) -> int:
        objects = list(self._objects(prefix))
        for start in range(0, len(objects), 1000):  # DeleteObjects takes 1000 keys at a time
            batch = [{"Key": o["Key"]} for o in objects[start : start + 1000]]
            self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True})
        return sum(o["Size"] for o in objects)

    def collect(self, referenced: set[str], older_than: float, *, dry_run: bool = False) -> Collected:
        collected = Collected()
        # Every object under the prefix, by artifact: its bytes, its latest change, whether its manifest is there.
        found: dict[str, tuple[int, float, bool]] = {}
        for o in self._objects(self.prefix):
            digest, _, name = o["Key"][len(self.prefix) :].partition("/")
            if not is_digest(digest) or not name:
                continue  # not one of ours
            size, latest, whole = found.get(digest, (0, 0.0, False))
            found[digest] = (size + o["Size"], max(latest, o["LastModified"].timestamp()), whole or name == MANIFEST)
        for digest, (size, latest, whole) in sorted(found.items()):
            if digest in referenced:
                continue
            if latest > older_than:
                collected.young.append(digest)
            elif not whole:  # an upload cut short: its files without a manifest
                if not dry_run:
                    self._delete_files(self._key(digest, ""))
                collected.leftovers += 1
            else:
                freed = size if dry_run else self.remove(digest, older_than=older_than)
                if freed is None:
                    collected.young.append(digest)
                else:
                    collected.removed[digest] = freed
        cached = self.cache.collect(referenced, older_than, dry_run=dry_run)
        collected.cached = len(cached.removed)
        collected.leftovers += cached.leftovers
        return collected

    def _keep(self, digest: str, folder: Path) -> None:
        """The staging folder as the cached copy (this process uploaded it, so the files are the digest's)."""
        with contextlib.suppress(OSError):  # only a cache: the next loader downloads it
            self.cache.put(digest, folder)

    def _manifest(self, digest: str) -> list[tuple[str, str]]:
        from botocore.exceptions import ClientError

        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self._key(digest, MANIFEST))
            data = response["Body"].read(MAX_MANIFEST_BYTES + 1)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                raise ModelStoreError(
                    f"no artifact {digest} in {self._where(digest)}; upload the model again (uploadModel)"
                ) from None
            raise ModelStoreError(f"could not read the manifest of {self._where(digest)}: {exc}") from exc
        if len(data) > MAX_MANIFEST_BYTES or hashlib.sha256(data).hexdigest() != digest:
            raise ModelStoreError(
                f"the manifest of {self._where(digest)} does not hash to its digest; the bucket's copy was changed, "
                "and it is not used: upload the model again"
            )
        return parse_manifest(data.decode("utf-8"))

    def local_folder(self, digest: str) -> Path:
        if self.cache.exists(digest):
            return self.cache.local_folder(digest)
        with self._lock:
            fetching = self._fetching.setdefault(digest, threading.Lock())
        with fetching:  # one download per artifact at a time in this process; others wait for it
            if not self.cache.exists(digest):
                self._download(digest)
        return self.cache.local_folder(digest)

    def _download(self, digest: str) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        entries = self._manifest(digest)
        with self.cache.staging() as folder:
            for expected, name in entries:
                target = folder / name
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    self.client.download_file(self.bucket, self._key(digest, name), str(target))
                except (BotoCoreError, ClientError) as exc:
                    raise ModelStoreError(f"could not download {name} of {self._where(digest)}: {exc}") from exc
                found = file_sha256(target)
                if found != expected:
                    raise ModelStoreError(
                        f"{name} of {self._where(digest)} hashes to {found}, not to {expected} as its manifest "
                        "says; the bucket's copy was changed, and it is not used: upload the model again"
                    )
            self.cache.put(digest, folder)


def _stamp_of(head: dict[str, Any]) -> str:
    """A manifest's stamp from its HeadObject answer (its ETag and time for a manifest stored without one)."""
    return str(head.get("Metadata", {}).get(STAMP) or f"{head.get('ETag')}@{head['LastModified'].timestamp()}")


@functools.lru_cache(maxsize=16)
def _s3_storage(bucket: str, prefix: str, cache_root: Path, endpoint_url: str | None) -> S3ArtifactStorage:
    """One storage (one boto3 client, made at first use) per bucket, prefix, cache and endpoint in a process."""
    return S3ArtifactStorage(bucket, prefix, cache_root, endpoint_url=endpoint_url)


_JUST_STORED: ContextVar[frozenset[str]] = ContextVar("just_stored", default=frozenset())


@contextmanager
def just_stored(digest: str) -> Iterator[None]:
    """Within the block (this task, and the threads it starts), :meth:`ArtifactStore.claim` of ``digest`` only
    checks that it is stored: what an upload wraps around the submission that names the artifact it has just stored
    (fresh for the grace period), so that its :attr:`StoredArtifact.stamp` changes only when another upload touches
    it, and a refused submission deletes it only then."""
    token = _JUST_STORED.set(_JUST_STORED.get() | {digest})
    try:
        yield
    finally:
        _JUST_STORED.reset(token)


@dataclass(frozen=True)
class StoredArtifact:
    """An uploaded model folder in the store."""

    digest: str
    files: list[str]
    size: int  # bytes, all files together
    created: bool  # False: the same files were stored already, and that copy is used
    stamp: str | None = None  # created: its stamp as stored (ArtifactStorage.stamp), to delete only that copy


@dataclass
class StagedArtifact:
    """A checked, unpacked archive in a staging folder, not stored yet (:meth:`ArtifactStore.stage_archive`)."""

    digest: str
    files: list[str]
    size: int  # bytes, all files together
    folder: Path
    _cleanup: ExitStack

    def discard(self) -> None:
        """Remove the staging folder (what :meth:`ArtifactStore.commit` did not store goes with it). Blocking."""
        self._cleanup.close()


class ArtifactStore:
    """Uploaded model artifacts: checked archives in, content-addressed folders out."""

    def __init__(self, storage: ArtifactStorage) -> None:
        self.storage = storage

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> ArtifactStore:
        """The configured store: the bucket of ``DYNAFORGE_MODEL_STORE_URL`` (``DYNAFORGE_MODEL_STORE_ENDPOINT`` for
        a service other than AWS) with its cache in the data directory, else the data directory itself
        (``DYNAFORGE_DATA_DIR``, default ``./dynaforge-data``). A model's process, which gets neither the URL nor
        credentials, reads what was fetched into the cache."""
        settings = settings or Settings()
        root = (settings.data_dir / "models" / ARTIFACTS_DIR).absolute()
        if settings.model_store_url:
            bucket, prefix = parse_s3_url(settings.model_store_url)
            return cls(_s3_storage(bucket, prefix, root, settings.model_store_endpoint))
        return cls(FilesystemArtifactStorage(root))

    def __repr__(self) -> str:
        return f"ArtifactStore({self.storage!r})"

    def add_archive(self, stream: BinaryIO, limits: ArchiveLimits) -> StoredArtifact:
        """Check and unpack the archive in ``stream`` (see :func:`~dynaforge.model_archive.unpack_archive`, which
        raises :class:`~dynaforge.errors.InvalidInput` at its first problem) and store its files. Blocking: run it
        off the event loop."""
        return self.commit(self.stage_archive(stream, limits))

    def stage_archive(self, stream: BinaryIO, limits: ArchiveLimits) -> StagedArtifact:
        """Check and unpack the archive in ``stream`` into a staging folder, not stored yet: the caller decides,
        knowing its digest and size, to :meth:`commit` it or :meth:`StagedArtifact.discard` it (either removes the
        staging folder). InvalidInput as :meth:`add_archive`, with nothing left behind. Blocking."""
        cleanup = ExitStack()
        folder = cleanup.enter_context(self.storage.staging())
        try:
            files = unpack_archive(stream, folder, limits)
            digest = content_hash(folder)
            size = sum((folder / name).stat().st_size for name in files)
        except BaseException:
            cleanup.close()
            raise
        return StagedArtifact(digest, files, size, folder, cleanup)

    def commit(self, staged: StagedArtifact) -> StoredArtifact:
        """Store a staged archive's files (the staging folder is gone afterwards, stored or not). Blocking."""
        try:
            created = self.storage.put(staged.digest, staged.folder)
        finally:
            staged.discard()
        stamp = self.storage.stamp(staged.digest) if created else None
        return StoredArtifact(staged.digest, staged.files, staged.size, created, stamp)

    def add_folder(self, folder: Path) -> StoredArtifact:
        """Store a folder a trusted process wrote (a training job's weights, a package's shipped weights) as it is,
        by the digest of its files. Blocking: run it off the event loop."""
        import shutil

        folder = Path(folder)
        with self.storage.staging() as staged:
            shutil.copytree(folder, staged, dirs_exist_ok=True)
            digest = content_hash(staged)
            files = sorted(p.relative_to(staged).as_posix() for p in staged.rglob("*") if p.is_file())
            size = sum((staged / name).stat().st_size for name in files)
            created = self.storage.put(digest, staged)
        return StoredArtifact(digest, files, size, created)

    def exists(self, digest: object) -> bool:
        return is_digest(digest) and self.storage.exists(str(digest))

    def claim(self, digest: object) -> bool:
        """Whether it is stored, touched if so: collection keeps it through its grace period, long enough for the
        row the caller is about to write to name it. Inside :func:`just_stored` of it: only whether it is stored.
        Blocking."""
        if not is_digest(digest):
            return False
        if digest in _JUST_STORED.get():
            return self.storage.stamp(str(digest)) is not None
        return self.storage.touch(str(digest))

    def collect(self, referenced: set[str], older_than: float, *, dry_run: bool = False) -> Collected:
        """Delete the artifacts no digest in ``referenced`` names that were last stored or touched before
        ``older_than`` (a POSIX time; take it before reading ``referenced``, so that a row written meanwhile names
        an artifact touched after it), and old leftovers of stopped uploads; ``dry_run`` deletes nothing and says
        what would go. Blocking."""
        return self.storage.collect(referenced, older_than, dry_run=dry_run)

    def materialise(self, backend: ModelBackend | None, config: dict[str, Any] | None) -> list[Path]:
        """The local folders of the artifacts a model's configuration loads, fetched first where the store is remote:
        what a trusted process calls before a confined one (no credentials, no network) loads the model. Blocking:
        run it off the event loop. :class:`ModelStoreError` when one is not stored or cannot be fetched."""
        if backend is None or not isinstance(config, dict):
            return []
        folders = []
        for digest in backend.artifacts(config):
            if not is_digest(digest):
                raise ModelStoreError(f"{digest!r} is not an artifact's digest (64 lowercase hexadecimal digits)")
            folders.append(self.storage.local_folder(digest))
        return folders

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
