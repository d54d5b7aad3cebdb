"""Archives of model folders for the upload tests (test_model_upload.py, the authorisation matrix): a minimal model
folder written by hand (no torch), tar and zip builders that can add what a hostile archive holds."""

from __future__ import annotations

import io
import json
import struct
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path


def safetensors_bytes(header: dict | None = None, data: bytes | None = None) -> bytes:
    """A safetensors file: one F32 tensor of two values unless ``header`` (and ``data``) say otherwise."""
    if header is None:
        header = {"weight": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}
        data = struct.pack("<2f", 0.5, -0.5)
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + (data or b"")


def minimal_files() -> dict[str, bytes]:
    """The smallest folder the archive check accepts (it is not a loadable model: the weights are a toy)."""
    return {
        "config.json": json.dumps({"model_type": "bert", "architectures": ["BertForSequenceClassification"]}).encode(),
        "vocab.txt": b"[PAD]\n[UNK]\n[CLS]\n[SEP]\ngood\nbad\n",
        "model.safetensors": safetensors_bytes(),
        "README.md": b"# A toy model\n",
    }


def folder_files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(Path(folder).iterdir()) if p.is_file()}


def tar_archive(
    files: dict[str, bytes] | list[tuple[str, bytes]],
    *,
    folder: str | None = "model",
    compress: bool = True,
    extra: Callable[[tarfile.TarFile], None] | None = None,
) -> bytes:
    """A .tar.gz (or .tar) of ``files``, in ``folder`` (None: at the top); ``extra`` adds entries of its own."""
    buffer = io.BytesIO()
    items = files.items() if isinstance(files, dict) else files
    with tarfile.open(fileobj=buffer, mode="w:gz" if compress else "w", format=tarfile.PAX_FORMAT) as tar:
        if folder:
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for name, content in items:
            info = tarfile.TarInfo(f"{folder}/{name}" if folder else name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
        if extra is not None:
            extra(tar)
    return buffer.getvalue()


def zip_archive(
    files: dict[str, bytes] | list[tuple[str, bytes]],
    *,
    folder: str | None = None,
    extra: Callable[[zipfile.ZipFile], None] | None = None,
) -> bytes:
    buffer = io.BytesIO()
    items = files.items() if isinstance(files, dict) else files
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in items:
            archive.writestr(f"{folder}/{name}" if folder else name, content)
        if extra is not None:
            extra(archive)
    return buffer.getvalue()


def special_entry(name: str, kind: bytes, linkname: str = "") -> Callable[[tarfile.TarFile], None]:
    """An ``extra`` that adds a tar entry of another type (a symlink, a hard link, a device, a pipe)."""

    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.type, info.linkname = kind, linkname
        tar.addfile(info)

    return add


MINIMAL_ARCHIVE = tar_archive(minimal_files())
