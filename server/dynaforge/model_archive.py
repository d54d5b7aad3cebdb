"""Checking a model builder's archive of a Hugging Face model folder, and unpacking it into a folder.

What an archive (``.tar.gz``, ``.tar`` or ``.zip``, told apart by its first bytes, not its name) may hold: the files
of a model folder that ``save_pretrained(folder, safe_serialization=True)`` and a tokenizer's ``save_pretrained``
write, and nothing that runs code when it is loaded:

* ``config.json`` (required: a JSON object with a ``model_type`` and no ``auto_map``, at any depth, which would
  name code to import) and ``generation_config.json``;
* tokenizer files (``tokenizer.json``, ``tokenizer_config.json`` without ``auto_map``, ``vocab.txt``, ``merges.txt``,
  ``spiece.model``...);
* weights as ``*.safetensors`` (at least one; each header is checked: its length, its JSON, every tensor's dtype,
  shape and offsets, and that the tensors fill the file) with ``model.safetensors.index.json`` for shards;
* a model card (``README.md``) and a licence.

Refused, each with its own rule: pickled weights (``*.bin``, ``*.pt``, ``*.pkl``...: ``pickle``), code (``*.py``...:
``code``), any other file (``file_type``), links and devices (``link``), absolute paths, ``..`` and folders nested
in folders (``path``), two files of one name (``duplicate``), more files or bytes than the limits (``max_items``,
``max_bytes``), an archive that cannot be read (``archive``).

The files may sit at the top of the archive or in one folder (``tar czf model.tar.gz my-model/``); they are
unpacked flat. Sizes are counted as the bytes come out of the decompressor, never taken from headers, so an archive
that unpacks to more than it declares (a zip bomb) stops at the limit. Nothing here imports torch or transformers.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import stat
import struct
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, BinaryIO, cast

from dynaforge.errors import InvalidInput
from dynaforge.files import file_error

if TYPE_CHECKING:
    from dynaforge.settings import Settings

MIB = 1024 * 1024

CONFIG = "config.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
SHARD_INDEX = "model.safetensors.index.json"
#: The files of a model folder, by exact name (besides ``*.safetensors``).
ALLOWED_NAMES = frozenset(
    {
        CONFIG,
        "generation_config.json",
        "tokenizer.json",
        TOKENIZER_CONFIG,
        "special_tokens_map.json",
        "added_tokens.json",
        "vocab.txt",
        "vocab.json",
        "merges.txt",
        "spiece.model",
        "sentencepiece.bpe.model",
        "tokenizer.model",
        SHARD_INDEX,
        "README.md",
        "LICENSE",
        "LICENSE.txt",
        "LICENSE.md",
    }
)
WEIGHTS_SUFFIX = ".safetensors"
#: JSON files read here (a remote-code check, a shard index): at most this large.
CHECKED_JSON = frozenset({CONFIG, "generation_config.json", TOKENIZER_CONFIG, "special_tokens_map.json",
                          "added_tokens.json", SHARD_INDEX})  # fmt: skip
JSON_MAX_BYTES = 16 * MIB
#: Pickle-based formats: loading one runs whatever code it names.
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt", ".joblib", ".npy", ".npz", ".h5", ".keras")
CODE_SUFFIXES = (".py", ".pyc", ".pyo", ".so", ".dylib", ".dll", ".sh", ".ipynb", ".js", ".exe")
#: Largest safetensors header (what the safetensors library itself accepts).
SAFETENSORS_HEADER_MAX = 100_000_000
#: Bits per element of each safetensors dtype.
DTYPE_BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32,
    "I64": 64, "U64": 64, "F64": 64, "C64": 64,
    "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}  # fmt: skip
#: A tar stream holds headers (512 bytes, more for long names) and padding besides the files' bytes.
TAR_ROOM_PER_ENTRY = 4096
_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")
_FOLDER_NAME = re.compile(r"[^\x00-\x1f\x7f/\\]{1,128}")
_CHUNK = MIB
_SAVE = "save the model with save_pretrained(folder, safe_serialization=True) and archive that folder"


@dataclass(frozen=True)
class ArchiveLimits:
    """How large an upload may be: the archive and everything it unpacks to (``max_bytes``), each file
    (``max_file_bytes``), and how many files it holds (``max_files``)."""

    max_bytes: int
    max_file_bytes: int
    max_files: int

    @classmethod
    def from_settings(cls, settings: Settings) -> ArchiveLimits:
        return cls(
            max_bytes=settings.model_upload_max_mb * MIB,
            max_file_bytes=settings.model_upload_max_file_mb * MIB,
            max_files=settings.model_upload_max_files,
        )


def _mib(size: int) -> str:
    return f"{size / MIB:g} MiB"


def too_large(what: str, limit: int, hint: str) -> InvalidInput:
    return file_error("max_bytes", f"{what} is larger than {_mib(limit)}; {hint}")


class _Counted:
    """A read-only stream that refuses to give more than ``limit`` bytes in all: what a decompressor hands out is
    counted as it comes, whatever the archive's headers say."""

    def __init__(self, raw: IO[bytes] | gzip.GzipFile, limit: int, what: str):
        self.raw, self.limit, self.what, self.seen = raw, limit, what, 0

    def read(self, size: int = -1) -> bytes:
        room = self.limit - self.seen + 1
        data = self.raw.read(room if size is None or size < 0 else min(size, room))
        self.seen += len(data)
        if self.seen > self.limit:
            raise too_large(self.what, self.limit, "upload a smaller model or ask the operator to raise the limit")
        return data

    def readable(self) -> bool:
        return True


def unpack_archive(stream: BinaryIO, folder: Path, limits: ArchiveLimits) -> list[str]:
    """Check the archive in ``stream`` and unpack its files into the empty ``folder``; returns their names, sorted.

    Raises :class:`InvalidInput` (field ``file``, a rule of this module) at the first problem; ``folder`` then holds
    whatever was unpacked so far, for the caller to remove."""
    stream.seek(0, 2)
    size = stream.tell()
    stream.seek(0)
    if size == 0:
        raise file_error("empty", f"is empty; {_SAVE} (tar czf model.tar.gz model/)")
    if size > limits.max_bytes:
        raise too_large(
            "the archive", limits.max_bytes, "upload a smaller model or ask the operator to raise the limit"
        )
    magic = stream.read(512)
    stream.seek(0)
    unpacked = _Unpacked(folder, limits)
    try:
        if magic.startswith((b"PK\x03\x04", b"PK\x05\x06")):
            _unzip(stream, unpacked)
        elif magic.startswith(b"\x1f\x8b"):
            _untar(
                _Counted(gzip.GzipFile(fileobj=stream, mode="rb"), unpacked.tar_limit, "the unpacked archive"), unpacked
            )
        elif magic[257:262] == b"ustar":
            _untar(_Counted(stream, unpacked.tar_limit, "the archive"), unpacked)
        else:
            raise file_error(
                "archive", "is not a .tar.gz, .tar or .zip archive; pack the model folder with tar czf or zip"
            )
    except (tarfile.TarError, zipfile.BadZipFile, zlib.error, gzip.BadGzipFile, EOFError, NotImplementedError) as exc:
        raise file_error(
            "archive",
            f"cannot be read as an archive ({type(exc).__name__}: {exc}); it may be cut short or damaged: pack the "
            "model folder again and upload the whole file",
        ) from exc
    return unpacked.finish()


class _Unpacked:
    """The files unpacked so far, and the checks that span them (names, count, bytes, the one folder)."""

    def __init__(self, folder: Path, limits: ArchiveLimits):
        self.folder, self.limits = folder, limits
        self.names: dict[str, str] = {}  # lower-cased name -> name
        self.parent: str | None = None  # the one folder the files sit in, "" for the top
        self.total = 0
        self.tar_limit = limits.max_bytes + (limits.max_files + 2) * TAR_ROOM_PER_ENTRY

    def entry(self, raw_name: str) -> str | None:
        """The file name an entry unpacks to (None for the archive's own folders), or the error for a bad one."""
        shown = raw_name[:200]
        if raw_name.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", raw_name) or "\\" in raw_name:
            raise file_error("path", f"{shown!r} is an absolute path or uses backslashes; archive relative paths")
        parts = [p for p in raw_name.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise file_error("path", f"{shown!r} climbs out of the archive with '..'; archive the model folder only")
        return self._place(shown, parts) if parts else None

    def _place(self, shown: str, parts: list[str]) -> str | None:
        if "__MACOSX" in parts or parts[-1].startswith("._"):
            raise file_error(
                "file_type",
                f"{shown!r} is macOS metadata, not a model file; pack the folder with COPYFILE_DISABLE=1 tar czf, or "
                "zip -X without __MACOSX",
            )
        if len(parts) > 2:
            raise file_error(
                "path", f"{shown!r} sits in a nested folder; a model folder is flat: archive its files, or the folder"
            )
        if not all(_FOLDER_NAME.fullmatch(p) for p in parts[:-1]):
            raise file_error("path", f"{shown!r} has a folder name with control characters or more than 128")
        return parts[-1] if len(parts) == 1 else parts[0] + "/" + parts[1]

    def check_file(self, path: str) -> str:
        """The name a file entry (``name`` or ``folder/name``) is stored under, after the rules on its name."""
        parent, _, name = path.rpartition("/")
        shown = path[:200]
        lower = name.lower()
        if lower.endswith(PICKLE_SUFFIXES):
            raise file_error(
                "pickle",
                f"{shown!r} is a pickle-based file, and loading one runs the code it names; {_SAVE}, and leave the "
                ".bin/.pt/.pkl files out",
            )
        if lower.endswith(CODE_SUFFIXES):
            raise file_error(
                "code", f"{shown!r} is code; models here run without remote code: upload a model that transformers "
                "loads with its own classes (no auto_map), and leave code files out"
            )  # fmt: skip
        if not _FILE_NAME.fullmatch(name) or (name not in ALLOWED_NAMES and not name.endswith(WEIGHTS_SUFFIX)):
            raise file_error(
                "file_type",
                f"{shown!r} is not a file a model folder needs here: send config.json, tokenizer files "
                "(tokenizer.json, tokenizer_config.json, vocab.txt, merges.txt, spiece.model...), *.safetensors "
                "weights and a README.md model card",
            )
        if self.parent is None:
            self.parent = parent
        elif parent != self.parent:
            raise file_error(
                "path",
                f"{shown!r} is in another folder than the archive's other files; put the model's files at the top "
                "of the archive or in one folder",
            )
        if lower in self.names:
            raise file_error("duplicate", f"{shown!r} is in the archive twice (names are compared ignoring case)")
        if len(self.names) >= self.limits.max_files:
            raise file_error(
                "max_items", f"holds more than {self.limits.max_files} files; a model folder needs far fewer"
            )
        self.names[lower] = name
        return name

    def write(self, name: str, source: IO[bytes], declared: int | None = None) -> None:
        """Copy one file's bytes, counted as they come (``declared``, a header's size, only refuses early)."""
        limits = self.limits
        hint = "save the weights in smaller shards (save_pretrained(..., max_shard_size='500MB'))"
        if declared is not None and declared > limits.max_file_bytes:
            raise too_large(repr(name), limits.max_file_bytes, hint)
        size = 0
        with open(self.folder / name, "xb") as out:
            while chunk := source.read(_CHUNK):
                size += len(chunk)
                self.total += len(chunk)
                if size > limits.max_file_bytes:
                    raise too_large(repr(name), limits.max_file_bytes, hint)
                if self.total > limits.max_bytes:
                    raise too_large("the unpacked model", limits.max_bytes, "upload a smaller model")
                out.write(chunk)

    def finish(self) -> list[str]:
        names = sorted(self.names.values())
        if not names:
            raise file_error("empty", f"holds no files; {_SAVE}")
        check_model_folder(self.folder, names)
        return names


def _untar(stream: _Counted, unpacked: _Unpacked) -> None:
    # Stream mode ("r|"): one pass, members in order, nothing seeks back or keeps the member list.
    with tarfile.open(fileobj=cast(IO[bytes], stream), mode="r|") as archive:  # it only reads
        for member in archive:
            path = unpacked.entry(member.name)
            if member.isdir():
                continue
            if member.issym() or member.islnk():
                raise file_error("link", f"{member.name[:200]!r} is a link; archive the files themselves")
            if not member.isreg():
                raise file_error("link", f"{member.name[:200]!r} is a device, a pipe or another special file")
            if path is None:
                raise file_error("path", f"{member.name[:200]!r} is not a file name")
            name = unpacked.check_file(path)
            source = archive.extractfile(member)
            assert source is not None  # a regular file
            unpacked.write(name, source, member.size)


def _unzip(stream: BinaryIO, unpacked: _Unpacked) -> None:
    with zipfile.ZipFile(stream) as archive:
        entries = archive.infolist()
        if len(entries) > 2 * unpacked.limits.max_files + 16:
            raise file_error(
                "max_items", f"holds {len(entries)} entries; a model folder needs at most {unpacked.limits.max_files}"
            )
        for info in entries:
            path = unpacked.entry(info.filename)
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise file_error("link", f"{info.filename[:200]!r} is a link; archive the files themselves")
            if info.is_dir():
                continue
            if stat.S_IFMT(mode) and not stat.S_ISREG(mode):
                raise file_error("link", f"{info.filename[:200]!r} is a device, a pipe or another special file")
            if info.flag_bits & 0x1:
                raise file_error(
                    "archive", f"{info.filename[:200]!r} is encrypted; upload an archive without a password"
                )
            if path is None:
                raise file_error("path", f"{info.filename[:200]!r} is not a file name")
            name = unpacked.check_file(path)
            with archive.open(info) as source:
                unpacked.write(name, source)


# --------------------------------------------------------------------------- the model folder


def check_model_folder(folder: Path, names: list[str]) -> None:
    """The checks on the unpacked files together: JSON files that parse and name no code (no ``auto_map`` at any
    depth), a config with a model type, valid safetensors weights (and every shard the index names)."""
    present = set(names)
    if CONFIG not in present:
        raise file_error("required", f"has no config.json; {_SAVE}")
    documents = {name: _json_object(folder / name, name) for name in sorted(present & CHECKED_JSON)}
    for name, document in documents.items():
        where = _auto_map_at(document)
        if where is not None:
            raise file_error(
                "remote_code",
                f"{name} has auto_map (at {where}), which names code to import from the model folder; models here "
                "run without remote code: use one of transformers' own architectures and remove auto_map",
            )
    if not isinstance(documents[CONFIG].get("model_type"), str):
        raise file_error("required", f"config.json has no model_type; {_SAVE}")
    weights = sorted(n for n in present if n.endswith(WEIGHTS_SUFFIX))
    if not weights:
        raise file_error("required", f"has no *.safetensors weights; {_SAVE}")
    for name in weights:
        check_safetensors(folder / name, name)
    if SHARD_INDEX in documents:
        weight_map = documents[SHARD_INDEX].get("weight_map")
        shards = set(weight_map.values()) if isinstance(weight_map, dict) else None
        if shards is None or not all(isinstance(s, str) for s in shards):
            raise file_error("json", f"{SHARD_INDEX} has no weight_map of tensor names to shard files")
        missing = sorted(shards - present)
        if missing:
            raise file_error("required", f"{SHARD_INDEX} names shards the archive lacks: {', '.join(missing[:5])}")


def _auto_map_at(document: dict[str, Any]) -> str | None:
    """Where an ``auto_map`` key sits in ``document`` (a dotted path), at any depth, or None: a composite model's
    sub-config (``text_config.auto_map``) names code to import as surely as the top level does."""
    stack: list[tuple[str, Any]] = [("", document)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            if "auto_map" in value:
                return f"{path}.auto_map" if path else "auto_map"
            stack.extend((f"{path}.{key}" if path else str(key), item) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", item) for i, item in enumerate(value))
    return None


def _json_object(path: Path, name: str) -> dict[str, Any]:
    if path.stat().st_size > JSON_MAX_BYTES:
        raise too_large(name, JSON_MAX_BYTES, "a model's JSON files are far smaller")
    try:
        value = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise file_error("json", f"{name} is not valid JSON ({exc}); save it again with save_pretrained") from exc
    if not isinstance(value, dict):
        raise file_error("json", f"{name} must hold a JSON object")
    return value


def _bad_safetensors(name: str, problem: str) -> InvalidInput:
    return file_error(
        "safetensors", f"{name} is not a valid safetensors file: {problem}; save the model again with "
        "save_pretrained(folder, safe_serialization=True)"
    )  # fmt: skip


def check_safetensors(path: Path, name: str) -> None:
    """A safetensors file as its format says: an 8-byte little-endian header length, a JSON header within the file
    (each tensor's dtype, shape and byte offsets; an optional ``__metadata__`` of strings), then the tensors, which
    fill the rest of the file exactly, each as large as its dtype and shape make it. The tensors are not read."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        start = fh.read(8)
        if len(start) < 8:
            raise _bad_safetensors(name, "it is shorter than its 8-byte header length")
        (length,) = struct.unpack("<Q", start)
        if length > SAFETENSORS_HEADER_MAX or 8 + length > size:
            raise _bad_safetensors(name, f"its header length ({length}) does not fit the file ({size} bytes)")
        raw = fh.read(length)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _bad_safetensors(name, f"its header is not JSON ({exc})") from exc
    if not isinstance(header, dict):
        raise _bad_safetensors(name, "its header is not a JSON object")
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise _bad_safetensors(name, "its __metadata__ is not an object of strings")
    spans = sorted(_tensor_span(name, key, value) for key, value in header.items())
    end = 0
    for begin, stop in spans:
        if begin != end:
            raise _bad_safetensors(name, "its tensors overlap or leave gaps")
        end = stop
    if end != size - 8 - length:
        raise _bad_safetensors(name, f"its tensors take {end} bytes, and the file holds {size - 8 - length}")


def _tensor_span(name: str, key: str, value: Any) -> tuple[int, int]:
    if not isinstance(value, dict) or value.get("dtype") not in DTYPE_BITS:
        raise _bad_safetensors(name, f"tensor {key[:100]!r} has no known dtype")
    shape, offsets = value.get("shape"), value.get("data_offsets")
    if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
        raise _bad_safetensors(name, f"tensor {key[:100]!r} has no shape of whole numbers")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(type(o) is int for o in offsets)
        or not 0 <= offsets[0] <= offsets[1]
    ):
        raise _bad_safetensors(name, f"tensor {key[:100]!r} has no data_offsets [begin, end]")
    bits = math.prod(shape) * DTYPE_BITS[value["dtype"]]
    if bits % 8 or bits // 8 != offsets[1] - offsets[0]:
        raise _bad_safetensors(name, f"tensor {key[:100]!r} takes other bytes than its dtype and shape need")
    return offsets[0], offsets[1]
